"""One-line errors, exit 2, for what an operator can fix (issue 27): a root that is a file or on a read-only disk,
and settings that would break a run (rate limit under 1/min, split ratios not summing to 1, ``max_ratio=inf``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragprep.settings import Settings, explain_invalid
from tests.conftest import REPO, SAMPLE_DOCS

RAGPREP = str(Path(sys.executable).with_name("ragprep"))


def _env(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RAGPREP_")} | {"PYTHONPATH": str(REPO)} | extra


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.strip().splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr + proc.stdout, (
        proc.returncode, proc.stdout[-1500:], proc.stderr[-3000:])
    return lines[0]


def test_a_root_that_is_a_file_is_one_line(tmp_path):
    root = tmp_path / "not-a-folder"
    root.write_text("x")
    for args in (["versions"], ["search", "pulse"], ["ingest", str(SAMPLE_DOCS / "crash_report_side_pole.pptx")]):
        proc = subprocess.run([RAGPREP, *args, "--root", str(root)], capture_output=True, text=True, env=_env(),
                              cwd=tmp_path, timeout=120)
        assert _one_error_line(proc) == (f"error: root {root} is a file, not a folder; point --root (RAGPREP_ROOT) "
                                         "at a folder you can write"), args


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare (util-linux) is not installed")
def test_a_root_on_a_read_only_disk_is_one_line(tmp_path):
    """A read-only tmpfs mounted in a private user+mount namespace (no privileges needed where they are allowed)."""
    mount = tmp_path / "ro"
    mount.mkdir()
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o ro,size=1m tmpfs {mount}"],
                           capture_output=True, text=True)
    if probe.returncode:
        pytest.skip(f"cannot mount a read-only tmpfs here: {probe.stderr.strip()[-200:]}")
    script = (f"mount -t tmpfs -o ro,size=1m tmpfs {mount} && exec {RAGPREP} ingest "
              f"{SAMPLE_DOCS / 'crash_report_side_pole.pptx'} --root {mount / 'data'}")
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, env=_env(),
                          cwd=tmp_path, timeout=300)
    assert _one_error_line(proc) == (f"error: root {mount / 'data'} is on a read-only file system ({mount}); "
                                     "point --root (RAGPREP_ROOT) at a folder you can write")


INVALID = {
    "RAGPREP_LLM__REQUESTS_PER_MINUTE": ("0.5", "llm.requests_per_minute (RAGPREP_LLM__REQUESTS_PER_MINUTE): Input "
                                                "should be greater than or equal to 1 (got '0.5')"),
    "RAGPREP_DATASET__SPLIT_RATIOS": ('{"train": 0.8, "val": 0.1, "test": 0.05}',
                                      "dataset.split_ratios (RAGPREP_DATASET__SPLIT_RATIOS): Value error, split ratios "
                                      "must sum to 1 (they sum to 0.95)"),
    "RAGPREP_LIMITS__MAX_RATIO": ("inf", "limits.max_ratio (RAGPREP_LIMITS__MAX_RATIO): Input should be a finite number"),
}


@pytest.mark.parametrize("variable", sorted(INVALID))
def test_settings_that_break_runs_are_refused_naming_the_setting_and_range(variable, tmp_path):
    value, expected = INVALID[variable]
    proc = subprocess.run([RAGPREP, "versions", "--root", str(tmp_path / "root")], capture_output=True, text=True,
                          env=_env(**{variable: value}), cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and expected in proc.stderr, proc.stderr[-2000:]


def test_valid_edges_are_accepted():
    Settings(llm={"requests_per_minute": 1}, dataset={"split_ratios": {"train": 0.7, "val": 0.2, "test": 0.1}})
    with pytest.raises(ValidationError) as caught:
        Settings(dataset={"split_ratios": {"train": 1.2, "val": -0.1, "test": -0.1}})
    assert "each split ratio must be between 0 and 1" in explain_invalid(caught.value)
