"""The reference matcher: an answer cut into segments, each linked to the chunk it came from.

1. The answer is split into sentences (``sentences.py``: pysbd / kss, never on ". ").
2. Every sentence is scored against every candidate chunk (the question's top-k) in one batch.
3. Spans of 2..``max_span_sentences`` consecutive sentences are scored, in one more batch, only
   against the ``span_candidates`` best chunks of their own sentences: a span is never scored
   against a chunk none of its sentences leans toward. Cost per answer is about
   ``n*k + n*(L-1)*m`` scorer calls instead of the seed's ``n(n+1)/2 * k`` (all spans x all chunks).
4. Dynamic programming over sentence boundaries maximises
   ``sum over segments of (sentences in it) * score(segment, chunk) - segment_penalty``, where a
   segment may also be *unsupported* at ``null_score`` per sentence: the penalty keeps a passage from
   one chunk in one segment (no over-splitting on noise), the unsupported option keeps a sentence
   from nowhere out of its neighbours' segment. Backtracking gives the segments; ties go to the
   shorter span and the earlier candidate, so the result is deterministic.
5. A segment whose chunk scores below ``threshold`` is ``below_threshold``; one the DP left
   without a chunk is ``unsupported``; both count as unsupported for users and flags.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from ragprep.matching.scoring import Candidate, Span, SpanScorer
from ragprep.matching.sentences import Sentence, split_sentences
from ragprep.settings import RefmatchSettings

_REFMATCH = RefmatchSettings.model_fields


@dataclass(frozen=True)
class MatchOptions:
    """The matcher's knobs: the ``refmatch`` settings group's (its defaults are that group's, never restated here)."""

    max_span_sentences: int = _REFMATCH["max_span_sentences"].default
    span_candidates: int = _REFMATCH["span_candidates"].default
    segment_penalty: float = _REFMATCH["segment_penalty"].default
    null_score: float = _REFMATCH["null_score"].default
    threshold: float = _REFMATCH["threshold"].default

    @classmethod
    def from_settings(cls, refmatch: RefmatchSettings) -> MatchOptions:
        """The options a ``refmatch`` settings group sets."""
        return cls(**{f.name: getattr(refmatch, f.name) for f in fields(cls)})


@dataclass(frozen=True)
class Segment:
    """Consecutive answer sentences ``start..end-1`` and the chunk they came from (None: unsupported)."""

    start: int
    end: int
    text: str
    char_start: int
    char_end: int
    chunk_id: str | None
    score: float
    status: str
    """``supported`` | ``below_threshold`` (its chunk scores under the threshold) | ``unsupported`` (no chunk)."""

    @property
    def supported(self) -> bool:
        """True when the segment cites a chunk at or above the threshold."""
        return self.status == "supported"


@dataclass
class MatchResult:
    """An answer's segments and what matching it cost."""

    sentences: list[Sentence]
    segments: list[Segment]
    candidates: int
    scorer_calls: int
    naive_calls: int
    seconds: float = 0.0
    threshold: float = 0.5
    scorer: str = ""
    extra: dict = field(default_factory=dict)

    def sentence_citations(self, threshold: float | None = None) -> list[str | None]:
        """Per sentence, the chunk it is attributed to at ``threshold`` (default the matcher's), else None."""
        limit = self.threshold if threshold is None else threshold
        out: list[str | None] = [None] * len(self.sentences)
        for segment in self.segments:
            cited = segment.chunk_id if segment.chunk_id is not None and segment.score >= limit else None
            for i in range(segment.start, segment.end):
                out[i] = cited
        return out

    @property
    def unsupported(self) -> list[Segment]:
        """Segments without a chunk at or above the threshold."""
        return [s for s in self.segments if not s.supported]


def naive_calls(n_sentences: int, n_chunks: int) -> int:
    """Scorer calls of the seed's matcher: every span of sentences against every chunk."""
    return n_sentences * (n_sentences + 1) // 2 * n_chunks


def _top_candidates(row: np.ndarray, m: int) -> list[int]:
    order = np.argsort(-row, kind="stable")[:m]
    return [int(c) for c in order if row[c] > 0]


def _span_batch(single: np.ndarray, options: MatchOptions) -> list[Span]:
    """Spans of 2..L sentences, each against the union of its sentences' best chunks."""
    n = single.shape[0]
    best = [_top_candidates(single[i], options.span_candidates) for i in range(n)]
    spans: list[Span] = []
    for length in range(2, max(1, options.max_span_sentences) + 1):
        for start in range(0, n - length + 1):
            chosen = sorted({c for i in range(start, start + length) for c in best[i]})
            spans.extend((start, start + length, c) for c in chosen)
    return spans


def _dp(n: int, scores: dict[tuple[int, int], dict[int, float]], options: MatchOptions) -> list[tuple[int, int, int | None, float]]:
    """The best segmentation: ``(start, end, candidate or None, score)`` in order."""
    best = [0.0] + [-np.inf] * n
    back: list[tuple[int, int | None, float]] = [(0, None, 0.0)] * (n + 1)
    for end in range(1, n + 1):
        for start in range(end - 1, max(0, end - max(1, options.max_span_sentences)) - 1, -1):  # shorter spans first
            length = end - start
            by_chunk = scores.get((start, end), {})
            options_here = [(c, s) for c, s in sorted(by_chunk.items())]
            top = max(by_chunk.values(), default=0.0)
            options_here.append((None, top))
            for c, s in options_here:
                gain = length * (s if c is not None else options.null_score) - options.segment_penalty
                value = best[start] + gain
                if value > best[end] + 1e-12:
                    best[end], back[end] = value, (start, c, s)
    out = []
    end = n
    while end > 0:
        start, c, s = back[end]
        out.append((start, end, c, s))
        end = start
    return out[::-1]


def _segments(sentences: list[Sentence], answer: str, plan, candidates: Sequence[Candidate], threshold: float) -> list[Segment]:
    out = []
    for start, end, c, score in plan:
        chunk_id = candidates[c].chunk_id if c is not None else None
        status = "unsupported" if chunk_id is None else ("supported" if score >= threshold else "below_threshold")
        char_start, char_end = sentences[start].start, sentences[end - 1].end
        out.append(Segment(start, end, answer[char_start:char_end].strip(), char_start, char_end, chunk_id, round(float(score), 4), status))
    return out


def match_sentences(
    question: str, answer: str, sentences: list[Sentence], candidates: Sequence[Candidate], scorer: SpanScorer,
    options: MatchOptions = MatchOptions(),
) -> MatchResult:
    """Match already split ``sentences`` of ``answer`` to ``candidates`` (see the module doc)."""
    started = time.perf_counter()
    texts = [s.text for s in sentences]
    n, k = len(texts), len(candidates)
    if n == 0 or k == 0:
        plan = [(i, i + 1, None, 0.0) for i in range(n)]
        return MatchResult(sentences, _segments(sentences, answer, plan, candidates, options.threshold), k, 0,
                           naive_calls(n, k), time.perf_counter() - started, options.threshold, scorer.name)
    singles = [(i, i + 1, c) for i in range(n) for c in range(k)]
    single_scores = scorer.score(question, texts, candidates, singles)
    matrix = np.asarray(single_scores, dtype=np.float32).reshape(n, k)
    scores: dict[tuple[int, int], dict[int, float]] = {}
    for (start, end, c), value in zip(singles, single_scores):
        scores.setdefault((start, end), {})[c] = float(value)
    longer = _span_batch(matrix, options)
    for (start, end, c), value in zip(longer, scorer.score(question, texts, candidates, longer) if longer else []):
        scores.setdefault((start, end), {})[c] = float(value)
    plan = _dp(n, scores, options)
    segments = _segments(sentences, answer, plan, candidates, options.threshold)
    return MatchResult(sentences, segments, k, len(singles) + len(longer), naive_calls(n, k), time.perf_counter() - started,
                       options.threshold, scorer.name)


def match_answer(
    question: str, answer: str, candidates: Sequence[Candidate], scorer: SpanScorer, options: MatchOptions = MatchOptions()
) -> MatchResult:
    """Split ``answer`` into sentences and match them to ``candidates``."""
    return match_sentences(question, answer, split_sentences(answer), candidates, scorer, options)
