"""Expert decisions survive a filled report header: the regenerated pairs keep their approvals, and a decision whose
pair is really gone is reported orphaned (``ragprep review apply`` and the review report). The pipeline runs as a
Prefect flow on the session's real Prefect server."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone

from typer.testing import CliRunner

from ragprep.cli import app
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.review import ReviewRow
from tests.conftest import SAMPLE_DOCS

DECK = "crash_report_side_pole.pptx"
OLD_STAGE, NEW_STAGE = "Pilot Production", "PP1 build"


def _pairs(root):
    return {p.qa_id: p for p in TableStore(Layout(root)).read("qa_pairs")}


def _write(path, decisions, headers=()):
    path.write_text(json.dumps({"format": "ragprep-review-decisions/1", "build": "test",
                                "decisions": decisions, "headers": list(headers)}), encoding="utf-8")
    return path


def _edit_deck(source, target, old: str, new: str) -> None:
    """A copy of ``source`` with one number changed on one slide (the rest of the deck as it was)."""
    from pptx import Presentation

    def shapes(group):
        for shape in group:
            yield shape
            if hasattr(shape, "shapes"):  # a group
                yield from shapes(shape.shapes)

    deck = Presentation(str(source))
    changed = 0
    for shape in (s for slide in deck.slides for s in shapes(slide.shapes)):
        for paragraph in shape.text_frame.paragraphs if shape.has_text_frame else ():
            for run in paragraph.runs:
                if old in run.text:
                    run.text = run.text.replace(old, new)
                    changed += 1
    assert changed == 1, f"{old!r} found {changed} times in {source.name}"
    deck.save(str(target))


def test_header_fill_keeps_approvals_and_reports_gone_pairs_orphaned(prefect_server, tmp_path, monkeypatch, shared_embeddings):
    from flows.pipeline import pipeline_flow

    monkeypatch.setenv("RAGPREP_LLM__PROVIDER", "heuristic")
    monkeypatch.setenv("RAGPREP_EMBEDDINGS_CACHE", str(shared_embeddings))  # what the runs embed is not checked here
    inbox, root = tmp_path / "in", tmp_path / "root"
    inbox.mkdir()
    shutil.copy(SAMPLE_DOCS / DECK, inbox / DECK)
    assert pipeline_flow(paths=[str(inbox)], root=str(root), ocr=False, return_state=True).is_completed()
    first = _pairs(root)
    intrusion = next(p for p in first.values() if "187" in p.answer)  # its slide is edited below: really gone then
    named = sorted(p.qa_id for p in first.values() if f"({OLD_STAGE})" in p.question and p.qa_id != intrusion.qa_id)
    assert len(named) >= 4, "the heuristic questions name the report by test name and stage"
    approved, rejected, edited = named[:-2], named[-2], named[-1]
    doc_id = intrusion.doc_id
    decisions = [{"qa_id": q, "decision": "approve", "reviewer": "kim"} for q in [*approved, intrusion.qa_id]]
    decisions += [{"qa_id": rejected, "decision": "reject", "reviewer": "kim"},
                  {"qa_id": edited, "decision": "edit", "question": "Expert question?", "answer": first[edited].answer}]
    header = {"doc_id": doc_id, "field": "Stage", "value": NEW_STAGE, "reviewer": "kim"}
    runner = CliRunner()
    result = runner.invoke(app, ["review", "apply", str(_write(tmp_path / "d1.json", decisions, [header])), "--root", str(root)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"header value: {DECK}: Stage = {NEW_STAGE}" in result.output
    assert "orphaned" not in result.output

    # the filled header changes every question that names the report: new QA ids, the decisions carried over
    assert pipeline_flow(paths=[str(inbox)], root=str(root), ocr=False, return_state=True).is_completed()
    second = _pairs(root)
    assert not set(named) & set(second), "the questions (and so the QA ids) changed with the header"
    renamed = {p.generated_question.replace(f"({NEW_STAGE})", f"({OLD_STAGE})"): p for p in second.values()}
    for qa_id in approved:
        now = renamed[first[qa_id].generated_question]
        assert (now.status, now.review_decision, now.reviewer) == ("approved", "approve", "kim"), now.question
        assert f"({NEW_STAGE})" in now.question
    assert first[rejected].generated_question not in renamed  # the regenerated pair stays rejected (dropped)
    edited_now = renamed[first[edited].generated_question]
    assert (edited_now.question, edited_now.review_decision) == ("Expert question?", "edit")
    assert sum(p.review_decision is not None for p in second.values()) == len(approved) + 2  # + intrusion + edited

    # a slide's number changes: that pair is really gone; the others follow their unchanged chunk text
    _edit_deck(SAMPLE_DOCS / DECK, inbox / DECK, "187 mm", "192 mm")
    assert pipeline_flow(paths=[str(inbox)], root=str(root), ocr=False, return_state=True).is_completed()
    third = _pairs(root)
    assert {p.doc_id for p in third.values()} != {doc_id}, "the edited deck is a new document"
    kept = [p for p in third.values() if p.review_decision == "approve"]
    assert len(kept) == len(approved)
    assert not any(p.review_decision for p in third.values() if "192" in p.answer)

    stray = [{"qa_id": kept[0].qa_id, "decision": "approve", "reviewer": "lee"}]
    result = runner.invoke(app, ["review", "apply", str(_write(tmp_path / "d2.json", stray)), "--root", str(root)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "1 orphaned decision(s)" in result.output and intrusion.qa_id in result.output
    assert "1 applied to current QA pairs" in result.output

    from tasks.qa.review_report import build_report_data

    data = build_report_data(root)
    assert [(o["qa_id"], o["decision"], o["answer"]) for o in data["orphaned"]] == [(intrusion.qa_id, "approve", intrusion.answer)]
    html = (root / "review" / "latest.html").read_text(encoding="utf-8")  # the report the third run wrote
    assert "Orphaned decisions" in html and intrusion.qa_id in html
    result = runner.invoke(app, ["review", "report", "--root", str(root), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Orphaned decisions" in page and intrusion.qa_id in page


def test_resolution_carries_over_one_decision_per_pair_and_orphans_the_rest():
    """The matching rule alone: same chunk (id or text), type and answer, similar question; the latest decision first."""
    from datetime import timedelta

    from schemas.qa_pairs import QaPairRow
    from tasks.qa.review import resolve_decisions

    t0 = datetime(2026, 12, 1, tzinfo=timezone.utc)

    def pair(qa_id, chunk, question, answer, qtype="factual"):
        return QaPairRow(qa_id=qa_id, chunk_id=chunk, doc_id="d", source_path="x.pptx", question=question, answer=answer,
                         generated_question=question, generated_answer=answer, question_type=qtype, target_modality="text",
                         language="en", status="pending", provider="heuristic", model="m", prompt="p")

    def decided(qa_id, chunk, question, answer, decision="approve", qtype="factual", base=None, day=0):
        return ReviewRow(qa_id=qa_id, decision=decision, applied_at=t0 + timedelta(days=day), source_file="f.json",
                         chunk_id=chunk, chunk_base=base, question_type=qtype, pair_question=question, pair_answer=answer)

    now = [pair("n1", "c1", "What barrier was used in the SP test (PP1 build)?", "pole, 254 mm"),
           pair("n2", "c1", "What speed was used in the SP test (PP1 build)?", "32 km/h"),
           pair("n3", "c9", "Which speed did the sled reach in the SP test (PP1 build)?", "32 km/h"),
           pair("n4", "c2", "What is the HIC15 in the SP test (PP1 build)?", "412"),
           pair("n5", "c3", "What was the purpose of the SP-2024-031 Oblique Pole 32 km/h test (Pilot Production)?", "Confirm"),
           pair("n6", "c1", "Which dummy sat in the driver seat?", "ES-2re")]
    stored = {d.qa_id: d for d in [
        decided("o1", "c1", "What barrier was used in the SP test (Pilot Production)?", "pole, 254 mm"),
        decided("o2", "c1", "What speed was used in the SP test (Pilot Production)?", "32 km/h", "approve"),
        decided("o3", "c1", "What speed was used in the SP test (P2)?", "32 KM/H ", "reject", day=1),  # later: wins n2
        decided("o4", "old-chunk", "What is the HIC15 in the SP test (Pilot Production)?", "412", base="b2"),
        decided("o5", "c1", "What barrier was used in the SP test (Pilot Production)?", "pole, 254 mm", qtype="numeric"),
        decided("o6", "gone", "Anything?", "x", "reject"),
        decided("o7", "c3", "What was the purpose of the crash report side pole presentation?", "Confirm"),  # name filled
        decided("o8", "c1", "Name the laboratory.", "ES-2re"),  # same answer, a question of other wording altogether
        decided("n6", "c1", "Which dummy sat in the driver seat?", "ES-2re", "edit"),
    ]}
    resolution = resolve_decisions(now, stored, {"c1": "b1", "c2": "b2", "c3": "b3", "c9": "b9"})
    assert resolution.carried == {"n1": "o1", "n2": "o3", "n4": "o4", "n5": "o7"}  # n4: chunk id changed, text did not
    assert resolution.decisions["n6"].decision == "edit" and "n3" not in resolution.decisions  # n3: another chunk
    assert sorted(d.qa_id for d in resolution.orphaned) == ["o5", "o6", "o8"]  # o2: superseded by o3, not orphaned
    without_text = resolve_decisions(now, stored)
    assert "n4" not in without_text.carried and "o4" in {d.qa_id for d in without_text.orphaned}
    still_there = resolve_decisions(now, {"o6": decided("o6", "c1", "Anything?", "x", "reject")}, {"c1": "b1"})
    assert still_there.orphaned == []  # a rejected pair is dropped from qa_pairs: its chunk is there, so it applied
