"""ragprep as a service: the nightly deployment through a real Prefect server and process worker, CLI runs against a
running server, the temporary server's start timeout and its death with a killed CLI."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import SAMPLE_DOCS

RAGPREP = str(Path(sys.executable).with_name("ragprep"))
DECKS = ["crash_report_frontal_offset.pptx", "meeting_notes_weekly_safety.pptx"]
NEW_DECK = "crash_report_side_pole.pptx"


def _run(name: str, parameters: dict, timeout: float = 240):
    from prefect.deployments import run_deployment

    # looks at the run every second (Prefect's default is every 5 s: idle time, the run is done long before)
    return run_deployment(name, parameters=parameters, timeout=timeout, poll_interval=1)


@pytest.fixture
def service(prefect_server, tmp_path, monkeypatch, shared_embeddings):
    """serve-style setup on the session's Prefect server: work pool, the nightly deployment, a worker, the web root;
    the runs embed into the session's shared embeddings cache (no test here counts embeddings)."""
    from flows.serve import Service, free_port
    from ragprep.settings import ServeSettings

    monkeypatch.setenv("RAGPREP_OCR__ENABLED", "false")
    monkeypatch.setenv("RAGPREP_LLM__PROVIDER", "heuristic")
    monkeypatch.setenv("RAGPREP_SERVE_STATE", str(tmp_path / "serve.json"))
    monkeypatch.setenv("RAGPREP_EMBEDDINGS_CACHE", str(shared_embeddings))
    monkeypatch.setenv("PREFECT_WORKER_QUERY_SECONDS", "2")  # the worker asks for new runs every 2 s, not 10 s
    svc = Service(tmp_path / "root", ServeSettings(web_port=free_port()), deployments=["nightly-test-reports"],
                  api_url=prefect_server).start()
    yield svc
    svc.stop()


def test_nightly_deployment_processes_only_the_new_deck(service, tmp_path):
    watched = tmp_path / "watched"
    watched.mkdir()
    for name in DECKS:
        shutil.copy(SAMPLE_DOCS / name, watched / name)
    state = json.loads((tmp_path / "serve.json").read_text())
    assert state["root"] == str(service.root) and state["web"].startswith("http://127.0.0.1:")

    from prefect.client.orchestration import get_client

    async def schema() -> dict:
        async with get_client() as client:
            deployment = await client.read_deployment_by_name("ragprep-run/nightly-test-reports")
            return deployment.parameter_openapi_schema["properties"]["workers"]

    assert {"type": "integer", "minimum": 1, "maximum": 16} in [
        {k: v for k, v in option.items() if k in ("type", "minimum", "maximum")} for option in asyncio.run(schema())["anyOf"]
    ]
    first = _run("ragprep-run/nightly-test-reports", {"paths": [str(watched)]})
    assert first.state.is_completed(), first.state.message
    assert first.parameters["root"] == str(service.root)  # the deployment names its root ({{ $RAGPREP_ROOT }})
    from tasks.dataset.versions import list_versions

    versions_before = {v.version_id for v in list_versions(service.root)}
    assert len(versions_before) == 1

    shutil.copy(SAMPLE_DOCS / NEW_DECK, watched / NEW_DECK)
    second = _run("ragprep-run/nightly-test-reports", {"paths": [str(watched)]})
    assert second.state.is_completed(), second.state.message
    runs = pq.read_table(service.root / "tables" / "runs.parquet").to_pylist()
    assert (runs[-1]["n_documents"], runs[-1]["n_reused"]) == (3, 2)
    documents = pq.read_table(service.root / "tables" / "documents.parquet", columns=["file_name", "change"]).to_pylist()
    assert {d["file_name"]: d["change"] for d in documents} == {DECKS[0]: "unchanged", DECKS[1]: "unchanged", NEW_DECK: "new"}
    versions_after = {v.version_id for v in list_versions(service.root)}
    assert len(versions_after - versions_before) == 1

    empty = tmp_path / "unmounted-share"
    empty.mkdir()
    failed = _run("ragprep-run/nightly-test-reports", {"paths": [str(empty)]})
    assert failed.state.is_failed(), failed.state

    with pytest.raises(Exception, match="Validation failed for field 'workers'"):  # the API checks the schema (1-16)
        _run("ragprep-run/nightly-test-reports", {"paths": [str(watched)], "workers": 50}, timeout=0)


