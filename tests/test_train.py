"""Training: the numpy query adapter and linear re-ranker, the model store, and the optional [train] fine-tunes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragprep.engines.query_memo import QueryMemo
from ragprep.storage import Layout
from tasks.train.adapter import (
    AdaptedEmbedder,
    AdapterConfig,
    RankingSet,
    TrainingPairs,
    apply_adapter,
    mrr_at_10,
    normalise_rows,
    train_adapter,
)
from tasks.train.models import ADAPTER, LINEAR_RERANKER, latest_model, load_model
from tasks.train.reranker import EmbedderReranker, LogisticModel, PairFeatures, fit_logistic, windows
from tasks.train.st import sentence_transformers_missing
from tests.downstream import HashingEmbedder, private_copy, use_hashing_embedder


def synthetic(seed=0, n=300, m=150, d=24, distortion=1.5, noise=0.8):
    """Questions whose vectors are a distorted, noisy view of their gold passage's vector."""
    rng = np.random.default_rng(seed)
    passages = normalise_rows(rng.normal(size=(m, d))).astype(np.float32)
    mix = np.eye(d) + distortion * rng.normal(size=(d, d)) / np.sqrt(d)
    gold = rng.integers(0, m, size=n)
    queries = normalise_rows(passages[gold] @ mix + noise * rng.normal(size=(n, d)) / np.sqrt(d)).astype(np.float32)
    return queries, passages, gold


def test_the_adapter_improves_training_mrr_on_a_synthetic_case():
    queries, passages, gold = synthetic()
    pairs = TrainingPairs(queries, gold, [np.array([], dtype=int)] * len(gold), passages)
    ranking = RankingSet(queries, passages, gold)
    before = mrr_at_10(None, ranking)
    result = train_adapter(pairs, AdapterConfig(steps=150, eval_every=50), ranking)
    after = mrr_at_10(result.weights, ranking)
    assert after > before + 0.2, (before, after)
    assert result.history[0]["train_mrr_10"] == pytest.approx(before) and result.selected_by == "last_step"
    assert result.weights.shape == (24, 24) and result.weights.dtype == np.float32


def test_validation_selection_never_keeps_a_worse_step():
    queries, passages, gold = synthetic(seed=1)
    val_q, _, val_gold = synthetic(seed=1, n=60)
    pairs = TrainingPairs(queries, gold, [np.array([], dtype=int)] * len(gold), passages)
    val = RankingSet(val_q, passages, val_gold)
    result = train_adapter(pairs, AdapterConfig(steps=100, eval_every=20), RankingSet(queries, passages, gold), val)
    assert result.selected_by == "selection_mrr_10"
    assert mrr_at_10(result.weights, val) >= mrr_at_10(None, val)
    identity = train_adapter(pairs, AdapterConfig(steps=1, learning_rate=1e-9, eval_every=1), RankingSet(queries, passages, gold))
    assert np.allclose(identity.weights, np.eye(24), atol=1e-6)


def test_an_adapter_that_hurts_held_out_questions_is_not_kept():
    queries, passages, gold = synthetic(seed=3, n=80, distortion=0.0, noise=0.1)  # vanilla is already right
    shuffled = np.random.default_rng(0).permutation(gold)  # training labels that teach the wrong chunks
    pairs = TrainingPairs(queries, shuffled, [np.array([], dtype=int)] * len(gold), passages)
    held_q, _, held_gold = synthetic(seed=3, n=40, distortion=0.0, noise=0.1)
    result = train_adapter(pairs, AdapterConfig(steps=60, eval_every=10, learning_rate=1e-2), RankingSet(queries, passages, shuffled),
                           RankingSet(held_q, passages, held_gold))
    assert result.best_step == 0 and np.allclose(result.weights, np.eye(passages.shape[1]))


