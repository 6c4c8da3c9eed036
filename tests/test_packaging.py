"""ragprep as a built package: the wheel holds every module and every data file of the source tree, and a fresh
venv with only the wheel (its dependencies from the shared venv, no network) runs ``ragprep run sample_docs`` from
outside the checkout, with PYTHONPATH unset. That run's embeddings cache starts seeded with the session's vectors but
a fixed few (``seed_embeddings`` in tests/conftest.py), which the wheel's embedder embeds."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragprep.storage import Layout
from tests.conftest import REPO, SAMPLE_DOCS

PACKAGES = ("ragprep", "tasks", "flows", "schemas")


def _tracked(*folders: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--", *folders], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if (REPO / line).is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the tracked sources (the checkout gets no build/ or egg-info)."""
    src = tmp_path_factory.mktemp("src")
    for rel in ["pyproject.toml", "README.md", *_tracked(*PACKAGES)]:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, src / rel)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [built] = out.glob("ragprep-*.whl")
    return built


def test_the_wheel_holds_every_module_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {rel for rel in _tracked(*PACKAGES) if "__pycache__" not in rel}
    assert expected - names == set(), "tracked files missing from the wheel"
    for needed in ("ragprep/prompts/generate_qa/v2.toml", "tasks/qa/templates/review_report.html",
                   "tasks/dataset/expectations/qa_pairs.json", "tasks/qa/critic_policy.json", "schemas/mmdocrag.schema.json",
                   "tasks/train/models.py"):
        assert needed in names
    assert not {n for n in names if n.startswith("tests/")}  # the tests are not shipped


@pytest.mark.slow
def test_a_fresh_venv_with_the_wheel_runs_the_pipeline_outside_the_checkout(wheel, prefect_server, tmp_path, seed_embeddings):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAGPREP_", "PYTHONPATH"))}
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
                          capture_output=True, text=True, timeout=300, env=clean, cwd=tmp_path)
    assert proc.returncode == 0 and "Successfully installed ragprep" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    # then the dependencies from the shared venv, after the venv's own site-packages: a plain path line, so the
    # shared venv's .pth files (its editable ragprep) are not run
    (site / "shared-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = dict(clean)
    env.update(PREFECT_API_URL=prefect_server, RAGPREP_LLM__PROVIDER="heuristic")
    where = subprocess.run([str(python), "-c", "import ragprep, tasks.qa.judge, flows; print(ragprep.__file__, flows.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr[-2000:]
    assert all(Path(p).is_relative_to(site) for p in where.stdout.split()), where.stdout  # the wheel's, not the checkout's

    docs = work / "docs"
    shutil.copytree(SAMPLE_DOCS, docs, ignore=shutil.ignore_patterns("*.py", "*.md"))
    with seed_embeddings(Layout(work / "out").embeddings_cache_dir) as seed:
        run = subprocess.run([str(venv / "bin" / "ragprep"), "run", "docs", "--root", "out"], cwd=work, env=env,
                             capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert seed.added(), "the wheel's embedder embedded nothing"  # the texts the seed held out, at least
    assert "published (LATEST)" in run.stdout
    qa = pq.read_table(work / "out" / "tables" / "qa_pairs.parquet", columns=["status", "critic_usable"]).to_pylist()
    assert qa and all(p["critic_usable"] is not None for p in qa)  # the critic judged every pair
    # the calibrated auto-approval policy (critic_policy.json) came with the wheel: its gate approved what it may, or
    # said why every pair waits for review (the reason quotes the policy's held-out figures)
    said = " ".join(run.stdout.split())
    assert {p["status"] for p in qa} <= {"approved", "pending"}
    gate_reason = re.search(r"document-grouped CV precision of 0\.\d+, under qa\.auto_approve_min_precision", said)
    assert any(p["status"] == "approved" for p in qa) or ("every pair waits for review" in said and gate_reason), said[-2000:]
    assert any((work / "out" / "review").glob("report-*.html"))  # the report template came with the wheel
