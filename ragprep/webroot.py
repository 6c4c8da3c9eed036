"""A read-only HTTP view of a root's reports (``ragprep serve``): review reports, quality pages, exports.

Only GET and HEAD; only files under the served folders of the root; no dot-files or dot-folders
(``.staging-*``, the build lock); a path that leaves the root, directly or through a symlink, is a 404.
Artifact links point here when ``RAGPREP_PUBLIC_URL`` names this server.
"""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

SERVED_FOLDERS = ("review", "datasets", "exports", "evaluations", "refmatch")
"""Top-level folders of the root that the web root shows (Markdown/HTML reports and their files)."""


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


def servable(root: Path, url_path: str) -> Path | None:
    """The file or folder a URL path names under ``root``, or None when it is outside what is served."""
    parts = [p for p in unquote(urlsplit(url_path).path).split("/") if p]
    if not parts:
        return root
    if parts[0] not in SERVED_FOLDERS or any(p.startswith(".") or p == ".." for p in parts):
        return None
    base = root.resolve()
    target = base.joinpath(*parts)
    try:
        target.resolve(strict=True).relative_to(base)  # symlinks too: the real path must stay inside
    except (ValueError, OSError):
        return None
    return target


class _Handler(SimpleHTTPRequestHandler):
    """SimpleHTTPRequestHandler confined to :func:`servable` paths; quiet logs."""

    def __init__(self, *args, root: Path, **kwargs) -> None:
        self.root = root
        super().__init__(*args, directory=str(root), **kwargs)

    def send_head(self):  # noqa: D102 - the stdlib hook
        if servable(self.root, self.path) is None:
            self.send_error(404, "not served")
            return None
        if urlsplit(self.path).path in ("", "/"):
            return self._index()
        return super().send_head()

    def _index(self):
        items = "".join(f'<li><a href="/{name}/">{name}/</a></li>' for name in SERVED_FOLDERS if (self.root / name).is_dir())
        body = f"<!doctype html><title>ragprep {self.root}</title><h1>ragprep: {self.root}</h1><ul>{items}</ul>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        from io import BytesIO

        return BytesIO(body)

    def log_message(self, format, *args) -> None:  # noqa: A002, D102 - the stdlib hook
        pass


class WebRoot:
    """The read-only web root of ``root`` on ``host:port`` (port 0: a free one), served from a thread."""

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.root = Path(root).resolve()
        self.httpd = ThreadingHTTPServer((host, port), partial(_Handler, root=self.root))
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
