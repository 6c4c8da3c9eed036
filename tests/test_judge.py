"""The judge stage: the offline critic's signals on crafted pairs, the LLM critic against the fake
OpenAI-compatible server (including replies it cannot use), and approval: only pairs the critic passes
(and that carry no flag) are auto-approved, and experts' decisions always win."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.qa_pairs import FLAG_CODES, LOW_QUALITY_FLAGS, QA_PAIRS_SCHEMA
from tasks.dataset.versions import build_version, quality_gate
from tasks.enrich.run import run_correct, run_describe, run_headers
from tasks.qa.flags import language_of
from tasks.qa.judge import (
    CRITERIA,
    JUDGE_FAILED,
    CriticScores,
    cross_kind_bands,
    document_kinds,
    offline_precision_short,
    pair_bands,
    score_offline,
)
from tasks.qa.pair_context import PairContext
from tasks.qa.review import apply_decisions_file
from tasks.qa.run import run_judge, run_qa
from tests.conftest import SAMPLE_DOCS, copy_root

REPORT = """# Dummy Measurements (Hybrid III 50th)

| Metric | Limit | Driver | Passenger |
|---|---|---|---|
| HIC15 | 700 | 412.6 | 388.9 |
| Chest deflection (mm) | 42 | 31.4 | 28.0 |

![image.png (800x400 px)](images/91/a.png)

> **OCR text of picture "image.png"**
> PEAK DECEL 38.2 9
> SLED PULSE OK

The P2 build uses the retuned driver airbag with a 42 mm vent instead of the 36 mm vent used on the P1 build.
"""

TEXTBOOK = """# 1 Crash Pulse Basics

Delta-v is the area under the acceleration curve and depends mostly on impact speed and on the mass ratio of the
colliding objects. Peak deceleration depends on how stiff the front structure is and on how evenly it crushes.
A front structure that crushes 600 mm gives an average deceleration of roughly 20 g. This is the ride-down benefit:
the earlier the occupant is coupled to the decelerating vehicle, the more of the structural crush is

shared with the person inside. Two vehicles with the same delta-v can produce very different occupant loads.
"""

REFERENCES = """# References

