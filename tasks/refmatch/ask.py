"""``ragprep ask``: retrieve from the search index, re-rank, answer, and cite every segment of the answer.

1. The question is searched in the persistent index (``tasks/index/store.py``, built by
   ``ragprep index``: passages with their section paths) with its own embedder and the fusion of its
   language; the best ``rerank_depth`` passages are re-ranked by the trained re-ranker when
   ``ragprep train reranker`` saved one, else by the embedder's cross-scoring
   (``tasks/train/reranker.py``), and the best ``k`` are the passages answered from.
2. The configured LLM provider answers from them (prompt ``answer_question``; the heuristic provider
   quotes the best passage's sentences that match the question, or says that none does).
3. The reference matcher links each segment of the answer to a passage (its passage id, chunk,
   document, page/slide and section path), or marks it unsupported.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from ragprep.engines.embedder import Embedder
from ragprep.engines.embedders import embeddings_cache_dir
from ragprep.engines.generator import Generation, Generator
from ragprep.kept import file_stamp, kept
from ragprep.matching.matcher import MatchOptions, MatchResult, match_answer, naive_calls
from ragprep.matching.scoring import Candidate, SpanScorer
from ragprep.prompts import load_prompt
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.untrusted import added_suspicious
from tasks.index.store import SearchHit
from tasks.refmatch.answer import EXTRACTIVE_LABEL, Passage, answer_body, answer_question
from tasks.refmatch.scoring import build_scorer

RERANK_DEPTH = 20
"""First-stage chunks the re-ranker re-orders before the best ``k`` are kept."""


class AskSegment(BaseModel):
    """One segment of the answer and what it cites (``passage`` is the 1-based passage number, None when unsupported)."""

    text: str
    status: str
    score: float
    passage: int | None
    passage_id: str | None
    chunk_id: str | None
    document: str | None
    where: str | None
    title: str | None
    section: str | None


class AskPassage(BaseModel):
    """A passage the answer was written from."""

    number: int
    passage_id: str
    chunk_id: str
    document: str
    where: str
    title: str
    section: str
    source_path: str
    retrieval_score: float
    rerank_score: float


class AskResult(BaseModel):
    """The answer, its segments with citations, the passages and what matching cost."""

    question: str
    answer: str
    label: str
    provider: str
    model: str
    prompt: str
    flag: str | None
    passages: list[AskPassage]
    segments: list[AskSegment]
    reranker: str
    scorer: str
    encoder: str = ""
    threshold: float
    scorer_calls: int
    naive_calls: int
    naive_calls_corpus: int
    corpus_chunks: int
    seconds: float
    warnings: list[str]

    def lines(self) -> list[str]:
        """The answer as text: a line per segment with its citation, then the passages and the cost."""
        out = [f"Question: {self.question}", self.label or f"Answer ({self.provider}, {self.model}, {self.prompt}):"]
        for n, segment in enumerate(self.segments, start=1):
            out.append(f"{n}. {' '.join(segment.text.split())}")
            if segment.passage is not None and segment.status == "supported":
                out.append(f"   -> [{segment.passage}] {segment.document}, {segment.where or '-'}: "
                           f"{segment.section or segment.title} (score {segment.score:.2f})")
            elif segment.passage is not None:
                out.append(f"   -> UNSUPPORTED: best [{segment.passage}] {segment.document}, {segment.where or '-'} scores "
                           f"{segment.score:.2f} < {self.threshold:.2f}")
            else:
                out.append(f"   -> UNSUPPORTED: no passage supports it (best score {segment.score:.2f})")
        if self.flag:
            out.append(f"(the provider's reply was flagged: {self.flag})")
        out.append("Passages:")
        out += [f"  [{p.number}] {p.document}, {p.where or '-'}: {p.section or p.title} (re-rank {p.rerank_score:.3f})"
                for p in self.passages]
        out.append(f"Retrieved with {self.encoder or '-'}; re-ranked by {self.reranker}.")
        out.append(f"Matched with {self.scorer}: {self.scorer_calls} scorer calls; every span x every passage would take "
                   f"{self.naive_calls}, x every indexed passage {self.naive_calls_corpus}. {self.seconds:.1f}s in all.")
        return out


def rerank(question: str, hits: Sequence[SearchHit], reranker, k: int) -> list[tuple[SearchHit, float]]:
    """The best ``k`` hits by the re-ranker's score (ties keep the retrieval order)."""
    if not hits:
        return []
    texts = [f"{h.context}\n\n{h.text}" if h.context else h.text for h in hits]  # what the index embedded
    scores = reranker.score_pairs([question] * len(hits), texts, [h.title for h in hits])
    order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))[:k]
    return [(hits[i], float(scores[i])) for i in order]


def _reranker(settings: Settings, embedder: Embedder):
    from tasks.train.loading import trained_reranker
    from tasks.train.reranker import EmbedderReranker

    found = trained_reranker(Layout(settings.root), embedder)
    return found[0] if found is not None else EmbedderReranker(embedder)


def models_stamp(layout: Layout) -> tuple:
    """What the trained models under the root are now (each kind's ``LATEST`` pointer): a kept re-ranker or scorer
    is rebuilt when one changes."""
    return tuple((p.parent.name, file_stamp(p)) for p in sorted(layout.models_dir.glob("*/LATEST")))


