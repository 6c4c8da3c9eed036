"""The container files: compose.yaml parses and names paths that exist, runs the report page from the data volume
read-only, the image and the Makefile venv install use constraints.txt, and constraints.txt pins what is installed.
(Docker itself is not needed: nothing is built here.) Also ``ragprep review serve``, the report page service's command."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

import yaml

from tests.conftest import REPO

DEPLOY = REPO / "deploy"
RAGPREP = str(Path(sys.executable).with_name("ragprep"))


def _compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))  # merge keys (<<) resolved


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0)).lower()


def test_compose_parses_and_its_build_and_paths_exist():
    compose = _compose()
    services = compose["services"]
    assert {"postgres", "server", "deploy", "worker", "reports"} <= set(services)
    for name, service in services.items():
        if "build" in service:
            context = (DEPLOY / service["build"]["context"]).resolve()
            assert context == REPO and (context / service["build"]["dockerfile"]).is_file(), name
        for volume in service.get("volumes", []):
            assert volume.split(":")[0] in compose["volumes"], f"{name}: undeclared volume {volume}"
    deploy_command = " ".join(services["deploy"]["command"])
    prefect_file = re.search(r"--prefect-file (\S+)", deploy_command).group(1)
    assert (REPO / prefect_file).is_file()
    # The deployments that write the tables go to the 'builds' queue (deploy/prefect.yaml): compose must give it the
    # same limit of one run as `ragprep serve` does, or overlapping builds fail instead of queueing.
    assert "work-queue create builds --pool ragprep --limit 1" in deploy_command
    assert "work_queue_name: builds" in (REPO / prefect_file).read_text(encoding="utf-8")


def test_the_report_page_service_serves_the_workers_data_volume_read_only():
    services = _compose()["services"]
    reports, worker = services["reports"], services["worker"]
    assert reports["command"][:3] == ["ragprep", "review", "serve"] and "0.0.0.0" in reports["command"]
    port = reports["command"][reports["command"].index("--port") + 1]
    assert reports["ports"] == [f"127.0.0.1:{port}:{port}"]  # loopback only, like the Prefect UI
    [data] = [v for v in worker["volumes"] if v.startswith("data:")]
    assert reports["volumes"] == [data + ":ro"]
    root = reports["environment"]["RAGPREP_ROOT"]
    assert root.startswith(data.split(":")[1] + "/") and worker["environment"]["RAGPREP_ROOT"] == root
    assert worker["environment"]["RAGPREP_PUBLIC_URL"] == f"http://127.0.0.1:{port}"  # artifact links open the page


def test_the_image_and_the_makefile_install_with_the_constraints():
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    for source in re.findall(r"^COPY\s+(\S+)\s+\S+", dockerfile, re.MULTILINE):
        assert (REPO / source).exists(), source
    assert re.search(r"pip install -c constraints\.txt -e \.", dockerfile)
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8").split()
    assert "constraints.txt" not in ignored and "pyproject.toml" not in ignored
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "uv pip install -q --python $(PY) -c constraints.txt -e '.[test]'" in makefile
    assert "pip install -q -c constraints.txt uv" in makefile  # uv itself is pinned
    assert "pip install -q -c constraints.txt -e '.[test]'" in makefile  # pip's fallback
    assert re.search(r"^\$\(VENV\)/\.installed: pyproject\.toml constraints\.txt$", makefile, re.MULTILINE)


def test_constraints_pin_every_dependency_at_the_installed_version():
    lines = [line for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    pins = {}
    for line in lines:
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+!\-]+", line), f"not a name==version pin: {line}"
        name, version = line.split("==")
        pins[_name(name)] = version
    assert "ragprep" not in pins
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = {_name(r) for r in [*project["dependencies"], *project["optional-dependencies"]["test"]]}
    missing = wanted - set(pins)
    assert not missing, f"constraints.txt lacks {sorted(missing)}: run `make constraints`"
    stale = {n: (pins[n], metadata.version(n)) for n in wanted if metadata.version(n) != pins[n]}
    assert not stale, f"constraints.txt pins other versions than the venv has: {stale}; run `make constraints`"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, host: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def test_review_serve_serves_the_reports_and_stops_on_sigterm(tmp_path):
    root = tmp_path / "root"
    (root / "review").mkdir(parents=True)
    (root / "review" / "latest.html").write_text("<p>the report</p>", encoding="utf-8")
    (root / "tables").mkdir()
    (root / "tables" / "qa_pairs.parquet").write_bytes(b"PAR1")
    port = _free_port()
    proc = subprocess.Popen([RAGPREP, "review", "serve", "--root", str(root), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline()  # printed once the socket listens
        assert f"reports: http://127.0.0.1:{port}/" in first, first
        assert _get(f"http://127.0.0.1:{port}/review/latest.html") == (200, "<p>the report</p>")
        assert _get(f"http://127.0.0.1:{port}/tables/qa_pairs.parquet")[0] == 404  # only the report folders
        assert _get(f"http://127.0.0.1:{port}/", host="attacker.example")[0] == 421
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