[1] Huang, M. (2002). Vehicle Crash Mechanics. CRC Press.
[2] Kent, R., et al. (2003). Chest deflection tolerance to blunt anterior loading. Stapp Car Crash Journal 47.
[3] Eppinger, R., et al. (1999). Development of improved injury criteria. NHTSA.
[4] Mertz, H. J. (1984). Injury assessment values used to evaluate Hybrid III response measurements. GM.
[5] Versace, J. (1971). A review of the severity index. SAE 710881.
"""


def ctx(question: str, answer: str, chunk: str = REPORT, **fields) -> PairContext:
    defaults = {
        "chunk_title": chunk.splitlines()[0].lstrip("# "),
        "file_name": "crash_report_frontal_offset.pptx" if chunk == REPORT else "textbook_vehicle_safety.pdf",
        "question_type": "numeric", "target_modality": "table" if chunk == REPORT else "text",
        "language": language_of(question),
    }
    return PairContext(question=question, answer=answer, chunk_markdown=chunk, **(defaults | fields))


GOOD = [
    ctx("What HIC15 did the driver dummy record in the FO-2024-017 frontal offset test?", "412.6"),
    ctx("In the FO-2024-017 frontal offset test, what chest deflection did the passenger dummy record?", "28.0 mm"),
    ctx("FO-2024-017 정면 오프셋 시험에서 운전석 더미의 HIC15 값은 얼마인가요?", "412.6"),
    ctx('According to the "Crash Pulse Basics" chapter of the "Vehicle Passive Safety" textbook, what is delta-v?',
        "Delta-v is the area under the acceleration curve and depends mostly on impact speed and on the mass ratio of the "
        "colliding objects.", TEXTBOOK, question_type="definitional"),
    ctx('What does peak deceleration depend on, according to the "1 Crash Pulse Basics" chapter of the vehicle safety textbook?',
        "how stiff the front structure is and on how evenly it crushes", TEXTBOOK, question_type="causal"),
]


@pytest.mark.parametrize("pair", GOOD, ids=[g.question[:40] for g in GOOD])
def test_good_pairs_score_usable(pair):
    scores = score_offline(pair)
    assert scores.usable(), scores
    assert min(scores.scores().values()) >= 4, scores


# (id, the pair, the criterion that must fail, a phrase of the reason)
BAD = [
    ("what is This", ctx("According to textbook_vehicle_safety.pdf, what is This?",
                         "This is the ride-down benefit: the earlier the occupant is coupled to the decelerating vehicle, the more "
                         "of the structural crush is", TEXTBOOK, question_type="definitional"), "well_formed", "sentence start"),
    ("what is The", ctx("According to the vehicle safety textbook, what is The change in velocity?", "Delta-v",
                        TEXTBOOK, question_type="definitional"), "well_formed", "what is"),
    ("the the", ctx("What HIC15 did the the driver dummy record in the FO-2024-017 test?", "412.6"), "well_formed", "repeated word"),
    ("agreement", ctx('According to "Test Setup" of the FO-2024-017 test, what is the Dummies?', "Hybrid III 50th male",
                      REPORT + "\n- Dummies: Hybrid III 50th male\n", question_type="factual", target_modality="text"),
     "well_formed", "agreement"),
    ("korean particle", ctx("FO-2024-017 시험의 일시은(는) 무엇인가요?", "2024년 11월 28일", REPORT + "\n일시: 2024년 11월 28일\n",
                            question_type="factual"), "well_formed", "Korean particle"),
    ("not a question", ctx("Tell me the HIC15 of the driver in the FO-2024-017 test.", "412.6"), "well_formed", "question"),
    ("file name only", ctx("What is the HIC15 of the Driver in crash_report_frontal_offset.pptx?", "412.6"),
     "standalone", "only the file name"),
    ("slide N", ctx("What HIC15 did the driver record on Slide 3?", "412.6"), "standalone", "Slide 3"),
    ("series N", ctx('In the FO-2024-017 test, what is the peak value of Series 1 in the "Chest acceleration" chart?', "38.2",
                     target_modality="chart"), "useful", "anonymous series"),
    ("deictic", ctx("What is the driver HIC15 shown on this slide?", "412.6"), "standalone", "deictic"),
    ("the picture", ctx("What deceleration is printed on the picture?", "38.2", target_modality="image"), "standalone", "the picture"),
    ("table title only", ctx('In the table "Dummy Measurements (Hybrid III 50th)", what is the Measured Driver value for HIC15?',
                             "412.6"), "standalone", "other documents can share"),
    ("fragment subject", ctx("According to the vehicle safety textbook, what is Peak deceleration depends on how stiff the front "
                             "structure?", "Peak deceleration depends on how stiff the front structure is and on how evenly it "
                             "crushes.", TEXTBOOK, question_type="definitional"), "standalone", "sentence fragment"),
    ("OCR garbage", ctx('What does the overlay picture of the FO-2024-017 test print as the peak deceleration?',
                        "PEAK DECEL 38.2 9", target_modality="image", question_type="factual"), "grounded", "OCR"),
    ("OCR debris", ctx("In the FO-2024-017 test, what is the rating of the driver?", "=O 11391",
                       REPORT + "\n=O 11391\n", question_type="factual"), "grounded", "garbage"),
    ("not in chunk", ctx("In the FO-2024-017 test, what fired late?", "the seatbelt pretensioner fired late",
                         question_type="factual"), "grounded", "not in the chunk"),
    ("invented number", ctx("What HIC15 did the driver dummy record in the FO-2024-017 test?", "413"), "grounded", "413"),
    ("truncated", ctx('What is the ride-down benefit, according to the "1 Crash Pulse Basics" chapter of the vehicle safety '
                      'textbook?', "the earlier the occupant is coupled to the decelerating vehicle, the more of the structural "
                      "crush is", TEXTBOOK, question_type="definitional"), "grounded", "truncated"),
    ("echo", ctx("In the FO-2024-017 test, what did the team ask about the vent?", "Is the 42 mm vent large enough?",
                 REPORT + "\nIs the 42 mm vent large enough?\n", question_type="factual"), "grounded", "itself a question"),
    ("reference splice", ctx('According to the "References" of the vehicle safety textbook, which work covers chest deflection?',
                             "Kent, R., et al. (2003). Chest deflection tolerance to blunt anterior loading. Stapp Car Crash "
                             "Journal 47. [3] Eppinger, R., et al. (1999).", REFERENCES, question_type="factual",
                             chunk_title="References"), "grounded", "spliced"),
    ("ocr lookalike", ctx("What HIC15 did the driver dummy record in the FO-2024-017 frontal offset test?", "4l2.6"),
     "grounded", "OCR"),
    ("page footer", ctx("How much did the P2 vent change reduce chest deflection in the FO-2024-017 test?",
                        "4 Frontal Offset Crash Test Report", REPORT + "\n4 Frontal Offset Crash Test Report\n",
                        question_type="numeric", target_modality="text"), "grounded", "footer"),
    ("repeated row label", ctx("In the FO-2024-017 test, what chest deflection did the driver dummy record?", "31.4",
                               REPORT + "\n| Metric | Driver |\n|---|---|\n| Chest deflection (mm) | 29.9 |\n"),
     "grounded", "several rows"),
    ("merged header cell", ctx("In the FO-2024-017 test table, what is the Measured value for HIC15?", "412.6",
                               "| Metric | Measured | | Limit |\n|---|---|---|---|\n| | Driver | Passenger | |\n"
                               "| HIC15 | 412.6 | 388.9 | 700 |\n"), "grounded", "merged header"),
    ("quoted own answer", ctx('According to "1 Crash Pulse Basics" in the vehicle safety textbook, what explains the statement '
                              'beginning "Two vehicles with the same delta-v"?', "Two vehicles with the same delta-v can produce "
                              "very different occupant loads.", TEXTBOOK, question_type="causal"), "well_formed", "restates"),
    ("korean split header", ctx("'FO-2024-017 시험 결과' 표에서 서울의 총인 원 값은 무엇인가요?", "40",
                                "| 구분 | 총인 원 |\n|---|---|\n| 서울 | 40 |\n", question_type="numeric"),
     "well_formed", "split by spaces"),
    ("document attribute", ctx('What is the sustainability of the "Cloud Pak for Data on IBM Z" document?',
                               "Reduce your energy consumption with real-time monitoring tools.",
                               "- Sustainability: Reduce your energy consumption with real-time monitoring tools.\n",
                               question_type="factual", target_modality="text", file_name="redbook.pdf"),
     "well_formed", "makes no sense"),
    ("quantity without a number", ctx("In the FO-2024-017 test, what HIC15 was recorded for the body region?", "Head",
                                      REPORT + "\n| HIC15 | Head |\n", question_type="factual"), "well_formed", "no number"),
    ("toc line", ctx("On which page of the vehicle safety textbook does the chapter Crash Pulse Basics start?",
                     "1 Crash Pulse Basics .......... 3", "# Contents\n\n1 Crash Pulse Basics .......... 3\n",
                     question_type="factual", chunk_title="Contents"), "useful", "contents"),
    ("source trivia", ctx("In the FO-2024-017 test report, what is the source of the measurements?", "IHEP (2010)",
                          REPORT + "\nSource: IHEP (2010)\n", question_type="factual"), "useful", "source"),
    ("zero baseline", ctx("In the FO-2024-017 test, what is the chest acceleration at 0 ms?", "0 g",
                          REPORT + "\n| 0 ms | 0 g |\n", target_modality="chart"), "useful", "baseline"),
    ("boilerplate answer", ctx("In the FO-2024-017 test, what is the driver's rating source?", "IHEP forthcoming report",
                               REPORT + "\nIHEP forthcoming report\n", question_type="factual", answer_also_in=3),
     "useful", "other chunk"),
    ("ambiguous gold", ctx("What HIC15 did the driver dummy record in the FO-2024-017 frontal offset test?", "412.6",
                           flags=("ambiguous_gold",)), "grounded", "ambiguous"),
    ("picture text", ctx("What text is printed on the overlay picture of the FO-2024-017 test?", "SLED PULSE OK",
                         question_type="factual", target_modality="image"), "useful", "literal text"),
    ("merged header", ctx('In the FO-2024-017 test, what is the Evidence Based Solutions and Holistic Approaches value for HIC15?',
                          "412.6"), "grounded", "merged-header"),
]


@pytest.mark.parametrize(("case", "pair", "criterion", "phrase"), BAD, ids=[b[0] for b in BAD])
def test_each_offline_signal_fires_on_its_crafted_pair(case, pair, criterion, phrase):
    scores = score_offline(pair)
    assert criterion in scores.failing(), (case, scores)
    assert not scores.usable()
    reasons = " | ".join(scores.reasons_for(criterion))
    assert phrase.casefold() in reasons.casefold(), (case, reasons)


CALIBRATION = Path(__file__).parent / "data" / "qa_calibration.jsonl"


@pytest.mark.skipif(not CALIBRATION.is_file(), reason="the calibration set is not there")
def test_offline_critic_agrees_with_the_hand_labelled_calibration_set():
    """The rules against the hand labels of tests/data/qa_calibration.jsonl (tuned on the "tune" part only):
    per criterion a score >= 3 means pass; "usable" means all four pass."""
    rows = [json.loads(line) for line in CALIBRATION.read_text(encoding="utf-8").splitlines() if line.strip()]
    fields = set(PairContext.__dataclass_fields__)
    agree = {c: 0 for c in (*CRITERIA, "usable")}
    approved = wrongly_approved = 0
    for row in rows:
        scores = score_offline(PairContext(**{k: tuple(v) if k == "flags" else v for k, v in row.items() if k in fields}))
        for criterion in CRITERIA:
            agree[criterion] += (getattr(scores, criterion) >= 3) == bool(row["labels"][criterion])
        agree["usable"] += scores.usable() == row["usable"]
        approved += scores.usable()
        wrongly_approved += scores.usable() and not row["usable"]
    accuracy = {k: v / len(rows) for k, v in agree.items()}
    assert all(a >= 0.88 for a in accuracy.values()), accuracy
    assert accuracy["usable"] >= 0.9, accuracy
    assert wrongly_approved / approved <= 0.15, (wrongly_approved, approved)


def test_scores_are_deterministic_and_name_the_file():
    pair = BAD[6][1]
    assert score_offline(pair) == score_offline(pair)
    assert "names_file: the question contains the file name" in score_offline(pair).reasons
    scores = CriticScores(grounded=5, standalone=3, well_formed=4, useful=2, reasons=("useful: trivia",))
    assert scores.failing() == ["useful"] and not scores.usable() and scores.usable(min_score=2)
    assert scores.as_reply() == {"grounded": 5, "standalone": 3, "well_formed": 4, "useful": 2, "reasons": ["useful: trivia"]}


def test_judge_columns_and_flag_codes():
    for criterion in CRITERIA:
        assert f"critic_{criterion}" in QA_PAIRS_SCHEMA.names
        assert f"low_quality:{criterion}" in FLAG_CODES
    assert JUDGE_FAILED in FLAG_CODES and set(LOW_QUALITY_FLAGS) <= set(FLAG_CODES)
    for column in ("critic_usable", "critic_reasons", "critic_provider", "critic_model", "critic_prompt"):
        assert column in QA_PAIRS_SCHEMA.names


# --- the stage over sample_docs -----------------------------------------------------------------


BAD_PAIRS = {
    "bad0000000000001": ("According to crash_report_frontal_offset.pptx, what is This?", "PEAK DECEL 38.2 9"),
    "bad0000000000002": ("What text is printed on the picture?", "=O 11391"),
}
"""Pairs the generator might have written on a bad day, added to its output so that the critic surely holds some."""


@pytest.fixture(scope="module")
def generated(tmp_path_factory, ingest_copy):
    """sample_docs/ ingested (OCR off), enriched and through qa (plus two bad pairs), not judged yet."""
    root = tmp_path_factory.mktemp("judge") / "root"
    settings = ingest_copy([SAMPLE_DOCS], root)
    for stage in (run_describe, run_correct, run_headers, run_qa):
        stage(settings)
    store = TableStore(Layout(root))
    pairs = store.read("qa_pairs")
    base = next(p for p in pairs if "frontal" in p.source_path)
    bad = [base.model_copy(update={"qa_id": qa_id, "question": q, "answer": a, "generated_question": q, "generated_answer": a,
                                   "flags": [], "flag_reasons": []}) for qa_id, (q, a) in BAD_PAIRS.items()]
    store.write("qa_pairs", pairs + bad)
    return root


@pytest.fixture
def root(generated, tmp_path):
    return copy_root(generated, tmp_path)


def table(root, name="qa_pairs"):
    return pq.read_table(root / "tables" / f"{name}.parquet").to_pylist()


def test_qa_leaves_every_pair_pending_until_judged(root):
    pairs = table(root)
    assert pairs and all(p["status"] == "pending" for p in pairs)
    assert all(p["critic_usable"] is None and p["critic_provider"] is None for p in pairs)


def test_offline_judge_scores_flags_and_approves(root):
    settings = Settings(root=root, qa={"auto_approve_min_precision": 0.9})  # the product's default gate
    report = run_judge(settings)
    pairs = table(root)
    assert report.stage == "judge" and report.items == len(pairs) and report.provider == "heuristic"
    assert report.prompt == "heuristic:judge_qa@ragprep-rules-1"
    assert set(report.flags) <= set(LOW_QUALITY_FLAGS)
    approved = [p for p in pairs if p["status"] == "approved"]
    usable = [p for p in pairs if p["critic_usable"]]
    assert usable and len(usable) < len(pairs), "the critic passes some pairs and holds others"
    assert not {p["qa_id"] for p in approved} & set(BAD_PAIRS)
    heuristic = {"provider": "heuristic"}
    kinds = document_kinds(TableStore(Layout(root)).read("chunks"))  # each document's kind, read off its chunks
    for pair in pairs:
        scores = [pair[f"critic_{c}"] for c in CRITERIA]
        assert all(1 <= s <= 5 for s in scores)
        assert pair["critic_provider"] == "heuristic" and pair["critic_model"] == "ragprep-rules-1"
        assert pair["critic_prompt"] == "heuristic:judge_qa@ragprep-rules-1"
        failing = {f"low_quality:{c}" for c, s in zip(CRITERIA, scores) if s < settings.qa.critic_min_score}
        assert {f for f in pair["flags"] if f.startswith("low_quality:")} == failing
        assert pair["critic_usable"] == (not failing)
        row = {"doc_kind": kinds[pair["doc_id"]], "question_type": pair["question_type"], "generator_rule": pair["generator_rule"]}
        held = offline_precision_short(heuristic, settings, pair_bands(row), cross=cross_kind_bands(row))  # grouped-CV precision
        assert pair["status"] == ("approved" if pair["critic_usable"] and not pair["flags"] and not held else "pending")
        if pair["critic_usable"] and not pair["flags"] and held:
            assert held in pair["critic_reasons"]  # sent to review with its reason
        for flag in failing:
            assert any(r.startswith(f"{flag}: ") and "/5: " in r for r in pair["flag_reasons"]), pair["flag_reasons"]
    assert sum(report.flags.values()) == sum(len([f for f in p["flags"] if f.startswith("low_quality:")]) for p in pairs)
    run_judge(settings)
    assert table(root) == pairs, "judging again gives the same table (no duplicated flags)"


def test_held_out_coverage_auto_approves_only_the_bands_chosen_without_the_document(root):
    from tasks.qa import calibrate, heldout

    def items(usable: bool):  # four labelled documents of the 'report' kind, none of them in the run
        return [calibrate.Labelled(f"x{d}.pptx", usable, {}, None, {"question_type": t, "doc_kind": "report"})
                for d in range(4) for t in ("numeric", "factual", "comparative", "causal") for _ in range(10)]

    got = heldout.held_out_coverage(root, items(True))
    kinds = document_kinds(TableStore(Layout(root)).read("chunks"))
    assert got.auto_pairs and {p["doc_kind"] for p in got.auto_pairs} == {"report"}  # the crash reports, read as reports
    assert set(kinds.values()) - {"report"}, "the sample documents are of several kinds"
    for name, figures in got.by_document.items():
        assert figures["with_auto"] <= figures["with_passed"] <= figures["fact_chunks"] <= figures["chunks"]
        assert not figures["labelled"]
    assert sum(f["with_auto"] for f in got.by_document.values()) > 0
    assert "with an auto-approved pair" in heldout.render_coverage(got)
    assert not heldout.held_out_coverage(root, items(False)).auto_pairs  # the same kind labelled unusable: nothing


def test_approval_threshold_and_auto_approve_setting(root):
    run_judge(Settings(root=root, qa={"critic_min_score": 1}))
    lenient = table(root)
    assert all(p["critic_usable"] for p in lenient)
    assert all(p["status"] == ("pending" if p["flags"] else "approved") for p in lenient)
    run_judge(Settings(root=root, qa={"auto_approve": False}))
    assert all(p["status"] == "pending" for p in table(root))


def test_default_gate_auto_approves_only_the_calibrated_bands():
    from ragprep.settings import QaSettings

    assert QaSettings.model_fields["auto_approve_min_precision"].default == 0.9
    heuristic = {"provider": "heuristic"}
    settings = Settings(qa={"auto_approve_min_precision": 0.9})
    policy = {"auto_approve": {"bands": ["causal"], "cv": {"precision": 0.95},
                               "band_cv": {"numeric": {"precision": 0.8, "approved": 40}}}}
    assert offline_precision_short(heuristic, settings, "causal", policy) == ""
    held = offline_precision_short(heuristic, settings, "numeric", policy)
    assert held.startswith("review: 'numeric'") and "0.80 on 40 held-out pairs" in held
    short = {"auto_approve": {"bands": ["causal"], "cv": {"precision": 0.79}}}  # the procedure missed the bar
    assert "every pair waits for review" in offline_precision_short(heuristic, settings, "causal", short)
    assert offline_precision_short({"provider": "openai"}, settings, "numeric", policy) == ""  # a model critic: not gated
    assert offline_precision_short(heuristic, Settings(qa={"auto_approve_min_precision": 0}), "numeric", policy) == ""


def write_decisions(path, decisions):
    path.write_text(json.dumps({"format": "ragprep-review-decisions/1", "build": "test", "decisions": decisions}))
    return path


def test_expert_decisions_win_over_the_critic_and_reach_the_dataset(root, tmp_path):
    settings = Settings(root=root)
    run_judge(settings)
    pairs = table(root)
    held = next(p for p in pairs if p["qa_id"] in BAD_PAIRS)  # the critic holds it
    passed, edited = [p for p in pairs if p["status"] == "approved"][:2]  # the critic passes them
    apply_decisions_file(write_decisions(tmp_path / "d.json", [
        {"qa_id": held["qa_id"], "decision": "approve", "reviewer": "kim"},
        {"qa_id": passed["qa_id"], "decision": "reject", "reviewer": "kim"},
        {"qa_id": edited["qa_id"], "decision": "edit", "question": "What was edited in the FO-2024-017 test?",
         "answer": "nothing in this chunk", "reviewer": "lee"},
    ]), root)
    for rebuild in (lambda: None, lambda: run_judge(settings)):
        rebuild()
        now = {p["qa_id"]: p for p in table(root)}
        assert passed["qa_id"] not in now, "a rejected pair stays rejected whatever the critic says"
        assert now[held["qa_id"]]["status"] == "approved" and now[held["qa_id"]]["review_decision"] == "approve"
        assert now[edited["qa_id"]]["status"] == "approved" and now[edited["qa_id"]]["question"] == "What was edited in the FO-2024-017 test?"
    assert now[edited["qa_id"]]["critic_usable"] is False, "the critic scores the edited text, and the edit still stands"
    kept = now[held["qa_id"]]
    assert kept["critic_usable"] is False and any(f.startswith("low_quality:") for f in kept["flags"])
    result = build_version(settings, quality_gate(settings)[0])
    assert result.published, result.failed_expectations  # low_quality flags are allowed flags
    version = {p["qa_id"]: p for p in pq.read_table(root / "datasets" / "versions" / result.version_id / "qa_pairs").to_pylist()}
    assert held["qa_id"] in version and version[held["qa_id"]]["critic_usable"] is False
    assert all(p["status"] == "approved" for p in version.values())
    assert {p["critic_provider"] for p in version.values()} == {"heuristic"}, "scores reach the dataset version"
    run_qa(settings)  # a later build regenerates the pairs: the decisions apply again, and the judge keeps them
    run_judge(settings)
    now = {p["qa_id"]: p for p in table(root)}
    assert passed["qa_id"] not in now and now[edited["qa_id"]]["status"] == "approved"
    assert now[edited["qa_id"]]["question"] == "What was edited in the FO-2024-017 test?"


# --- the LLM critic, against the fake OpenAI-compatible server -----------------------------------


def critic_responder(body, api):
    """Scores like a model would: a question naming a test ID is standalone; the rest are not."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    assert "Chunk:" in user and "Question:" in user and "Answer:" in user
    question = re.search(r"^Question: (.*)$", user, re.MULTILINE).group(1)
    named = bool(re.search(r"[A-Z]{2}-\d{4}-\d{3}", question))
    reply = {"grounded": 5, "standalone": 5 if named else 2, "well_formed": 4, "useful": 4,
             "reasons": [] if named else ["standalone: no test or report is named"]}
    return "```json\n" + json.dumps(reply) + "\n```"