def test_cli_uses_a_running_serve_server(prefect_server, tmp_path):
    """With no PREFECT_API_URL, a CLI run reports to the server named in the serve state file (no temporary server)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter

    state = tmp_path / "serve.json"
    state.write_text(json.dumps({"api_url": prefect_server, "pid": os.getpid()}))
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(RAGPREP_SERVE_STATE=str(state), RAGPREP_OCR__ENABLED="false", PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")
    proc = subprocess.run([RAGPREP, "ingest", str(SAMPLE_DOCS / DECKS[0]), "--root", str(tmp_path / "root")],
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]

    async def ingest_runs() -> int:
        async with get_client() as client:
            runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter())
            return sum(1 for r in runs if r.parameters.get("root") == str(tmp_path / "root"))

    assert asyncio.run(ingest_runs()) == 1  # recorded on the serve server (a temporary one would have failed in 1 s)


def test_temporary_server_start_failure_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(RAGPREP_SERVE_STATE=str(tmp_path / "none.json"), PREFECT_HOME=str(tmp_path / "prefect"),
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")
    proc = subprocess.run([RAGPREP, "ingest", str(SAMPLE_DOCS / DECKS[0]), "--root", str(tmp_path / "root")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "did not start within 1 s" in lines[0] and "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS" in lines[0]
    assert "ragprep serve" in lines[0]


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.slow  # starts a Prefect temporary server through the CLI
def test_temporary_server_dies_with_a_killed_cli(tmp_path):
    """kill -9 of `ragprep ingest` mid-run leaves no Prefect server behind, and its port is free again."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(RAGPREP_SERVE_STATE=str(tmp_path / "none.json"), PREFECT_HOME=str(tmp_path / "prefect"),
               RAGPREP_OCR__ENABLED="false")
    cli = subprocess.Popen([RAGPREP, "ingest", str(SAMPLE_DOCS), "--root", str(tmp_path / "root")], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = None
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and server is None:
        server = next((c for c in _children(cli.pid) if "prefect.server.api.server:create_app" in _cmdline(c)), None)
        time.sleep(0.2)
    assert server is not None, "the CLI started no Prefect server"
    port = int(_cmdline(server).split("--port ")[1].split()[0])
    from flows.serve import healthy

    while time.monotonic() < deadline and not healthy(f"http://127.0.0.1:{port}/api"):
        time.sleep(0.2)
    assert cli.poll() is None, "the run ended before it could be killed"
    os.kill(cli.pid, signal.SIGKILL)
    cli.wait()
    gone = time.monotonic() + 15
    while time.monotonic() < gone and Path(f"/proc/{server}").exists() and "create_app" in _cmdline(server):
        time.sleep(0.2)
    assert "create_app" not in _cmdline(server), "Prefect's server outlived the killed CLI"
    assert not healthy(f"http://127.0.0.1:{port}/api", timeout=1.0)


# -- artifact links -------------------------------------------------------------------------------------------


def _report(stage: str = "qa"):
    from tasks.stage import StageReport

    return StageReport(stage=stage, provider="heuristic", model="rules", prompt="p", items=3, flagged=1, flags={"x": 1}, usage=[])


def test_qa_review_artifact_links_over_http_or_shows_the_path(monkeypatch, tmp_path):
    import flows.qa
    from ragprep.settings import Settings

    published: list[str] = []
    monkeypatch.setattr(flows.qa, "create_markdown_artifact", lambda **kw: published.append(kw["markdown"]))
    report = tmp_path / "review" / "report-abc.html"
    flows.qa.publish_review([_report()], str(report), Settings(root=tmp_path))
    flows.qa.publish_review([_report()], str(report), Settings(root=tmp_path, public_url="http://127.0.0.1:8765/"))
    plain, linked = published
    assert "file://" not in plain and f"`{report}` (on the worker" in plain and "](" not in plain
    assert "[report-abc.html](http://127.0.0.1:8765/review/report-abc.html)" in linked and "file://" not in linked


def test_quality_gate_artifact_links_the_committed_version_not_the_staging_folder(monkeypatch, tmp_path):
    import flows.dataset
    from ragprep.settings import Settings
    from tasks.dataset.quality import GateResult
    from tasks.dataset.versions import BuildResult

    committed = tmp_path / "datasets" / "published" / "v-123"
    result = BuildResult(version_id="v-123", created=True, published=True, path=str(committed), failed_expectations=[])
    gate = GateResult(passed=True, outcomes=[], data_docs=str(tmp_path / "datasets" / ".staging-9f2" / "quality" / "data_docs" / "index.html"))
    monkeypatch.setattr(flows.dataset, "build_version_task", lambda settings: (result, gate))
    described: list[str] = []
    monkeypatch.setattr(flows.dataset, "create_table_artifact", lambda **kw: described.append(kw["description"]))
    flows.dataset.run_dataset(Settings(root=tmp_path))
    flows.dataset.run_dataset(Settings(root=tmp_path, public_url="http://127.0.0.1:8765/"))
    plain, linked = described
    assert ".staging" not in plain + linked
    assert f"`{committed / 'quality' / 'data_docs' / 'index.html'}` (on the worker" in plain
    assert "(http://127.0.0.1:8765/datasets/published/v-123/quality/data_docs/index.html)" in linked


# -- the web root -----------------------------------------------------------------------------------------------


def _get(url: str, path: str, method: str = "GET") -> int:
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=5)
    conn.request(method, path)  # sent as written: no client-side normalisation of ../
    status = conn.getresponse().status
    conn.close()
    return status


