"""The warm path of ``ask``: what a process keeps loaded (ragprep/kept.py), the JSON endpoints of the report page
(ragprep/webroot.py) and the ``POST /ask`` request checks (tasks/refmatch/endpoint.py). The endpoint answering from
a real index is tested in tests/test_index.py (it needs that module's index)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

from ragprep.kept import file_stamp, forget, kept
from ragprep.webroot import MAX_BODY, WebRoot
from tasks.refmatch.endpoint import AskEndpoint, read_request


def test_kept_builds_once_per_key_and_again_when_the_key_changes():
    built = []

    def build(n):
        built.append(n)
        return object()

    first = kept("test-kind", ("a", 1), lambda: build(1))
    assert kept("test-kind", ("a", 1), lambda: build(2)) is first and built == [1]
    other = kept("test-kind", ("a", 2), lambda: build(3))
    assert other is not first and built == [1, 3]
    assert kept("test-kind", ("a", 1), lambda: build(4)) is not first and built == [1, 3, 4]  # only the latest is held
    forget("test-kind")
    kept("test-kind", ("a", 1), lambda: build(5))
    assert built == [1, 3, 4, 5]


def test_file_stamp_changes_when_a_file_is_replaced(tmp_path):
    path = tmp_path / "manifest.json"
    assert file_stamp(path) is None
    path.write_text("one")
    before = file_stamp(path)
    replacement = tmp_path / "new.json"
    replacement.write_text("two")
    replacement.replace(path)
    assert file_stamp(path) not in (None, before)


def post_json(url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict | None]:
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    conn.request("POST", path, body=body, headers=headers)
    reply = conn.getresponse()
    data = reply.read()
    conn.close()
    kind = reply.getheader("Content-Type") or ""
    return reply.status, json.loads(data) if kind.startswith("application/json") else None


JSON = {"Content-Type": "application/json"}


@pytest.fixture
def echo_web(tmp_path):
    calls = []

    def echo(payload: dict) -> tuple[int, dict]:
        calls.append(payload)
        if payload.get("boom"):
            raise RuntimeError("broken route")
        return 200, {"echo": payload}

    (tmp_path / "root" / "review").mkdir(parents=True)
    web = WebRoot(tmp_path / "root", routes={"/echo": echo}).start()
    yield web, calls
    web.stop()


def test_a_json_route_answers_posts_and_refuses_everything_else(echo_web):
    web, calls = echo_web
    assert post_json(web.url, "/echo", b'{"question": "Wie?"}', JSON) == (200, {"echo": {"question": "Wie?"}})
    assert post_json(web.url, "/echo", b'{"question": 1}', {"Content-Type": "text/plain"})[0] == 415
    assert post_json(web.url, "/echo", b"{not json", JSON) == (400, {"error": "the body is not JSON"})
    assert post_json(web.url, "/echo", b"[1, 2]", JSON) == (400, {"error": "the body must be a JSON object"})
    assert post_json(web.url, "/echo", b"{}", {**JSON, "Origin": "http://evil.example"})[0] == 403
    assert post_json(web.url, "/echo", b"{}", {**JSON, "Host": "evil.example"})[0] == 421
    assert post_json(web.url, "/echo", b'{"x": "' + b"a" * MAX_BODY + b'"}', JSON)[0] == 413
    assert post_json(web.url, "/review/x.html", b"{}", JSON)[0] == 501  # the reports stay read-only
    status, reply = post_json(web.url, "/echo", b'{"boom": true}', JSON)
    assert status == 500 and reply == {"error": "RuntimeError: broken route"}
    assert calls == [{"question": "Wie?"}, {"boom": True}]  # refused requests never reached the route
    where = urlsplit(web.url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    conn.request("GET", "/echo")
    assert conn.getresponse().status == 405
    conn.close()


@pytest.mark.parametrize(("payload", "error"), [
    ({}, "'question' must be a non-empty string"),
    ({"question": "  "}, "'question' must be a non-empty string"),
    ({"question": "x" * 2001}, "'question' is over 2000 characters"),
    ({"question": "ok", "k": 0}, "'k' must be an integer from 1 to 50"),
    ({"question": "ok", "k": True}, "'k' must be an integer from 1 to 50"),
    ({"question": "ok", "variant": "v9"}, "'variant' must be one of ['v0', 'v1']"),
])
def test_bad_ask_requests_name_the_field(payload, error):
    with pytest.raises(ValueError) as raised:
        read_request(payload)
    assert str(raised.value) == error
    assert read_request({"question": " Which vent? ", "k": 3, "variant": "v0"}) == ("Which vent?", 3, "v0")


def test_ask_without_an_index_is_503_naming_the_command(tmp_path):
    from ragprep.settings import Settings

    endpoint = AskEndpoint(Settings(root=tmp_path / "root"))
    assert "ragprep index" in endpoint.warm()
    status, reply = endpoint({"question": "Which vent does the P2 build use?"})
    assert status == 503 and "ragprep index" in reply["error"]
    assert endpoint({"question": ""})[0] == 400