def test_held_out_documents_are_a_stable_share_never_all_or_none():
    from tasks.train.run import held_out_documents

    docs = {f"doc{i}" for i in range(20)}
    held = held_out_documents(docs, 0.25)
    assert len(held) == 5 and held == held_out_documents(docs, 0.25) and held <= docs
    assert len(held_out_documents({"a", "b"}, 0.9)) == 1  # never every document
    assert held_out_documents({"a"}, 0.25) == set() and held_out_documents(docs, 0.0) == set()


def test_a_model_that_is_not_published_leaves_latest_alone(tmp_path):
    from tasks.train.models import save_model

    layout = Layout(tmp_path)
    save_model(layout, ADAPTER, "good", {"model_id": "good"}, lambda d: (d / "x").write_text("1"))
    save_model(layout, ADAPTER, "worse", {"model_id": "worse"}, lambda d: (d / "x").write_text("2"), publish=False)
    assert latest_model(layout, ADAPTER).model_id == "good" and (tmp_path / "models" / ADAPTER / "worse" / "x").exists()
    save_model(layout, ADAPTER, "good", {"model_id": "good"}, lambda d: (d / "x").write_text("3"), publish=False)
    assert latest_model(layout, ADAPTER) is None  # the published id lost on a rerun: nothing of it stays in use


def test_hard_negatives_enter_the_loss():
    queries, passages, gold = synthetic(seed=2, n=64)
    negatives = [np.array([(g + 1) % len(passages), (g + 2) % len(passages)]) for g in gold]
    result = train_adapter(TrainingPairs(queries, gold, negatives, passages), AdapterConfig(steps=30, batch_size=8, eval_every=10),
                           RankingSet(queries, passages, gold))
    losses = [h["loss"] for h in result.history if h["loss"] is not None]
    assert losses and all(np.isfinite(losses))


def test_adapted_embedder_maps_queries_only():
    base = HashingEmbedder()
    weights = np.eye(base.dim, dtype=np.float32)[::-1]  # a permutation
    adapted = AdaptedEmbedder(QueryMemo(base), weights, "x")
    texts = ["crash pulse", "seat belt"]
    assert np.allclose(adapted.passages(texts), base.passages(texts))
    assert np.allclose(adapted.queries(texts), apply_adapter(weights, base.queries(texts)))
    memo = QueryMemo(base)
    calls = base.query_calls
    memo.queries(texts)
    memo.queries(texts + ["new"])
    assert base.query_calls - calls == 3  # each text embedded once through the memo
    with pytest.raises(ValueError):
        AdaptedEmbedder(base, np.eye(3), "bad")


def test_linear_reranker_learns_a_separable_case(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 4)).astype(np.float32)
    y = (x[:, 1] + 0.5 * x[:, 2] > 0).astype(np.float32)
    model = fit_logistic(x, y, steps=300)
    accuracy = float(((model.decision(x) > 0) == (y > 0)).mean())
    assert accuracy > 0.95
    model.save(tmp_path)
    again = LogisticModel.load(tmp_path)
    assert np.allclose(again.decision(x), model.decision(x), atol=1e-5)


def test_windows_and_the_embedder_cross_score():
    short = "Test Name: FO-1\n---\n# Setup\nBarrier speed 64 km/h"
    assert windows(short) == [short]
    long = "Test Name: FO-1\nRegion: EU\n---\n" + " ".join(f"w{i}" for i in range(400))
    pieces = windows(long, window_words=100, overlap=20)
    assert len(pieces) > 3 and all(p.startswith("Test Name: FO-1\nRegion: EU") for p in pieces)
    reranker = EmbedderReranker(HashingEmbedder())
    scores = reranker.score_pairs(["w390 w391"], [long], ["t"])
    full = PairFeatures(HashingEmbedder()).cosines(["w390 w391"], [long])[0]
    assert scores[0] > full[0]  # the late window matches better than the whole text


