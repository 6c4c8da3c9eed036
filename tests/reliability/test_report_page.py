"""The report page serves only what it should (issue 27): real paths inside the served folders only (an in-root
symlink to ``tables/`` is refused), no dot entries in listings, everything escaped, ``Host`` checked."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

from ragprep.webroot import WebRoot


def _get(url: str, path: str, host: str | None = None) -> tuple[int, str]:
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=5)
    conn.putrequest("GET", path, skip_host=host is not None)
    if host is not None:
        conn.putheader("Host", host)
    conn.endheaders()
    response = conn.getresponse()
    body = response.read().decode("utf-8", "replace")
    conn.close()
    return response.status, body


def _root(tmp_path):
    root = tmp_path / "ro<script>alert(1)</script>ot"
    (root / "review").mkdir(parents=True)
    (root / "review" / "report.html").write_text("<p>report</p>")
    (root / "review" / ".hidden.html").write_text("hidden")
    (root / "review" / ".staging-9").mkdir()
    (root / "review" / "<img src=x onerror=alert(2)>.html").write_text("odd name")
    (root / "exports").mkdir()
    (root / "exports" / "card.md").write_text("card")
    (root / "tables").mkdir()
    (root / "tables" / "chunks.parquet").write_text("tables")
    (root / ".build.lock").write_text("pid")
    (root / "review" / "tables.parquet").symlink_to(root / "tables" / "chunks.parquet")  # in the root, not served
    (root / "review" / "lock").symlink_to(root / ".build.lock")
    (root / "review" / "card.md").symlink_to(root / "exports" / "card.md")  # in the root and served: fine
    (root / "review" / "all").symlink_to(root)
    return root


def test_in_root_symlinks_to_files_not_served_are_refused(tmp_path):
    web = WebRoot(_root(tmp_path)).start()
    try:
        assert _get(web.url, "/review/report.html")[0] == 200
        assert _get(web.url, "/review/card.md") == (200, "card")
        assert _get(web.url, "/review/tables.parquet")[0] == 404
        assert _get(web.url, "/review/lock")[0] == 404
        assert _get(web.url, "/review/all/tables/chunks.parquet")[0] == 404
        assert _get(web.url, "/review/.hidden.html")[0] == 404
    finally:
        web.stop()


def test_listings_hide_dot_entries_and_everything_is_escaped(tmp_path):
    web = WebRoot(_root(tmp_path)).start()
    try:
        status, listing = _get(web.url, "/review/")
        assert status == 200
        assert "report.html" in listing and "card.md" in listing
        assert ".hidden" not in listing and ".staging" not in listing
        assert "tables.parquet" not in listing and "lock" not in listing  # symlinks to what is not served
        assert "<img" not in listing and "&lt;img src=x onerror=alert(2)&gt;.html" in listing
        status, index = _get(web.url, "/")
        assert status == 200 and "<script>" not in index and "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    finally:
        web.stop()


def test_a_foreign_host_header_is_refused(tmp_path):
    web = WebRoot(_root(tmp_path), public_url="http://reports.internal.example:8080/").start()
    try:
        port = urlsplit(web.url).port
        assert _get(web.url, "/review/report.html", host=f"127.0.0.1:{port}")[0] == 200
        assert _get(web.url, "/review/report.html", host=f"localhost:{port}")[0] == 200
        assert _get(web.url, "/review/report.html", host="reports.internal.example:8080")[0] == 200
        assert _get(web.url, "/review/report.html", host=f"attacker.example:{port}")[0] == 421  # DNS rebinding
        assert _get(web.url, "/", host="evil.localhost")[0] == 421
        assert _get(web.url, "/review/report.html", host="")[0] == 421
    finally:
        web.stop()
