"""``ragprep qa audit``: the critic's usable shares, statuses and flags, and the review outcomes.

The figures are checked on hand-built rows; the command on a small root made from two real
sample documents (qa run offline, decisions applied, the qa stage run again, a version built).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.qa_pairs import QaPairRow
from schemas.review import DECISIONS_FORMAT, ReviewRow
from tasks.dataset.versions import build_version
from tasks.ingest.run import assemble_tables, discover, ingest_document
from tasks.qa.audit import audit_pairs, critic_usable, run_audit
from tasks.qa.review import apply_decisions_file
from tasks.qa.run import run_judge, run_qa

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DOCS = REPO / "sample_docs"
RAGPREP = str(Path(sys.executable).with_name("ragprep"))
T0 = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)


def _pair(qa_id: str, *, doc: str = "d1", qtype: str = "factual", modality: str = "text", flags: tuple[str, ...] = (),
          status: str = "approved", usable: bool | None = None) -> QaPairRow:
    row = QaPairRow(
        qa_id=qa_id, chunk_id=f"c-{qa_id}", doc_id=doc, source_path=f"/docs/{doc}.pptx", slide=1,
        question="What was measured?", answer="65 km/h", generated_question="What was measured?", generated_answer="65 km/h",
        question_type=qtype, target_modality=modality, language="en", flags=list(flags),
        flag_reasons=[f"why {f}" for f in flags], status=status, provider="heuristic", model="ragprep-rules-1", prompt="qa@1",
    )
    if usable is None:
        return row
    # the judge's columns (set directly until QaPairRow carries them; read with getattr either way)
    return row.model_copy(update={"critic_usable": usable, "critic_grounded": 4 if usable else 2})


def _decision(qa_id: str, decision: str, auto: bool | None, at: int = 0) -> ReviewRow:
    return ReviewRow(qa_id=qa_id, decision=decision, reviewer="kim", decided_at=T0, applied_at=T0.replace(minute=at),
                     source_file="decisions.json", auto_approved=auto,
                     question="Edited?" if decision == "edit" else None, answer="edited" if decision == "edit" else None)


def test_figures_on_hand_built_rows():
    pairs = [
        _pair("a1", usable=True), _pair("a2", usable=False), _pair("a3"),  # d1: 1 of 2 judged usable
        _pair("a4", qtype="numeric", modality="table", usable=True),
        _pair("b1", doc="d2", modality="chart"), _pair("b2", doc="d2", flags=("near_duplicate",), status="pending"),
        _pair("b3", doc="d2", flags=("too_short", "near_duplicate"), status="pending"),
        _pair("b4", doc="d2", flags=("too_short",), status="approved"),  # flagged, then approved by an expert
        _pair("b5", doc="d2"),  # decided before auto_approved was recorded
    ]
    decisions = [
        _decision("a1", "approve", True),
        _decision("a3", "reject", True, at=1), _decision("a3", "edit", True, at=2),  # the latest per pair counts
        _decision("gone-auto", "reject", True),  # a rejected spot check: the pair has left the tables
        _decision("gone-flagged", "reject", False),
        _decision("b4", "approve", False),
        _decision("b5", "approve", None),  # older row: read off the pair (no flags: auto-approved)
        _decision("gone-old", "reject", None),  # older row, pair gone: unknown
    ]
    audit = audit_pairs(pairs, decisions, "hand-built rows")

    assert (audit.pairs, audit.judged, audit.usable, audit.usable_share) == (9, 3, 2, pytest.approx(2 / 3))
    docs = {r.key: r for r in audit.by_document}
    assert (docs["d1"].label, docs["d1"].pairs, docs["d1"].judged, docs["d1"].usable) == ("d1.pptx", 4, 3, 2)
    assert docs["d1"].share == pytest.approx(2 / 3)
    assert (docs["d2"].pairs, docs["d2"].judged, docs["d2"].share) == (5, 0, None)  # the judge has not run on d2
    qtypes = {r.key: (r.pairs, r.judged, r.usable, r.share) for r in audit.by_question_type}
    assert qtypes == {"factual": (8, 2, 1, 0.5), "numeric": (1, 1, 1, 1.0)}
    modalities = {r.key: (r.pairs, r.share) for r in audit.by_target_modality}
    assert modalities == {"chart": (1, None), "table": (1, 1.0), "text": (7, 0.5)}

    assert audit.by_status == {"approved": 7, "pending": 2, "rejected": 0}
    assert audit.by_flag == {"near_duplicate": 2, "too_short": 2, "(none)": 6}  # FLAG_CODES order, unflagged last

    review = audit.review
    assert review.decisions == 7 and review.by_kind == {"approve": 3, "reject": 3, "edit": 1}
    assert review.on_pairs_here == 4  # a1, a3, b4, b5
    spot = review.spot_checks
    assert (spot.decided, spot.approved, spot.rejected, spot.edited, spot.unknown) == (4, 2, 1, 1, 1)
    assert spot.rejected_share == pytest.approx(0.25) and spot.rejected_or_edited_share == pytest.approx(0.5)

    text = "\n".join(r.markdown() for r in audit.reports())
    assert "| d2.pptx | 5 | 0 | 0 | - |" in text and "| d1.pptx | 4 | 3 | 2 | 66.7% |" in text
    assert "4 decisions on auto-approved pairs: 1 rejected (25.0%)" in text
    assert "1 decisions are on pairs whose auto-approval is unknown" in text


def test_nothing_judged_nothing_decided():
    audit = audit_pairs([_pair("a"), _pair("b", flags=("too_long",), status="pending")], [])
    assert audit.usable_share is None and all(r.share is None for r in audit.by_document)
    assert audit.review.decisions == 0 and audit.review.spot_checks.rejected_share is None
    lead = audit.reports()[0].lead[0]
    assert "has not run" in lead and "'-'" in lead
    assert critic_usable(_pair("c")) is None and critic_usable(_pair("d", usable=False)) is False


# ---------- the command on a small root ----------

def _ragprep(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([RAGPREP, *args], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**os.environ, "RAGPREP_OCR__ENABLED": "false", **(env or {})})


@pytest.fixture(scope="module")
def small_root(tmp_path_factory):
    """Two sample documents, QA pairs judged by the offline critic, two spot checks decided (one rejected), a
    flagged pair approved, the qa and judge stages run again (decisions apply to every later build), a dataset version."""
    root = tmp_path_factory.mktemp("audit") / "data"
    settings = Settings(root=root, ocr={"enabled": False})
    docs = [SAMPLE_DOCS / "crash_report_frontal_offset.pptx", SAMPLE_DOCS / "textbook_vehicle_safety.pdf"]
    assemble_tables([ingest_document(r, settings, None) for r in discover(docs, settings)], settings, datetime.now(timezone.utc))
    run_qa(settings)
    run_judge(settings)  # the critic approves the pairs it passes
    pairs = TableStore(Layout(root)).read("qa_pairs")
    auto = sorted(p.qa_id for p in pairs if p.status == "approved" and not p.flags)
    flagged = sorted(p.qa_id for p in pairs if p.flags)
    assert len(auto) >= 2, [(p.status, p.flags) for p in pairs][:5]  # the offline critic approves the clean pairs
    chosen = [{"qa_id": auto[0], "decision": "reject", "reviewer": "kim"},
              {"qa_id": auto[1], "decision": "approve", "reviewer": "kim"}]
    chosen += [{"qa_id": q, "decision": "approve", "reviewer": "lee"} for q in flagged[:1]]
    decisions = root / "decisions.json"
    decisions.write_text(json.dumps({"format": DECISIONS_FORMAT, "decisions": chosen}), encoding="utf-8")
    apply_decisions_file(decisions, root)
    run_qa(settings)  # a later build: the decisions apply again
    run_judge(settings)
    version = build_version(Settings(root=root)).version_id
    return {"root": root, "pairs": len(pairs), "flagged": len(flagged), "decided_flagged": len(flagged[:1]), "version": version}


def test_audit_of_the_working_tables(small_root):
    root = small_root["root"]
    audit = run_audit(root)
    assert audit.pairs == small_root["pairs"] - 1  # the rejected spot check is gone
    pairs = TableStore(Layout(root)).read("qa_pairs")
    assert audit.judged == sum(p.critic_usable is not None for p in pairs) > 0
    assert audit.usable == sum(p.critic_usable is True for p in pairs) and audit.usable_share == audit.usable / audit.judged
    assert sum(r.pairs for r in audit.by_document) == audit.pairs == sum(audit.by_status.values())
    spot = audit.review.spot_checks
    assert (spot.decided, spot.rejected, spot.approved, spot.unknown) == (2, 1, 1, 0) and spot.rejected_share == 0.5
    assert audit.review.by_kind == {"approve": 1 + small_root["decided_flagged"], "reject": 1, "edit": 0}

    proc = _ragprep("qa", "audit", "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for title in ("usable share by document", "usable share by question type", "usable share by target modality",
                  "QA pairs by status", "QA pairs by flag", "review outcomes"):
        assert title in out, title
    assert "crash_report_frontal_offset.pptx" in out and "textbook_vehicle_safety.pdf" in out
    assert f"the critic judged {audit.judged}, {audit.usable_share:.1%} of them usable" in out
    assert "Spot checks: 2 decisions on auto-approved pairs: 1 rejected (50.0%)" in out

    data = json.loads(_ragprep("qa", "audit", "--root", str(root), "--format", "json").stdout)
    assert data["pairs"] == audit.pairs and data["usable_share"] == audit.usable_share
    assert data["review"]["spot_checks"]["rejected_share"] == 0.5
    assert sum(data["by_status"].values()) == audit.pairs
    # the group's --root works before the subcommand too
    assert json.loads(_ragprep("qa", "--root", str(root), "audit", "-f", "json").stdout) == data


def test_audit_of_a_dataset_version(small_root):
    root, version = small_root["root"], small_root["version"]
    proc = _ragprep("qa", "audit", "--root", str(root), "--version", version, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["source"] == f"dataset version {version}"
    assert data["by_status"]["pending"] == 0 and data["by_status"]["approved"] == data["pairs"]  # versions hold approved pairs
    assert data["review"]["spot_checks"]["decided"] == 2 and data["review"]["spot_checks"]["rejected"] == 1
    bad = _ragprep("qa", "audit", "--root", str(root), "--version", "0000000000000000")
    assert bad.returncode == 2 and "not found" in bad.stderr
    missing = _ragprep("qa", "audit", "--root", str(root / "nowhere"))
    assert missing.returncode == 2 and "ragprep qa --root" in missing.stderr


def test_qa_without_a_subcommand_still_runs_the_stage(small_root, prefect_server, tmp_path):
    helped = _ragprep("qa", "--help")
    assert helped.returncode == 0 and "audit" in helped.stdout and "--root" in helped.stdout
    import shutil

    root = tmp_path / "root"
    shutil.copytree(small_root["root"], root)
    proc = _ragprep("qa", "--root", str(root), env={"PREFECT_API_URL": prefect_server})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "qa" in proc.stdout and "heuristic" in proc.stdout
    assert (root / "review" / "latest.html").is_file()
