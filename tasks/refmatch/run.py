"""The refmatch stage: a JSONL of (question, answer) pairs from any system -> a Parquet of segments and citations.

Each input line is ``{"question": ..., "answer": ..., "id": optional, "chunk_ids": optional}``. An
answer is matched against the chunks it names in ``chunk_ids`` (the contexts the system used), else
against the question's ``top_k`` chunks in the search index plus the answer's own ``top_k`` (hybrid
search), so an answer drawn from chunks the question alone would not find is still checked.
A line that cannot be read becomes an error in the report and the run goes on. Sentences and chunk
windows of the whole file are embedded in one batch before matching, and the embedder caches
passages, so a re-run over the same index embeds no chunk again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from ragprep.ids import stable_id
from ragprep.matching.matcher import MatchResult, match_sentences
from ragprep.matching.scoring import BlendScorer, Candidate, SpanScorer
from ragprep.matching.sentences import split_sentences
from ragprep.report import Report
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.refmatch import SegmentRow
from tasks.index.store import SearchHit
from tasks.refmatch.ask import match_options
from tasks.refmatch.scoring import build_scorer

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class AnswerItem:
    """One input line."""

    line: int
    item_id: str
    question: str
    answer: str
    chunk_ids: tuple[str, ...] = ()


class ChunkSource(Protocol):
    """Where candidate chunks come from: the search index, or anything that ranks and describes chunks."""

    corpus_chunks: int

    def candidates(self, question: str, answer: str, k: int) -> list[SearchHit]:
        """The chunks an answer may cite."""

    def lookup(self, chunk_ids: Sequence[str]) -> list[SearchHit]:
        """The named chunks (unknown ids left out)."""


class IndexSource:
    """Candidates from the persistent search index (``ragprep index``), queried with its own embedder."""

    def __init__(self, settings: Settings, variant: str | None = None) -> None:
        """Open the ``variant`` index (default ``index.variant``); raises naming ``ragprep index`` when there is none."""
        from ragprep.engines.embedders import embeddings_cache_dir, make_embedder
        from tasks.index.store import SearchIndex, index_folder

        self.settings = settings
        self.index = SearchIndex.open(index_folder(settings, variant or settings.index.variant))
        self.embedder = make_embedder(self.index.manifest.embedder, settings, embeddings_cache_dir(settings))
        self.corpus_chunks = len(self.index.chunk_ids)

    def _search(self, query: str, k: int) -> list[SearchHit]:
        s = self.settings.index
        return self.index.search(query, k, s.mode, self.embedder, s.rrf_k, s.rrf_depth)

    def candidates(self, question: str, answer: str, k: int) -> list[SearchHit]:
        """The chunks of the question's top ``k`` passages, then of the answer's (a chunk as its best passage)."""
        found = {h.chunk_id: h for h in self._search(question, k)}
        for hit in self._search(answer, k):
            found.setdefault(hit.chunk_id, hit)
        return list(found.values())

    def lookup(self, chunk_ids: Sequence[str]) -> list[SearchHit]:
        """The named chunks that the index holds, each with the text of all its passages."""
        return self.index.chunk_hits(chunk_ids)


class RefmatchReport(BaseModel):
    """What one refmatch run did."""

    input: str
    output: str
    items: int
    errors: list[str]
    segments: int
    supported: int
    below_threshold: int
    unsupported: int
    scorer: str
    threshold: float
    scorer_calls: int
    naive_calls: int
    seconds: float

    def report(self) -> Report:
        """Segments by status, and scorer calls against the naive count."""
        ratio = f"{self.scorer_calls / self.naive_calls:.2f}" if self.naive_calls else "-"
        return Report(
            title=f"ragprep: reference matching of {Path(self.input).name}",
            columns=["status", "segments"],
            rows=[["supported", self.supported], ["below_threshold", self.below_threshold], ["unsupported", self.unsupported]],
            lead=[f"**{self.items} answers**, {self.segments} segments, scorer {self.scorer}, threshold {self.threshold:.2f}."],
            notes=[f"Scorer calls: {self.scorer_calls} ({ratio} of the {self.naive_calls} that every span x every candidate "
                   f"would take); {self.seconds:.1f}s.", f"Written: {self.output}"]
            + [f"error: {e}" for e in self.errors[:20]],
        )


def read_items(path: Path) -> tuple[list[AnswerItem], list[str]]:
    """The usable lines of a JSONL file, and one error per line that is not."""
    items, errors = [], []
    with path.open(encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as exc:
                errors.append(f"line {number}: not JSON ({exc.msg})")
                continue
            if not isinstance(record, dict) or not isinstance(record.get("question"), str) or not isinstance(record.get("answer"), str):
                errors.append(f"line {number}: needs string fields 'question' and 'answer'")
                continue
            ids = record.get("chunk_ids") or []
            item_id = str(record.get("id") or stable_id("refmatch", record["question"], record["answer"]))
            items.append(AnswerItem(number, item_id, record["question"], record["answer"], tuple(str(c) for c in ids)))
    return items, errors


def segment_rows(item: AnswerItem, result: MatchResult, hits: dict[str, SearchHit]) -> list[SegmentRow]:
    """One row per segment of the answer, with its chunk's provenance."""
    rows = []
    for n, segment in enumerate(result.segments):
        hit = hits.get(segment.chunk_id) if segment.chunk_id else None
        rows.append(SegmentRow(
            item_id=item.item_id, line=item.line, question=item.question, segment_index=n, sentence_start=segment.start,
            sentence_end=segment.end, char_start=segment.char_start, char_end=segment.char_end, text=segment.text,
            status=segment.status, score=segment.score, chunk_id=segment.chunk_id,
            doc_id=hit.doc_id if hit else None, document=hit.document if hit else None, source_path=hit.source_path if hit else None,
            slide=hit.slide if hit else None, page_start=hit.page_start if hit else None, page_end=hit.page_end if hit else None,
            chunk_title=hit.title if hit else None, candidates=list(hits), scorer=result.scorer, threshold=result.threshold,
            scorer_calls=result.scorer_calls, naive_calls=result.naive_calls,
        ))
    return rows