def test_web_root_serves_reports_read_only_and_nothing_outside(tmp_path):
    from ragprep.webroot import WebRoot

    root = tmp_path / "root"
    (root / "review").mkdir(parents=True)
    (root / "review" / "report.html").write_text("<p>report</p>")
    (root / "datasets" / ".staging-1").mkdir(parents=True)
    (root / "datasets" / ".staging-1" / "x.html").write_text("staged")
    (root / "tables").mkdir()
    (root / "tables" / "chunks.parquet").write_text("tables")
    (tmp_path / "secret.txt").write_text("secret")
    (root / "review" / "escape.txt").symlink_to(tmp_path / "secret.txt")
    web = WebRoot(root).start()
    try:
        assert _get(web.url, "/review/report.html") == 200
        assert _get(web.url, "/") == 200
        assert _get(web.url, "/review/../../secret.txt") == 404
        assert _get(web.url, "/review/%2e%2e/%2e%2e/secret.txt") == 404
        assert _get(web.url, "/review/escape.txt") == 404  # a symlink out of the root
        assert _get(web.url, "/datasets/.staging-1/x.html") == 404
        assert _get(web.url, "/tables/chunks.parquet") == 404  # not a served folder
        assert _get(web.url, "/review/report.html", method="POST") == 501
        assert _get(web.url, "/review/report.html", method="PUT") == 501
    finally:
        web.stop()


# -- one build per root -----------------------------------------------------------------------------------------


def test_a_second_build_on_the_same_root_fails_at_once_naming_the_holder(tmp_path):
    from flows.qa import qa_flow
    from ragprep.buildlock import BuildLockedError, build_lock

    root = tmp_path / "root"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from ragprep.buildlock import build_lock\n"
         "with build_lock(Path(sys.argv[1]), 'nightly'):\n    print('held', flush=True); time.sleep(120)", str(root)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(BuildLockedError) as raised:
            qa_flow.fn(root=str(root))
        assert time.monotonic() - started < 5  # at once, no waiting
        message = str(raised.value)
        assert "\n" not in message
        assert f"nightly (pid {holder.pid} on " in message and f"holds {root / '.build.lock'}" in message
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    with build_lock(root, "after-kill") as path:  # the kernel released the killed holder's lock
        assert json.loads(path.read_text())["flow"] == "after-kill"
        with build_lock(root, "nested"):  # re-entrant in one process
            pass
    assert path.read_text() == ""


def test_stopping_escalates_to_sigkill_for_a_process_group_that_ignores_sigterm():
    """The worker ignores SIGTERM for a while: `serve` kills its whole process group after the grace period."""
    from flows.serve import stop_group

    script = ("import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, "
              "signal.SIG_IGN); time.sleep(60)'])\nprint(child.pid, flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True, stdout=subprocess.PIPE, text=True)
    grandchild = int(proc.stdout.readline())
    started = time.monotonic()
    stop_group(proc, grace=0.5)
    assert proc.returncode == -signal.SIGKILL and time.monotonic() - started < 5
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{grandchild}").exists() and _cmdline(grandchild):
        time.sleep(0.05)
    assert not _cmdline(grandchild), "the worker's child survived"
    proc.stdout.close()
