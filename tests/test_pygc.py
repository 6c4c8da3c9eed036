"""ragprep's processes run with the collector paced (ragprep.pygc): the CLI, flow-run processes (``import flows``)
and the Prefect API servers ragprep starts. Each check runs in a fresh interpreter (the test process is paced by
tests/conftest.py itself)."""

from __future__ import annotations

import gc
import subprocess
import sys

from ragprep.pygc import API_SERVER_MAIN, OLDER_COLLECTIONS, YOUNG_ALLOCATIONS, pace_collector

PACED = (YOUNG_ALLOCATIONS, OLDER_COLLECTIONS, OLDER_COLLECTIONS)


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


def test_a_fresh_interpreter_starts_at_cpythons_pace_and_importing_ragprep_changes_nothing():
    out = _python("import gc, ragprep, ragprep.settings; print(tuple(gc.get_threshold()))")
    assert out.returncode == 0, out.stderr
    assert eval(out.stdout) != PACED  # noqa: S307 - a tuple printed by the child; only entry points pace


def test_flow_run_processes_and_cli_commands_are_paced(tmp_path):
    flows = _python("import gc, flows; print(tuple(gc.get_threshold()))")
    assert flows.returncode == 0, flows.stderr
    assert eval(flows.stdout) == PACED  # noqa: S307
    cli = _python("import gc, sys; from typer.testing import CliRunner; from ragprep.cli import app; "
                  "r = CliRunner().invoke(app, ['sql', 'select 1', '--root', sys.argv[1]]); "
                  "print(r.exit_code, tuple(gc.get_threshold()))", str(tmp_path))
    assert cli.returncode == 0, cli.stderr
    code, thresholds = cli.stdout.split(" ", 1)  # the command ran (an empty root: exit 2, no tables) after the callback
    assert code in ("0", "2") and eval(thresholds) == PACED  # noqa: S307


def test_the_api_server_command_line_is_uvicorns_with_its_arguments():
    out = _python(API_SERVER_MAIN, "--version")
    assert out.returncode == 0, out.stderr
    assert "uvicorn" in out.stdout.lower()


def test_a_higher_threshold_is_kept():
    before = gc.get_threshold()
    try:
        gc.set_threshold(YOUNG_ALLOCATIONS * 2, 5, 50)
        pace_collector()
        assert gc.get_threshold() == (YOUNG_ALLOCATIONS * 2, OLDER_COLLECTIONS, 50)
    finally:
        gc.set_threshold(*before)