def test_llm_critic_against_an_openai_compatible_server(root, server):
    server.responder = critic_responder
    settings = Settings(root=root, llm={"provider": "openai", "model": "critic-llm", "base_url": server.openai_base_url})
    report = run_judge(settings)
    pairs = table(root)
    assert server.request_count == len(pairs) and report.provider == "openai" and report.prompt == "judge_qa@1"
    system = server.requests[0]["json"]["messages"][0]["content"]
    assert "grounded" in system and "standalone" in system and "well_formed" in system and "useful" in system
    for pair in pairs:
        assert pair["critic_provider"] == "openai" and pair["critic_model"] == "critic-llm"
        assert pair["critic_prompt"] == "judge_qa@1"
        named = bool(re.search(r"[A-Z]{2}-\d{4}-\d{3}", pair["question"]))
        assert pair["critic_standalone"] == (5 if named else 2)
        assert ("low_quality:standalone" in pair["flags"]) == (not named)
        assert pair["status"] == ("approved" if named and not pair["flags"] else "pending")
        if not named:
            assert "standalone: no test or report is named" in pair["critic_reasons"]
    assert any(p["status"] == "approved" for p in pairs) and any(p["status"] == "pending" for p in pairs)
    calls = server.request_count
    run_judge(settings)
    assert server.request_count == calls, "unchanged pairs: answered from the cache"


