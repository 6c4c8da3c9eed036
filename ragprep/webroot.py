"""A read-only HTTP view of a root's reports (``ragprep serve``): review reports, quality pages, exports.

Only GET and HEAD; only files whose real path (symlinks resolved) lies in a served folder of the root;
no dot-files or dot-folders (``.staging-*``, the build lock), neither served nor listed; a path that leaves
the served folders, directly or through a symlink (one to ``tables/`` inside the root too), is a 404.
Everything written into a page is HTML-escaped. Requests whose ``Host`` is not one of the server's names
(its bind address, ``localhost``, loopback, and the host of ``RAGPREP_PUBLIC_URL``) are refused (421):
a DNS-rebinding page in a browser cannot read the reports. Artifact links point here when
``RAGPREP_PUBLIC_URL`` names this server.

JSON endpoints (``routes``, e.g. ``POST /ask`` of ``ragprep serve``): a POST to a route's path with a JSON object
body (``Content-Type: application/json``, at most ``MAX_BODY`` bytes) is answered with the route's JSON reply; the
same Host check applies, a request whose ``Origin`` is not one of the server's names is refused (403), and no
CORS preflight is answered, so a page in a browser cannot post to an endpoint.
"""

from __future__ import annotations

import html
import io
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

SERVED_FOLDERS = ("review", "datasets", "exports", "evaluations", "refmatch")
"""Top-level folders of the root that the web root shows (Markdown/HTML reports and their files)."""
MAX_BODY = 64 * 1024
"""Bytes a JSON endpoint reads from a request body at most (longer: 413)."""

Route = Callable[[dict], tuple[int, dict]]
"""A JSON endpoint: the request's JSON object -> (HTTP status, JSON object reply)."""


def public_link(path: str | Path, root: Path, public_url: str | None) -> str | None:
    """The http:// URL of ``path`` under ``public_url`` when the web root serves it, else None."""
    if not public_url:
        return None
    try:
        rel = Path(path).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return None
    if not rel.parts or rel.parts[0] not in SERVED_FOLDERS or any(p.startswith(".") for p in rel.parts):
        return None
    return public_url.rstrip("/") + "/" + quote(rel.as_posix())


def _served_real_path(base: Path, target: Path) -> bool:
    """True when ``target``'s real path (every symlink resolved) is in a served folder of ``base``, dot-free."""
    try:
        rel = target.resolve(strict=True).relative_to(base)
    except (ValueError, OSError):
        return False
    return bool(rel.parts) and rel.parts[0] in SERVED_FOLDERS and not any(p.startswith(".") for p in rel.parts)


def servable(root: Path, url_path: str) -> Path | None:
    """The file or folder a URL path names under ``root``, or None when it is outside what is served: the
    path as asked and its real path (symlinks resolved) must both lie in a served folder, without dot parts."""
    parts = [p for p in unquote(urlsplit(url_path).path).split("/") if p]
    if not parts:
        return root
    if parts[0] not in SERVED_FOLDERS or any(p.startswith(".") or p == ".." for p in parts):
        return None
    base = root.resolve()
    target = base.joinpath(*parts)
    return target if _served_real_path(base, target) else None


