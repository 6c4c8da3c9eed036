"""The architecture's rules, checked on every test run: import-linter layer contracts
(pyproject.toml) and ruff (complexity, argument count, docstrings, unused imports)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

BIN = Path(sys.executable).parent


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_layer_contracts_hold():
    result = _run(str(BIN / "lint-imports"), "--no-cache")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout and "8 kept" in result.stdout


def test_ruff_passes_on_the_source_tree():
    result = _run(str(BIN / "ruff"), "check", "--no-cache", "ragprep", "tasks", "flows", "schemas")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_a_broken_contract_is_reported(tmp_path):
    """The contract check can fail: a core module that imports Prefect breaks it."""
    offender = REPO / "ragprep" / "_contract_probe.py"
    offender.write_text('"""Probe."""\n\nimport prefect  # noqa: F401\n', encoding="utf-8")
    try:
        result = _run(str(BIN / "lint-imports"), "--no-cache")
    finally:
        offender.unlink()
    assert result.returncode != 0
    assert "ragprep._contract_probe -> prefect" in result.stdout
