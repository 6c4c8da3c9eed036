"""What `ragprep serve` costs before and while it runs (issue 25): a refused second serve never loads Prefect, and
serve's run checks (every ``RUNS_CHECK_S``, around the clock) reuse one Prefect client instead of making one per check.
No Prefect server: a refusal needs none, and the checks talk to a stand-in API on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

REFUSED = """
import json, sys
from flows.serve import Service, ServeRefusedError, free_port
from ragprep.settings import ServeSettings

def options():
    return ServeSettings(port=free_port(), web_port=free_port())

first = Service(sys.argv[1], options())
first.claim()
try:
    Service(sys.argv[2], options()).claim()
except ServeRefusedError as exc:
    refused = str(exc)
else:
    refused = ""
print(json.dumps({"refused": refused, "prefect": sorted(m for m in sys.modules if m.split(".")[0] == "prefect")[:5]}))
"""


def test_a_second_serve_is_refused_without_loading_prefect(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAGPREP_SERVE_STATE": str(tmp_path / "serve.json")}
    proc = subprocess.run([sys.executable, "-c", REFUSED, str(tmp_path / "root-1"), str(tmp_path / "root-2")], env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "ragprep serve is already running on this machine" in result["refused"]
    assert result["prefect"] == [], "importing flows.serve and refusing a second serve loaded Prefect"


class StandInApi:
    """A loopback stand-in for the two endpoints serve's run check calls: ``GET /api/health`` and
    ``POST /api/flow_runs/filter`` (no runs in flight); it counts the filter requests."""

    def __init__(self) -> None:
        self.filters = 0
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 - the stdlib hook
                if self.path.rstrip("/") == "/api/health":
                    self._reply(True)
                else:
                    self.send_error(404)

            def do_POST(self):  # noqa: N802 - the stdlib hook
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/") == "/api/flow_runs/filter":
                    api.filters += 1
                    self._reply([])
                else:
                    self.send_error(404)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/api"


def test_run_checks_reuse_one_prefect_client_until_serve_stops(tmp_path, monkeypatch):
    import prefect.client.orchestration

    from flows.serve import Service, free_port
    from ragprep.settings import ServeSettings

    made = []
    real = prefect.client.orchestration.get_client

    def counting_get_client(*args, **kwargs):
        client = real(*args, **kwargs)
        made.append(client)
        return client

    monkeypatch.setattr(prefect.client.orchestration, "get_client", counting_get_client)
    api = StandInApi()
    try:
        service = Service(tmp_path / "root", ServeSettings(port=free_port(), web_port=free_port()), api_url=api.url)
        for _ in range(3):
            service.check_runs()
        assert api.filters == 3  # each check asked the API for the runs in flight
        assert len(made) == 1, f"{len(made)} Prefect clients for 3 run checks"
        service.stop()
        assert made[0]._closed  # serve's stop closes it
    finally:
        api.httpd.shutdown()