def output_path(settings: Settings, input_path: Path, out: Path | None = None) -> Path:
    """``out``, else ``<root>/refmatch/<input name>.parquet``."""
    return out if out is not None else Layout(settings.root).refmatch_dir / f"{input_path.stem}.parquet"


def match_items(items: Sequence[AnswerItem], source: ChunkSource, scorer: SpanScorer, settings: Settings,
                progress: Progress | None = None) -> list[SegmentRow]:
    """Match every item against its candidates; sentences and chunk windows are embedded in one batch first. An answer
    without a sentence has no segment to cite anything: its candidates are neither looked up nor embedded."""
    k = settings.refmatch.top_k
    prepared = []
    for item in items:
        sentences = split_sentences(item.answer)
        if not sentences:
            hits = []
        elif item.chunk_ids:
            hits = source.lookup(item.chunk_ids)
        else:
            hits = source.candidates(item.question, item.answer, k)
        prepared.append((item, sentences, {h.chunk_id: h for h in hits}))
    if isinstance(scorer, BlendScorer):
        scored = [(item, sentences, hits) for item, sentences, hits in prepared if hits]  # the ones the matcher scores
        scorer.warm([s.text for _, sentences, _ in scored for s in sentences],
                    [h.text for _, _, hits in scored for h in hits.values()], [item.question for item, _, _ in scored])
    options = match_options(settings)
    rows: list[SegmentRow] = []
    for done, (item, sentences, hits) in enumerate(prepared, start=1):
        candidates = [Candidate(h.chunk_id, h.text, h.title) for h in hits.values()]
        rows += segment_rows(item, match_sentences(item.question, item.answer, sentences, candidates, scorer, options), hits)
        if progress:
            progress(done, len(prepared))
    return rows


def run_refmatch(settings: Settings, input_path: Path, out: Path | None = None, progress: Progress | None = None,
                 source: ChunkSource | None = None) -> RefmatchReport:
    """Match every answer of ``input_path`` and write its segments to ``output_path`` (see the module doc)."""
    started = time.perf_counter()
    items, errors = read_items(input_path)
    source = source if source is not None else IndexSource(settings)
    scorer = build_scorer(settings, getattr(source, "embedder", None))
    rows = match_items(items, source, scorer, settings, progress)
    target = output_path(settings, input_path, out)
    TableStore.write_at("refmatch_segments", rows, target)
    per_item = {r.item_id: (r.scorer_calls, r.naive_calls) for r in rows}
    status = [r.status for r in rows]
    return RefmatchReport(
        input=str(input_path), output=str(target), items=len(items), errors=errors, segments=len(rows),
        supported=status.count("supported"), below_threshold=status.count("below_threshold"),
        unsupported=status.count("unsupported"), scorer=scorer.name, threshold=settings.refmatch.threshold,
        scorer_calls=sum(c for c, _ in per_item.values()), naive_calls=sum(n for _, n in per_item.values()),
        seconds=round(time.perf_counter() - started, 2),
    )
