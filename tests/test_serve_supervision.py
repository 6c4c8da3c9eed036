"""`ragprep serve` as its operators run it (issue 23): one real `ragprep serve` process (its own Prefect server, the
nightly deployment, a worker), shared by the checks of this module, in order:

1. it prints progress from its first seconds, and a second serve (same state file, or same root) is refused in one line;
2. worker and flow process killed mid-run: the worker is restarted and reported, serve marks the run Crashed;
3. two overlapping nightly runs queue (never both Running, both Completed), runs are named with date and trigger and
   tagged; a run over a missing folder fails at once (no retry, no traceback) and the local webhook gets one POST;
4. SIGTERM to serve mid-run: the run ends Cancelled or Crashed, the build lock is free, no process is left; a restart
   keeps the parameter edited "in the UI" (the API call the UI makes) and redeploys nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_DOCS

pytestmark = pytest.mark.slow  # a real Prefect server, worker and flow runs (about 3 minutes in all)

RAGPREP = str(Path(sys.executable).with_name("ragprep"))
NIGHTLY = "ragprep-run/nightly-test-reports"
DECK = "crash_report_frontal_offset.pptx"


class Receiver:
    """A local webhook: records the JSON body of every POST."""

    def __init__(self) -> None:
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the stdlib hook
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received.append(json.loads(body or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"


class Serve:
    """One `ragprep serve` process; its output lines are collected as they come, with their times."""

    def __init__(self, env: dict[str, str], root: Path) -> None:
        self.env, self.root = env, root
        self.proc: subprocess.Popen | None = None
        self.lines: list[tuple[float, str]] = []
        self.started = 0.0

    def start(self) -> Serve:
        self.lines = []
        self.started = time.monotonic()
        self.proc = subprocess.Popen([RAGPREP, "serve", "--root", str(self.root)], env=self.env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        self.wait_for("Ctrl-C stops everything", 180)
        return self

    def _read(self, proc) -> None:
        for line in proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip()))

    def output(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def wait_for(self, text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [line for _, line in self.lines if text in line]
            if found:
                return found[-1]
            assert self.proc.poll() is None or any(text in line for _, line in self.lines), self.output()[-3000:]
            time.sleep(0.2)
        raise AssertionError(f"no line with {text!r} within {timeout} s:\n{self.output()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 90) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)

    def state(self) -> dict:
        return json.loads(Path(self.env["RAGPREP_SERVE_STATE"]).read_text())


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from flows.serve import free_port

    base = tmp_path_factory.mktemp("served")
    receiver = Receiver()
    config = base / "ragprep.toml"
    config.write_text(f'[serve]\nnotify_url = "{receiver.url}"\ndeployments = ["nightly-test-reports"]\n')
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(base / "prefect"), RAGPREP_SERVE_STATE=str(base / "serve.json"), RAGPREP_CONFIG=str(config),
               RAGPREP_SERVE__PORT=str(free_port()), RAGPREP_SERVE__WEB_PORT=str(free_port()), RAGPREP_OCR__ENABLED="false",
               RAGPREP_LLM__PROVIDER="heuristic", PREFECT_WORKER_QUERY_SECONDS="1", PREFECT_SERVER_ANALYTICS_ENABLED="false",
               DO_NOT_TRACK="1")
    serve = Serve(env, base / "root").start()
    serve.base, serve.receiver = base, receiver
    yield serve
    serve.stop()
    receiver.httpd.shutdown()


def _client(serve: Serve):
    from contextlib import ExitStack

    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    stack = ExitStack()
    stack.enter_context(temporary_settings(updates={PREFECT_API_URL: serve.state()["api_url"]}))
    client = stack.enter_context(get_client(sync_client=True))
    client.close_stack = stack
    return client


def _start_run(client, parameters: dict):
    deployment = client.read_deployment_by_name(NIGHTLY)
    return client.create_flow_run_from_deployment(deployment.id, parameters=parameters)


def _wait_final(client, run_id, timeout: float = 240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.read_flow_run(run_id)
        if run.state is not None and run.state.is_final():
            return run
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} not final within {timeout} s: {run.state}")


def _notification(served, before: int) -> dict:
    """The one webhook POST after the first ``before`` ones (waits for it, then a little for a wrong second one)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(served.receiver.received) <= before:
        time.sleep(0.5)
    time.sleep(3)
    assert len(served.receiver.received) == before + 1, served.receiver.received
    return served.receiver.received[-1]