def kept_reranker(settings: Settings, embedder: Embedder):
    """``_reranker``, built once per process while the index's embedder and the trained models stay the same."""
    key = (id(embedder), str(Path(settings.root).resolve()), models_stamp(Layout(settings.root)))
    return kept("ask-reranker", key, lambda: _reranker(settings, embedder))


SCORER_REUSE = 500
"""Answers one kept scorer matches before a fresh one replaces it (the embedded scorer remembers every sentence
vector it embedded; a long-running ``ragprep serve`` must not grow without bound)."""
_scorer_uses = itertools.count()


def kept_scorer(settings: Settings, embedder: Embedder) -> SpanScorer:
    """``build_scorer``, built once per process for the same embedder, models and ``refmatch`` settings (the
    embedded scorer keeps the window vectors it has read), and again after ``SCORER_REUSE`` answers."""
    key = (id(embedder), str(Path(settings.root).resolve()), models_stamp(Layout(settings.root)),
           settings.refmatch.model_dump_json(), next(_scorer_uses) // SCORER_REUSE)
    return kept("ask-scorer", key, lambda: build_scorer(settings, embedder))


def _generate(settings: Settings, question: str, passages: list[Passage]) -> Generation:
    prompt = load_prompt("answer_question")

    async def go() -> Generation:
        generator = Generator(settings, "llm", cache_dir=Layout(settings.root).llm_cache_dir)
        try:
            return await answer_question(question, passages, generator, prompt)
        finally:
            await generator.aclose()

    return asyncio.run(go())


def match_options(settings: Settings) -> MatchOptions:
    """The matcher's options from ``refmatch`` settings."""
    return MatchOptions.from_settings(settings.refmatch)


def cite(question: str, answer: str, ranked: list[tuple[SearchHit, float]], scorer: SpanScorer,
         options: MatchOptions) -> tuple[MatchResult, list[AskSegment]]:
    """Match ``answer`` to the passages and describe each segment's citation."""
    candidates = [Candidate(h.passage_id, h.text, h.section or h.title) for h, _ in ranked]
    result = match_answer(question, answer, candidates, scorer, options)
    number = {h.passage_id: n for n, (h, _) in enumerate(ranked, start=1)}
    hits = {h.passage_id: h for h, _ in ranked}
    segments = []
    for segment in result.segments:
        hit = hits.get(segment.chunk_id) if segment.chunk_id else None  # the matcher's id is the passage id here
        segments.append(AskSegment(
            text=segment.text, status=segment.status, score=segment.score, passage=number.get(segment.chunk_id or ""),
            passage_id=hit.passage_id if hit else None, chunk_id=hit.chunk_id if hit else None,
            document=hit.document if hit else None, where=hit.where if hit else None, title=hit.title if hit else None,
            section=hit.section if hit else None,
        ))
    return result, segments


def ask(settings: Settings, question: str, k: int | None = None, variant: str | None = None) -> AskResult:
    """Answer ``question`` from the index with citations (see the module doc)."""
    from tasks.index.loaded import index_embedder, opened_index
    from tasks.index.search import rank_passages, staleness_warnings
    from tasks.index.store import index_folder
    from tasks.train.loading import query_encoder

    started = time.perf_counter()
    k = k or settings.refmatch.top_k
    index = opened_index(index_folder(settings, variant or settings.index.variant))  # loaded once per process
    layout = Layout(settings.root)
    embedder = index_embedder(index.manifest.embedder, settings, embeddings_cache_dir(settings))
    encoder, encoder_name = query_encoder(layout, embedder)
    hits = rank_passages(index, settings.index, question, max(k, RERANK_DEPTH), settings.index.mode, encoder)
    reranker = kept_reranker(settings, embedder)
    ranked = rerank(question, hits, reranker, k)
    passages = [Passage(h.passage_id, h.document, h.where, h.section or h.title, h.text) for h, _ in ranked]
    generation = _generate(settings, question, passages)
    label = EXTRACTIVE_LABEL if generation.text.strip().startswith(EXTRACTIVE_LABEL) else ""
    answer = answer_body(generation.text)
    flag = generation.flag
    if suspicious := added_suspicious(answer, "\n".join(p.text for p in passages)):  # model output is untrusted
        flag = (flag + "; " if flag else "") + f"suspicious_content: {suspicious}"
    result, segments = cite(question, answer, ranked, kept_scorer(settings, embedder), match_options(settings))
    return AskResult(
        question=question, answer=answer, label=label, provider=generation.provider, model=generation.model,
        prompt=generation.prompt_ref, flag=flag,
        passages=[AskPassage(number=n, passage_id=h.passage_id, chunk_id=h.chunk_id, document=h.document, where=h.where,
                             title=h.title, section=h.section, source_path=h.source_path, retrieval_score=h.score,
                             rerank_score=round(s, 4))
                  for n, (h, s) in enumerate(ranked, start=1)],
        segments=segments, reranker=getattr(reranker, "name", type(reranker).__name__), scorer=result.scorer,
        encoder=encoder_name if settings.index.mode != "bm25" else "none (BM25 only)",
        threshold=result.threshold, scorer_calls=result.scorer_calls, naive_calls=result.naive_calls,
        naive_calls_corpus=naive_calls(len(result.sentences), len(index.unit_ids)), corpus_chunks=len(index.chunk_ids),
        seconds=round(time.perf_counter() - started, 2), warnings=staleness_warnings(index.manifest, settings),
    )