def test_train_retriever_and_reranker_save_models_with_cards(version_root, tmp_path, monkeypatch):
    from tasks.train.run import run_train

    embedder = use_hashing_embedder(monkeypatch)
    settings = private_copy(version_root, tmp_path)
    report = run_train(settings, "retriever", steps=40)
    stored = load_model(Path(report.path))
    card = json.loads((stored.path / "card.json").read_text())
    assert card["embedder"] == embedder.name and card["version_id"] == report.version_id and card["steps"] == 40
    assert card["counts"]["train_questions"] > 0 and "fit_mrr_10_at_kept_step" in card["metrics"]
    # the step is chosen on the questions of held-out documents, which the adapter never trained on
    assert card["counts"]["selection_questions"] > 0 and card["held_out_documents"]
    metrics, counts = card["metrics"], card["counts"]
    # judged only on held-out questions that are not template-shaped, and only when there are enough of them
    enough = counts["held_out_not_template_shaped"] >= settings.train.adapter_min_judge_questions
    assert counts["selection_questions"] == (counts["held_out_not_template_shaped"] if enough else counts["held_out_questions"])
    published = enough and metrics["selection_mrr_10_at_kept_step"] > metrics["selection_mrr_10_before"]
    assert card["published"] is published is report.published
    latest = latest_model(Layout(settings.root), ADAPTER)
    assert (latest is not None and latest.model_id == report.model_id) is published
    verdict = card["notes"][0]
    assert verdict.startswith("published" if published else "NOT PUBLISHED")
    assert f"trained {metrics['selection_mrr_10_at_kept_step']:.3f} vs vanilla {metrics['selection_mrr_10_before']:.3f}" in verdict
    if not enough:
        assert f"only {counts['held_out_not_template_shaped']} of the {counts['held_out_questions']}" in verdict
        assert "--judge-queries" in verdict
    assert np.load(stored.path / "adapter.npy").shape == (embedder.dim, embedder.dim)
    assert (settings.root / "exports" / "training" / report.version_id / "card.json").exists()  # exported on the way
    again = run_train(settings, "retriever", steps=40)
    assert again.model_id == report.model_id  # same inputs, same model id
    rerank = run_train(settings, "reranker", steps=100)
    linear = latest_model(Layout(settings.root), LINEAR_RERANKER)
    assert (linear is not None and linear.model_id == rerank.model_id) is rerank.published
    assert set(rerank.card["metrics"]) >= {"train_gold_first", "train_gold_first_cosine"}


def test_template_shaped_questions_name_their_document_standard_title_or_quote_a_name():
    from tasks.dataset.snapshot import ChunkRecord
    from tasks.train.judge import template_shaped

    def chunk(path, title):
        return ChunkRecord("c", "d", path, title, "train", "pdf", "", "")

    fmvss = chunk("/c/pdf_auto_fmvss301_fuel_integrity.pdf", "§ 571.301 Standard No. 301")
    assert template_shaped('According to the "DOT § 571.301" document, what does fuel spillage mean?', fmvss)
    assert template_shaped("What does FMVSS 301 require after the rear impact?", fmvss) == "names its standard"
    assert template_shaped("How much fuel may spill after a barrier crash?", fmvss) == ""
    deck = chunk("/s/crash_report_side_pole.pptx", "Test Setup")
    assert template_shaped("Which dummy sits in the side pole crash report?", deck) == "names its file"
    assert template_shaped("What does the test setup slide list?", deck) == "names its title"
    ko = chunk("/c/pdf_ko_assembly_review_report.pdf", "검토보고")
    assert template_shaped("'기후위기 대응 법률안' 문서의 '2기 탄중위' 표에서 직능별 현황은?", ko) == "quotes a name"
    assert template_shaped("지방위원회 위원 위촉 시 누구의 추천을 받도록 했나요?", ko) == ""