def host_names(bind: str, public_url: str | None = None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` names the web root answers to: its bind address, loopback names, the public URL's host."""
    names = {bind.lower(), "localhost", "127.0.0.1", "::1", *(n.lower() for n in extra)}
    if public_url and (public := urlsplit(public_url).hostname):
        names.add(public.lower())
    return frozenset(names)


def host_allowed(header: str | None, names: frozenset[str]) -> bool:
    """True when a request's ``Host`` header (port ignored) names this server."""
    if not header:
        return False
    hostname = urlsplit(f"//{header.strip()}").hostname
    return bool(hostname) and hostname.lower() in names


class _Handler(SimpleHTTPRequestHandler):
    """SimpleHTTPRequestHandler confined to :func:`servable` paths; quiet logs."""

    def __init__(self, *args, root: Path, names: frozenset[str], routes: Mapping[str, Route] | None = None,
                 **kwargs) -> None:
        self.root = root
        self.names = names
        self.routes = routes or {}
        super().__init__(*args, directory=str(root), **kwargs)

    def _json(self, status: int, payload: dict) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _request_json(self) -> tuple[int, dict | str]:
        """(0, the body's JSON object), or (status, why) for a request an endpoint does not take."""
        origin = self.headers.get("Origin")
        if origin and not host_allowed(urlsplit(origin).netloc, self.names):
            return 403, "cross-origin request"
        if self.headers.get_content_type() != "application/json":
            return 415, "send the request as Content-Type: application/json"
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return 400, "bad Content-Length"
        if length > MAX_BODY:
            return 413, f"request body over {MAX_BODY} bytes"
        try:
            payload = json.loads(self.rfile.read(length) or b"null")
        except (UnicodeDecodeError, ValueError):
            return 400, "the body is not JSON"
        return (0, payload) if isinstance(payload, dict) else (400, "the body must be a JSON object")

    def do_POST(self) -> None:  # noqa: N802 - the stdlib hook
        """A JSON endpoint of ``routes`` (see the module doc); anything else is refused."""
        if not host_allowed(self.headers.get("Host"), self.names):
            self.send_error(421, "unknown Host")
            return
        route = self.routes.get(urlsplit(self.path).path)
        if route is None:
            self.send_error(501, "Unsupported method ('POST')")  # the reports are read-only
            return
        status, payload = self._request_json()
        if status:
            self._json(status, {"error": payload})
            return
        try:
            status, reply = route(payload)
        except Exception as exc:  # one line for the client, never a traceback on the wire
            status, reply = 500, {"error": f"{type(exc).__name__}: {exc}"}
        self._json(status, reply)

    def send_head(self):  # noqa: D102 - the stdlib hook
        if not host_allowed(self.headers.get("Host"), self.names):
            self.send_error(421, "unknown Host")
            return None
        if urlsplit(self.path).path in self.routes:
            self.send_error(405, "POST a JSON object (Content-Type: application/json)")
            return None
        if servable(self.root, self.path) is None:
            self.send_error(404, "not served")
            return None
        if urlsplit(self.path).path in ("", "/"):
            return self._index()
        return super().send_head()

    def _page(self, title: str, links: list[tuple[str, str]]):
        items = "".join(f'<li><a href="{html.escape(quote(href))}">{html.escape(text)}</a></li>' for href, text in links)
        body = (f"<!doctype html><meta charset=utf-8><title>ragprep {html.escape(title)}</title>"
                f"<h1>ragprep: {html.escape(title)}</h1><ul>{items}</ul>").encode("utf-8", "surrogateescape")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def _index(self):
        return self._page(str(self.root), [(f"/{name}/", f"{name}/") for name in SERVED_FOLDERS if (self.root / name).is_dir()])

    def list_directory(self, path):  # noqa: D102 - the stdlib hook: only servable, dot-free entries, escaped
        folder = Path(path)
        base = self.root.resolve()
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            self.send_error(404, "not served")
            return None
        links = []
        for name in names:
            entry = folder / name
            if name.startswith(".") or not _served_real_path(base, entry):
                continue
            suffix = "/" if entry.is_dir() else ""
            links.append((name + suffix, name + suffix))
        return self._page(unquote(urlsplit(self.path).path), links)

    def log_message(self, format, *args) -> None:  # noqa: A002, D102 - the stdlib hook
        pass


class WebRoot:
    """The read-only web root of ``root`` on ``host:port`` (port 0: a free one), served from a thread."""

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0, public_url: str | None = None,
                 routes: Mapping[str, Route] | None = None) -> None:
        """``routes``: JSON endpoints by path (POST only; see the module doc)."""
        self.root = Path(root).resolve()
        self.names = host_names(host, public_url)
        self.routes = dict(routes or {})
        self.httpd = ThreadingHTTPServer((host, port), partial(_Handler, root=self.root, names=self.names,
                                                               routes=self.routes))
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="ragprep-webroot", daemon=True)

    @property
    def url(self) -> str:
        """The base URL, ending in a slash."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/"

    def start(self) -> WebRoot:
        """Serve from a daemon thread; returns self."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()