@pytest.mark.parametrize("reply", ["The pair looks fine to me.", json.dumps({"grounded": 7, "standalone": 5, "well_formed": 5,
                                                                            "useful": 5})])
def test_an_unusable_critic_reply_leaves_the_pair_pending(root, server, reply):
    server.responder = lambda body, api: reply
    settings = Settings(root=root, llm={"provider": "openai", "model": "critic-llm", "base_url": server.openai_base_url})
    report = run_judge(settings)
    pairs = table(root)
    assert report.flags == {JUDGE_FAILED: len(pairs)}
    assert server.request_count == 2 * len(pairs), "one repair attempt per pair"
    for pair in pairs:
        assert pair["status"] == "pending" and JUDGE_FAILED in pair["flags"]
        assert any(r.startswith(f"{JUDGE_FAILED}: invalid_output") for r in pair["flag_reasons"])
        assert pair["critic_usable"] is None and all(pair[f"critic_{c}"] is None for c in CRITERIA)
        assert pair["critic_provider"] == "openai"
    server.responder = critic_responder  # a failed pair is judged again on the next run (failures are not cached)
    run_judge(settings)
    assert not any(JUDGE_FAILED in p["flags"] for p in table(root))


def test_judge_needs_qa_pairs(tmp_path):
    from ragprep.tables import MissingTablesError

    shutil.rmtree(tmp_path, ignore_errors=True)
    with pytest.raises(MissingTablesError):
        run_judge(Settings(root=tmp_path))


@pytest.mark.skipif(not CALIBRATION.is_file(), reason="the calibration set is not there")
def test_offline_critic_precision_and_recall_on_the_heldout_part(capsys):
    """The held-back part (never tuned on): precision and recall of "usable" stay at or above what was measured
    when the rules were written (0.853 and 0.879 on 94 heldout pairs)."""
    rows = [json.loads(line) for line in CALIBRATION.read_text(encoding="utf-8").splitlines() if line.strip()]
    heldout = [row for row in rows if row["part"] == "heldout"]
    fields = set(PairContext.__dataclass_fields__)
    predicted = [score_offline(PairContext(**{k: tuple(v) if k == "flags" else v for k, v in row.items() if k in fields})).usable()
                 for row in heldout]
    true_positive = sum(p and row["usable"] for p, row in zip(predicted, heldout))
    precision = true_positive / sum(predicted)
    recall = true_positive / sum(row["usable"] for row in heldout)
    with capsys.disabled():
        print(f"\ncritic on {len(heldout)} heldout pairs: precision {precision:.2f}, recall {recall:.2f}")
    assert len(heldout) >= 60
    assert precision >= 0.85 and recall >= 0.87  # measured: 29/34 = 0.853, 29/33 = 0.879
