"""Training exports: they load with the real `datasets` loader, hold nothing of the test split, and draw reproducibly."""

from __future__ import annotations

import json

import pytest

from tasks.dataset.snapshot import load_snapshot
from tasks.dataset.versions import dataset_store, find_version, read_version_table
from tasks.export.training import export_training
from tasks.mmdoc.negatives import normalised
from tests.downstream import private_copy, use_hashing_embedder

FILES = ("retriever_train.jsonl", "reranker_train.jsonl", "sft_train.jsonl", "sft_mm_train.jsonl")


@pytest.fixture
def exported(version_root, tmp_path, monkeypatch):
    use_hashing_embedder(monkeypatch)
    settings = private_copy(version_root, tmp_path)
    return settings, export_training(settings)


def lines(folder, name):
    path = folder / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def test_every_export_loads_with_the_datasets_json_loader(exported):
    datasets = pytest.importorskip("datasets")
    settings, result = exported
    folder = settings.root / "exports" / "training" / result.version_id
    assert str(folder) == result.out_dir
    for name in FILES:
        assert (folder / name).exists(), name
        loaded = datasets.load_dataset("json", data_files=str(folder / name), split="train", cache_dir=str(settings.root / "hf"))
        assert loaded.num_rows == result.card["files"][name] > 0
    retriever = datasets.load_dataset("json", data_files={"train": str(folder / "retriever_train.jsonl")}, split="train",
                                      cache_dir=str(settings.root / "hf"))
    assert {"query", "pos", "neg"} <= set(retriever.column_names)
    assert all(len(pos) == 1 for pos in retriever["pos"])
    sft = datasets.load_dataset("json", data_files=str(folder / "sft_train.jsonl"), split="train", cache_dir=str(settings.root / "hf"))
    assert [m["role"] for m in sft[0]["messages"]] == ["system", "user", "assistant"]
    mm = lines(folder, "sft_mm_train.jsonl")
    for line in mm:
        assert line["messages"][1]["content"].count("<image>") == len(line["images"])
        assert all((folder / image).exists() for image in line["images"])
    card = json.loads((folder / "card.json").read_text())
    assert card["version_id"] == result.version_id and card["excluded_splits"] == ["test"]
    assert card["settings"]["negative_ranks"] == [3, 30] and card["counts"]["questions"]["train"] > 0


def test_no_test_question_or_test_chunk_in_any_export(exported):
    settings, result = exported
    snapshot = load_snapshot(settings)
    folder = settings.root / "exports" / "training" / result.version_id
    test_chunks = [c for c in snapshot.chunks if c.split == "test"]
    test_questions = [q for q in snapshot.questions if q.split == "test"]
    assert test_chunks and test_questions, "the sample version needs test items for this test to mean anything"
    test_chunk_ids = {c.chunk_id for c in test_chunks}
    test_texts = {c.text_v1 for c in test_chunks} | {c.text_v0 for c in test_chunks}
    test_question_texts = {q.question for q in test_questions}
    seen = 0
    for name in sorted(p.name for p in folder.glob("*.jsonl")):
        for line in lines(folder, name):
            seen += 1
            assert line.get("split", "train") in ("train", "val")
            assert line.get("qa_id") not in {q.qa_id for q in test_questions}
            ids = {line.get("pos_id"), line.get("chunk_id"), line.get("gold_id"), *line.get("neg_ids", []), *line.get("context_ids", [])}
            assert not ids & test_chunk_ids, (name, ids & test_chunk_ids)
            texts = [*line.get("pos", []), *line.get("neg", []), line.get("passage")]
            assert not set(texts) & test_texts, name
            query = line.get("query") or line.get("messages", [{}, {}, {}])[1].get("content", "")
            assert not any(q == query or f"Question: {q}" in query for q in test_question_texts), name
            for message in line.get("messages", []):
                assert not any(t in message["content"] for t in test_texts if len(t) > 40), name
    assert seen > 0
    # the multimodal export: no candidate set of a test question, and no quote of a test chunk
    store = dataset_store(settings)
    quotes = read_version_table(store, find_version(store, result.version_id), "quotes")
    quote_chunk = dict(zip(quotes.column("quote_id").to_pylist(), quotes.column("chunk_id").to_pylist()))
    mm_lines = [line for path in (folder / "mmdocrag").glob("*.jsonl") for line in lines(path.parent, path.name)]
    assert mm_lines
    for line in mm_lines:
        assert line["ragprep_q_key"] not in {q.qa_id for q in test_questions}
        assert not {quote_chunk[q["ragprep_quote_id"]] for q in line["text_quotes"] + line["img_quotes"]} & test_chunk_ids


def test_hard_negatives_come_from_the_rank_window_and_pass_the_guards(exported):
    settings, result = exported
    snapshot = load_snapshot(settings)
    folder = settings.root / "exports" / "training" / result.version_id
    answers = {q.qa_id: normalised(q.answer) for q in snapshot.questions}
    card = result.card["counts"]["retriever"]
    assert card["guard"]["examined"] >= card["negatives"]
    assert card["guard"]["skipped_answer"] + card["guard"]["skipped_margin"] >= 0
    for line in lines(folder, "retriever_train.jsonl"):
        assert len(line["neg"]) <= settings.train.negatives_per_question
        assert line["pos_id"] not in line["neg_ids"] and len(set(line["neg_ids"])) == len(line["neg_ids"])
        answer = answers[line["qa_id"]]
        if len(answer) >= 2:
            assert not any(f" {answer} " in f" {normalised(text)} " for text in line["neg"])


def test_reranker_pairs_are_the_seed_procedure_and_reproducible(version_root, tmp_path, monkeypatch):
    use_hashing_embedder(monkeypatch)
    settings = private_copy(version_root, tmp_path)
    first = export_training(settings, out_dir=tmp_path / "a")
    second = export_training(settings, out_dir=tmp_path / "b")
    for name in ("reranker_train.jsonl", "retriever_train.jsonl", "sft_train.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    groups: dict[str, list[dict]] = {}
    for line in lines(tmp_path / "a", "reranker_train.jsonl"):
        groups.setdefault(line["qa_id"], []).append(line)
    assert groups
    for group in groups.values():
        assert group[0]["label"] == 1 and sum(g["label"] for g in group) == 1
        assert 1 <= len(group) <= 1 + settings.train.reranker_negatives
        assert len({g["chunk_id"] for g in group}) == len(group)
    reseeded = settings.model_copy(update={"train": settings.train.model_copy(update={"seed": 7})})
    third = export_training(reseeded, out_dir=tmp_path / "c")
    assert (tmp_path / "c" / "reranker_train.jsonl").read_bytes() != (tmp_path / "a" / "reranker_train.jsonl").read_bytes()
    assert first.card["files"] == second.card["files"] == third.card["files"]