def test_the_verdict_refuses_an_adapter_judged_only_on_template_shaped_questions():
    from tasks.train.judge import QueryFileJudgement
    from tasks.train.run import _verdict

    class Select:
        lines = [{}] * 43

    first, kept = {"val_mrr_10": 0.492}, {"val_mrr_10": 0.625}
    published, note = _verdict(Select(), "43 questions of 5 held-out documents", first, kept, None, (4, 43), 20)
    assert not published and note.startswith("NOT PUBLISHED: only 4 of the 43 held-out questions are not template-shaped")
    assert "trained 0.625 vs vanilla 0.492" in note and "--judge-queries" in note
    assert _verdict(Select(), "30 not template-shaped questions", first, kept, None, None, 20)[0]  # enough: judged there
    worse = QueryFileJudgement("tests/data/queries.jsonl", 115, vanilla_mrr_10=0.86, trained_mrr_10=0.81)
    published, note = _verdict(Select(), "", first, kept, worse, None, 20)  # the query file overrules the held-out figure
    assert not published and "trained 0.810 vs vanilla 0.860 on 115 questions of queries.jsonl" in note
    better = QueryFileJudgement("q.jsonl", 10, vanilla_mrr_10=0.5, trained_mrr_10=0.6)
    assert _verdict(Select(), "", first, {"val_mrr_10": 0.1}, better, (0, 43), 20) == (
        True, "published (LATEST): answer-in-hit MRR@10 trained 0.600 vs vanilla 0.500 on 10 questions of q.jsonl")


def test_judge_queries_need_the_search_index(version_root, tmp_path, monkeypatch):
    from tasks.train.run import TrainError, run_train

    use_hashing_embedder(monkeypatch)
    settings = private_copy(version_root, tmp_path)
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q1", "question": "Which dummy?", "lang": "en", "family": "decks",
                                   "document": "crash_report_side_pole.pptx", "answer_keys": ["WorldSID"]}) + "\n")
    settings = settings.model_copy(update={"train": settings.train.model_copy(update={"adapter_judge_queries": queries})})
    with pytest.raises(TrainError, match=r"adapter_judge_queries .*q\.jsonl.* scored over the search index: .*ragprep index"):
        run_train(settings, "retriever", steps=5)


def test_unknown_backend_and_missing_extra_are_clear(version_root, tmp_path, monkeypatch):
    from tasks.train.run import TrainError, run_train

    use_hashing_embedder(monkeypatch)
    settings = private_copy(version_root, tmp_path)
    with pytest.raises(TrainError, match="backend"):
        run_train(settings, "retriever", backend="nope")
    if sentence_transformers_missing():
        with pytest.raises(TrainError, match=r"\[train\] extra"):
            run_train(settings, "reranker", backend="cross-encoder")


needs_train_extra = pytest.mark.skipif(sentence_transformers_missing() is not None,
                                       reason=sentence_transformers_missing() or "")


@pytest.mark.slow
@needs_train_extra
def test_sentence_transformers_fine_tunes_tiny(version_root, tmp_path, monkeypatch):
    from tasks.train.run import run_train
    from tasks.train.st import CrossEncoderReranker

    use_hashing_embedder(monkeypatch)
    settings = private_copy(version_root, tmp_path)
    settings = settings.model_copy(update={"train": settings.train.model_copy(update={"st_batch_size": 4})})
    retriever = run_train(settings, "retriever", steps=2, backend="sentence-transformers")
    assert (tmp_path / "root" / "models" / "retriever-st" / retriever.model_id / "modules.json").exists()
    from ragprep.engines.embedders import SentenceTransformerEmbedder

    vectors = SentenceTransformerEmbedder(retriever.path).queries(["seat belt pretensioner"])
    assert vectors.shape[0] == 1 and abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-4
    cross = run_train(settings, "reranker", steps=2, backend="cross-encoder")
    scores = CrossEncoderReranker(tmp_path / "root" / "models" / "reranker-cross-encoder" / cross.model_id, cross.model_id
                                  ).score_pairs(["q"], ["a passage"], ["t"])
    assert scores.shape == (1,) and np.isfinite(scores).all()