def _processes_with(text: str) -> list[int]:
    """Processes whose environment holds ``text`` (every process serve starts inherits its variables)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_serve_prints_progress_at_once_and_refuses_a_second_serve(served):
    first_at, first = served.lines[0]
    assert first_at - served.started < 15, "the first line came late"  # the CLI's own import, on a busy machine
    assert f"Prefect server on 127.0.0.1:{served.env['RAGPREP_SERVE__PORT']}" in first
    assert "Prefect server up in" in served.output() and "worker started" in served.output()
    assert "deployment nightly-test-reports: new, deploying" in served.output()
    assert "schedule nightly-test-reports: `0 2 * * *` in Asia/Seoul" in served.output()
    state_before = served.state()
    import urllib.error
    import urllib.request

    ask = urllib.request.Request(state_before["web"] + "ask", data=b'{"question": "What is the test speed?"}',
                                 headers={"Content-Type": "application/json"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:  # the page's POST /ask answers: no index yet, 503 naming it
        urllib.request.urlopen(ask, timeout=60)
    assert refused.value.code == 503 and "index" in json.loads(refused.value.read())["error"]

    second = subprocess.run([RAGPREP, "serve", "--root", str(served.base / "other-root")], env=served.env,
                            capture_output=True, text=True, timeout=120)
    assert second.returncode == 2, second.stdout + second.stderr
    [line] = second.stderr.strip().splitlines()
    assert "ragprep serve is already running on this machine" in line and f"pid {state_before['pid']}" in line
    same_root = subprocess.run([RAGPREP, "serve", "--root", str(served.root)], capture_output=True, text=True, timeout=120,
                               env={**served.env, "RAGPREP_SERVE_STATE": str(served.base / "serve-2.json")})
    assert same_root.returncode == 2 and f"another ragprep serve serves the root {served.root}" in same_root.stderr
    assert served.state() == state_before  # the first one's state file is untouched
    assert served.proc.poll() is None


def _lock_holder(root: Path, timeout: float = 120) -> dict:
    """The build lock's holder (pid, flow) once a run has taken it."""
    from ragprep.buildlock import lock_path

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = lock_path(root).read_text() if lock_path(root).exists() else ""
        if text.strip():
            return json.loads(text)
        time.sleep(0.2)
    raise AssertionError("no run took the build lock")


def test_a_killed_worker_is_restarted_and_its_dead_run_marked_crashed(served):
    """kill -9 of the worker and of the run's process mid-run (the OOM killer, say): the worker comes back (reported),
    and the run, which nothing reports on any more, is marked Crashed by serve instead of staying Running."""
    from flows.supervise import alive
    from ragprep.buildlock import build_lock

    client = _client(served)
    try:
        # the root holds the overlap test's deck from another folder: moving the nightly to sample_docs/ removes it,
        # which the unmounted-share guard refuses unless the run allows removals (the deliberate case)
        run = _start_run(client, {"paths": [str(SAMPLE_DOCS)], "allow_removals": True})
        try:
            holder = _lock_holder(served.root)
        except AssertionError as exc:  # say where the run stands and what serve printed
            raise AssertionError(f"{exc}: run {client.read_flow_run(run.id).state}\n{served.output()[-3000:]}") from None
        worker = served.state()["worker_pid"]
        os.kill(worker, signal.SIGKILL)
        os.kill(holder["pid"], signal.SIGKILL)
        assert "exit code -9" in served.wait_for("worker stopped", 30)
        served.wait_for("worker restarted (restart 1)", 30)
        restarted = served.state()["worker_pid"]
        assert restarted != worker and alive(restarted)
        line = served.wait_for("its process is gone; marked Crashed", 30)
        crashed = client.read_flow_run(run.id)
        assert crashed.name in line
        crashed = crashed.state
        assert crashed.type.value == "CRASHED" and f"pid {holder['pid']}" in crashed.message, crashed
        with build_lock(served.root, "after-crash"):  # the dead run's lock is free
            pass
        from prefect.events.filters import EventFilter, EventNameFilter

        deadline = time.monotonic() + 20  # the restart is also a Prefect event (the UI's event feed)
        events = []
        while time.monotonic() < deadline and not events:
            events = client.read_events(EventFilter(event=EventNameFilter(name=["ragprep.serve.restarted"])), limit=50).events
            time.sleep(0.5)
        assert [e.payload["child"] for e in events] == ["worker"]
        note = _notification(served, 0)  # a crash notifies too
        assert "ended Crashed" in note["subject"] and f"pid {holder['pid']}" in note["body"]
    finally:
        client.close_stack.close()


