"""The architecture's rules, checked on every test run: import-linter layer contracts
(pyproject.toml), ruff (complexity, argument count, docstrings, unused imports, line length) and a cap of
MAX_LINES lines per module (listed exceptions, each with a reason)."""

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
    result = _run(str(BIN / "ruff"), "check", "--no-cache", "ragprep", "tasks", "flows", "schemas")  # E501 included
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


MAX_LINES = 600
"""No Python module of the source tree is longer: split it along its concepts instead."""

LONG_MODULES = {
    "ragprep/settings.py": "the one settings object (DESIGN.md): its groups are field declarations with their descriptions, "
                           "which the Prefect UI, --help and the unknown-variable warnings read from one place",
}
"""The exceptions to ``MAX_LINES``, each with its reason."""

SOURCE_PACKAGES = ("ragprep", "tasks", "flows", "schemas")


def _module_lengths(root: Path) -> dict[str, int]:
    paths = (p for package in SOURCE_PACKAGES if (root / package).is_dir() for p in (root / package).rglob("*.py"))
    return {p.relative_to(root).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in paths}


def _over_cap(lengths: dict[str, int]) -> dict[str, int]:
    return {path: n for path, n in lengths.items() if n > MAX_LINES and path not in LONG_MODULES}


def test_modules_stay_under_the_line_cap():
    lengths = _module_lengths(REPO)
    over = _over_cap(lengths)
    assert not over, f"modules over {MAX_LINES} lines (split them, or list them in LONG_MODULES with a reason): {over}"
    stale = [path for path in LONG_MODULES if lengths.get(path, 0) <= MAX_LINES]
    assert not stale, f"LONG_MODULES lists modules that are no longer over {MAX_LINES} lines (or gone): {stale}"
    assert all(reason.strip() for reason in LONG_MODULES.values())


def test_the_line_cap_check_can_fail(tmp_path):
    """A module one line over the cap is reported; one at the cap and a listed exception are not."""
    (tmp_path / "ragprep").mkdir(parents=True)
    (tmp_path / "tasks").mkdir(parents=True)
    (tmp_path / "tasks" / "big.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    (tmp_path / "tasks" / "ok.py").write_text("x = 1\n" * MAX_LINES, encoding="utf-8")
    (tmp_path / "ragprep" / "settings.py").write_text("x = 1\n" * (MAX_LINES + 50), encoding="utf-8")  # listed
    assert _over_cap(_module_lengths(tmp_path)) == {"tasks/big.py": MAX_LINES + 1}


def test_long_lines_are_reported_and_the_e501_debt_list_only_shrinks():
    """E501 (lines over 130) is on for the source tree; a file on the debt list in pyproject.toml must still need it."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    lint = config["tool"]["ruff"]["lint"]
    assert "E501" in lint["select"] and config["tool"]["ruff"]["line-length"] == 130
    debt = [path for path, codes in lint["per-file-ignores"].items() if codes == ["E501"]]
    result = _run(str(BIN / "ruff"), "check", "--no-cache", "--isolated", "--line-length", "130", "--select", "E501",
                  "--output-format", "concise", *debt)
    still = {line.split(":", 1)[0] for line in result.stdout.splitlines() if ": E501 " in line}
    assert not sorted(set(debt) - still), "wrapped files still on the E501 debt list: remove them from pyproject.toml"


def test_every_package_and_its_data_is_packaged():
    """setuptools finds every package of the source tree (a wheel lacking one fails at import), with the prompts, the
    GX suites and the review report template as package data."""
    import tomllib

    from setuptools import find_packages

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = set(find_packages(str(REPO), include=config["packages"]["find"]["include"]))
    tree = {p.parent.relative_to(REPO).as_posix().replace("/", ".") for package in SOURCE_PACKAGES
            for p in (REPO / package).rglob("__init__.py") if "__pycache__" not in p.parts}
    assert found == tree
    data = config["package-data"]
    assert "*/*.toml" in data["ragprep.prompts"] and {"templates/*", "critic_policy.json"} <= set(data["tasks.qa"])
    assert any(pattern.startswith("expectations/") for pattern in data["tasks.dataset"])


def test_a_stage_importing_a_later_stage_is_reported():
    """The pipeline order can fail: the qa stage importing refmatch (a later stage) breaks the layers contract."""
    offender = REPO / "tasks" / "qa" / "_contract_probe.py"
    offender.write_text('"""Probe."""\n\nimport tasks.refmatch.run  # noqa: F401\n', encoding="utf-8")
    try:
        result = _run(str(BIN / "lint-imports"), "--no-cache")
    finally:
        offender.unlink()
    assert result.returncode != 0
    assert "tasks.qa._contract_probe -> tasks.refmatch.run" in result.stdout
