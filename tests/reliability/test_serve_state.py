"""``serve``'s state file (issue 24): a truncated, garbage or wrong-shaped ``serve.json`` means no running service
(the CLI then starts its own temporary server), never a traceback."""

from __future__ import annotations

import pytest

from flows.serve import running_service


@pytest.mark.parametrize("content", ['{"api_url": "http://127.0.0.1:', "\x00garbage", "[1, 2]", '{"api_url": 42}',
                                     '{"pid": 1}', ""])
def test_a_garbled_state_file_is_no_service(content, tmp_path, monkeypatch):
    state = tmp_path / "serve.json"
    state.write_text(content)
    monkeypatch.setenv("RAGPREP_SERVE_STATE", str(state))
    assert running_service() is None


def test_a_state_file_naming_a_dead_server_is_no_service(tmp_path, monkeypatch):
    state = tmp_path / "serve.json"
    state.write_text('{"api_url": "http://127.0.0.1:9/api", "pid": 1}')  # port 9: nothing listens
    monkeypatch.setenv("RAGPREP_SERVE_STATE", str(state))
    assert running_service() is None