def test_overlapping_nightly_runs_queue_and_a_failure_notifies_once(served, seed_embeddings):
    from ragprep.storage import Layout

    watched = served.base / "watched"
    watched.mkdir()
    shutil.copy(SAMPLE_DOCS / DECK, watched / DECK)
    client = _client(served)
    notified = len(served.receiver.received)
    try:
        # the deck's texts that the session has embedded are not embedded again (what the runs embed is not checked)
        with seed_embeddings(Layout(served.root).embeddings_cache_dir):
            runs = [_start_run(client, {"paths": [str(watched)]}) for _ in range(2)]
            seen: set[tuple[str, ...]] = set()
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                states = tuple(client.read_flow_run(r.id).state.type.value for r in runs)
                seen.add(states)
                if all(s in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") for s in states):
                    break
                time.sleep(0.3)
        assert ("RUNNING", "RUNNING") not in seen, seen
        assert {("RUNNING", "SCHEDULED"), ("SCHEDULED", "RUNNING")} & seen, seen  # one waited while the other ran
        finished = [client.read_flow_run(r.id) for r in runs]
        assert [r.state.type.value for r in finished] == ["COMPLETED", "COMPLETED"], [r.state for r in finished]
        for run in finished:
            assert re.fullmatch(r"nightly-test-reports \d{4}-\d\d-\d\d \d\d:\d\dZ ui-or-api", run.name), run.name
            assert {"ragprep", "build", "nightly"} <= set(run.tags)
        assert len(served.receiver.received) == notified  # no notification for a completed run

        started = time.monotonic()
        failed = _wait_final(client, _start_run(client, {"paths": [str(served.base / "unmounted-share")]}).id)
        assert failed.state.is_failed() and time.monotonic() - started < 30  # no retry waits (they took 35 s)
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, LogFilter, LogFilterFlowRunId

        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[failed.id])))
        assert [t.run_count for t in tasks if t.name.startswith("discover")] == [1]
        # the run's logs reach the server in batches after its state: wait for the error line, then for stragglers
        deadline = time.monotonic() + 30
        while True:
            logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[failed.id])))
            if any("unmounted-share: no such file or folder" in log.message for log in logs) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        time.sleep(3)
        logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[failed.id])))
        assert not [log.message for log in logs if "Traceback" in log.message], "a user error logged a traceback"
        assert any("unmounted-share: no such file or folder" in log.message for log in logs), [log.message for log in logs]
        note = _notification(served, notified)
        assert failed.name in note["subject"] and "Failed" in note["subject"] and "no such file or folder" in note["body"]
        assert f"/runs/flow-run/{failed.id}" in note["body"]  # the run's link in the UI
    finally:
        client.close_stack.close()


def test_stopping_serve_mid_run_ends_it_frees_the_lock_and_a_restart_keeps_ui_edits(served):
    from prefect.client.schemas.actions import DeploymentUpdate

    from ragprep.buildlock import build_lock

    client = _client(served)
    try:
        deployment = client.read_deployment_by_name(NIGHTLY)
        edited = {**deployment.parameters, "workers": 1}
        client.update_deployment(deployment.id, DeploymentUpdate(parameters=edited))  # what the UI's edit form sends
        # the root holds the overlap test's deck from another folder: moving the nightly to sample_docs/ removes it,
        # which the unmounted-share guard refuses unless the run allows removals (the deliberate case)
        run = _start_run(client, {"paths": [str(SAMPLE_DOCS)], "allow_removals": True})
        try:
            holder = _lock_holder(served.root)
        except AssertionError as exc:  # say where the run stands and what serve printed
            raise AssertionError(f"{exc}: run {client.read_flow_run(run.id).state}\n{served.output()[-3000:]}") from None
    finally:
        client.close_stack.close()
    assert served.stop(signal.SIGTERM) == 0, served.output()[-2000:]
    assert re.search(r"flow run nightly-test-reports .*: (Cancelled|Crashed)", served.output()), served.output()[-2000:]
    assert not Path(f"/proc/{holder['pid']}").exists() or "Z" in Path(f"/proc/{holder['pid']}/stat").read_text().split()[2]
    assert _processes_with(f"RAGPREP_SERVE_STATE={served.env['RAGPREP_SERVE_STATE']}") == [], "serve left processes behind"
    with build_lock(served.root, "after-serve"):  # free at once
        pass
    assert not Path(served.env["RAGPREP_SERVE_STATE"]).exists()
    print(served.output())  # shown with -s: what an operator sees when serve stops mid-run

    served.start()
    assert "deployment nightly-test-reports: unchanged code, kept as it is" in served.output()
    client = _client(served)
    try:
        assert client.read_deployment_by_name(NIGHTLY).parameters == edited
        assert client.read_flow_run(run.id).state.type.value in ("CANCELLED", "CRASHED")
    finally:
        client.close_stack.close()
