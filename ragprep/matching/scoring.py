"""Scorers: how well a span of answer sentences is supported by a candidate chunk, in [0, 1].

Every scorer answers ``score(question, sentences, candidates, spans)`` for a batch of spans, each
``(start, end, candidate)``: sentences ``start..end-1`` against ``candidates[candidate]``. One call
of ``score`` is one batch; each span in it counts as one scorer call (what the bench compares with
the naive all-spans x all-chunks count).

- ``BlendScorer`` (``embedded``, the default): per sentence and chunk, the embedder's cosine between
  the sentence (``query:``) and the chunk's best window (``passage:``, windows of about
  ``window_words`` words, cached by the embedder like every passage), rescaled from
  ``[dense_floor, dense_ceiling]`` to [0, 1], blended with the share of the sentence's content
  words found in the chunk (Korean particles and English inflections stripped) and the share of
  its numbers found there. A span's score is the mean of its sentences' scores, pulled toward the
  weakest one (``spread_penalty``) when that one scores under ``solo_floor`` on its own, so a
  sentence from nowhere does not ride along with good neighbours. ``lexical``: the same without the embedder (the QA flag uses it: no model).
- ``CrossEncoderScorer`` (``cross-encoder``): a sentence-transformers cross-encoder from a local
  folder (``refmatch.cross_encoder_path``); the span text against each window, best window, sigmoid.
- ``RerankerScorer`` (``reranker``): any re-ranker with ``score_pairs(queries, passages, titles)``,
  such as the one ``ragprep train reranker`` saves; scores outside [0, 1] go through a sigmoid.

**Numbers** are a hard rule for every scorer: a span holding a figure that its chunk does not hold
scores 0 against that chunk, so a figure that appears in no candidate chunk is never attributed.
The question adds a small prior (``question_weight``): among chunks that support a span equally
(the same template sentence in three reports), the one the question is about wins.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from ragprep.engines.embedder import Embedder
from ragprep.errors import RagprepError
from ragprep.offline import use_local_models_only
from ragprep.settings import RefmatchSettings, Settings
from ragprep.text import HANGUL_RE, PARTICLES, numbers_in

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_HANGUL_RUN_RE = re.compile(r"[\uac00-\ud7a3]+")
_EN_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s")
STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been being it its this that these those "
    "as than into about which who whom whose what when where why how does do did has have had not no so such there "
    "their they them then also can could would should will may might must our we you your he she his her i me my "
    "any all each both other more most very just only over under after before while during per via yes "
    "예 아니요 아니오 및 또는 그리고 그러나 하지만 또한 이 그 저 것 수 등 위해 대한 통해 있다 없다 한다 했다 된다 되었다 하였다".split()
)
"""Words that carry no support on their own (English and Korean function words)."""


class ScorerError(RagprepError):
    """A scorer that cannot be built; the message names the setting or package to fix."""


@dataclass(frozen=True)
class Candidate:
    """A chunk the answer may cite: its id, the text it is matched on and its title."""

    chunk_id: str
    text: str
    title: str = ""


Span = tuple[int, int, int]
"""``(start, end, candidate)``: sentences ``start..end-1`` against ``candidates[candidate]``."""


class SpanScorer(Protocol):
    name: str

    def score(self, question: str, sentences: Sequence[str], candidates: Sequence[Candidate], spans: Sequence[Span]) -> np.ndarray:
        """(len(spans),) support scores in [0, 1]."""


_SETTING_OF = {"dense": "dense_weight", "lexical": "lexical_weight", "numbers": "number_weight"}
"""The ``refmatch`` setting behind each blend weight whose name differs."""


def _refmatch_default(weight: str):
    return RefmatchSettings.model_fields[_SETTING_OF.get(weight, weight)].default


@dataclass(frozen=True)
class BlendWeights:
    """How the default scorer blends its signals (see the module doc): the ``refmatch`` settings group's values
    (its defaults are that group's defaults, never restated here)."""

    dense: float = _refmatch_default("dense")
    lexical: float = _refmatch_default("lexical")
    numbers: float = _refmatch_default("numbers")
    dense_floor: float = _refmatch_default("dense_floor")
    dense_ceiling: float = _refmatch_default("dense_ceiling")
    spread_penalty: float = _refmatch_default("spread_penalty")
    solo_floor: float = _refmatch_default("solo_floor")
    question_weight: float = _refmatch_default("question_weight")
    window_words: int = _refmatch_default("window_words")

    @classmethod
    def from_settings(cls, refmatch: RefmatchSettings) -> BlendWeights:
        """The weights a ``refmatch`` settings group sets."""
        return cls(**{f.name: getattr(refmatch, _SETTING_OF.get(f.name, f.name)) for f in fields(cls)})


# -- words and numbers -------------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A word without its Korean particle or English inflection (the form words are compared in; cached: the same words
    are compared with many chunks)."""
    if HANGUL_RE.search(word):
        for particle in PARTICLES:
            if word.endswith(particle) and len(word) - len(particle) >= 2:
                return word[: -len(particle)]
        return word
    for suffix in _EN_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> list[str]:
    """Lower-cased words that can carry support: no stopwords, no bare numbers (numbers are scored apart)."""
    return list(_content_words(text))


@lru_cache(maxsize=1 << 14)
def _content_words(text: str) -> tuple[str, ...]:
    """:func:`content_words` as a tuple, cached: a sentence's coverage is measured against many chunks."""
    return tuple(word for word in _WORD_RE.findall(text.lower())
                 if not (word in STOPWORDS or word.isdigit() or (len(word) < 2 and not HANGUL_RE.search(word))))


@dataclass(frozen=True)
class TextFacts:
    """What lexical scoring needs of a text: its word stems, its Hangul syllable pairs and its numbers."""

    stems: frozenset[str]
    hangul_pairs: frozenset[str]
    numbers: frozenset[str]


def _hangul_pairs(text: str) -> set[str]:
    """Adjacent Hangul syllables with spaces removed: Korean word spacing varies (and PDFs lose it)."""
    runs = _HANGUL_RUN_RE.findall(re.sub(r"\s+", "", text))
    return {run[i:i + 2] for run in runs for i in range(len(run) - 1)} | {run for run in runs if len(run) == 1}


@lru_cache(maxsize=4096)
def text_facts(text: str) -> TextFacts:
    """Stems of every word, Hangul pairs and the numbers of ``text`` (cached: chunks are scored many times)."""
    lowered = text.lower()
    return TextFacts(frozenset(stem(w) for w in _WORD_RE.findall(lowered)), frozenset(_hangul_pairs(lowered)),
                     frozenset(numbers_in(text)))


def _word_support(word: str, chunk: TextFacts) -> float:
    if stem(word) in chunk.stems:
        return 1.0
    if HANGUL_RE.search(word):  # a Korean word: the share of its syllable pairs the chunk has (spacing-proof)
        pairs = _hangul_pairs(word)
        return sum(p in chunk.hangul_pairs for p in pairs) / len(pairs) if pairs else 0.0
    return 0.0


def word_coverage(sentence: str, chunk: TextFacts) -> float:
    """Share of the sentence's content words found in the chunk (Korean words in part, by syllable pairs); 1.0 when it has none."""
    words = _content_words(sentence)
    if not words:
        return 1.0
    return sum(_word_support(w, chunk) for w in words) / len(words)


def missing_numbers(text: str, chunk: TextFacts) -> set[str]:
    """Numbers of ``text`` that the chunk does not hold."""
    return set(numbers_in(text)) - chunk.numbers


# -- windows and vectors -----------------------------------------------------------------------


def windows(text: str, window_words: int) -> list[str]:
    """The chunk as overlapping windows of about ``window_words`` words (half-window stride), cut at line ends when possible."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    out: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        words = line.split()
        while len(words) > window_words:  # one very long line (a paragraph): cut it into pieces
            head, words = words[:window_words], words[window_words // 2:]
            if current:
                out.append(" ".join(current))
                current, size = [], 0
            out.append(" ".join(head))
        if size + len(words) > window_words and current:
            out.append(" ".join(current))
            keep = current[len(current) // 2:]  # overlap: the second half of the previous window
            current, size = list(keep), sum(len(k.split()) for k in keep)
        current.append(" ".join(words))
        size += len(words)
    if current:
        out.append(" ".join(current))
    return list(dict.fromkeys(out)) or [text.strip() or " "]


def _sigmoid(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.size and (values.min() < 0 or values.max() > 1):
        return 1.0 / (1.0 + np.exp(-values))
    return values


class _ChunkWindows:
    """Windows of every chunk seen, and (for scorers with an embedder) their vectors, embedded once."""

    def __init__(self, embedder: Embedder | None, window_words: int) -> None:
        self.embedder = embedder
        self.window_words = window_words
        self.texts: dict[str, list[str]] = {}
        self.vectors: dict[str, np.ndarray] = {}
        self.embedded = 0

    def of(self, text: str) -> list[str]:
        if text not in self.texts:
            self.texts[text] = windows(text, self.window_words)
        return self.texts[text]

    def warm(self, chunk_texts: Sequence[str]) -> None:
        """Embed the windows of chunks not seen yet, in one batch (the embedder caches passages on disk)."""
        if self.embedder is None:
            return
        todo = [t for t in dict.fromkeys(chunk_texts) if t not in self.vectors]
        pieces = [w for t in todo for w in self.of(t)]
        if not pieces:
            return
        vectors = _unit(self.embedder.passages(pieces))
        self.embedded += len(pieces)
        at = 0
        for text in todo:
            n = len(self.of(text))
            self.vectors[text] = vectors[at:at + n]
            at += n


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


# -- the default scorer ------------------------------------------------------------------------


class BlendScorer:
    """Embedder cosine (optional) + word coverage + number overlap, numbers a hard rule (see the module doc)."""

    def __init__(self, embedder: Embedder | None, weights: BlendWeights | None = None) -> None:
        """``embedder=None`` gives the ``lexical`` scorer."""
        self.embedder = embedder
        self.weights = weights or BlendWeights()
        self.name = f"blend ({embedder.name} + words + numbers)" if embedder is not None else "lexical (words + numbers)"
        self.windows = _ChunkWindows(embedder, self.weights.window_words)
        self._sentence_vectors: dict[str, np.ndarray] = {}
        self.sentences_embedded = 0
        self._memo: tuple | None = None

    def warm(self, sentences: Sequence[str], chunk_texts: Sequence[str], questions: Sequence[str] = ()) -> None:
        """Embed sentences, questions and chunk windows not seen yet, each in one batch (call it with a whole
        run's texts to batch across answers)."""
        if self.embedder is None:
            return
        todo = [s for s in dict.fromkeys([*sentences, *questions]) if s not in self._sentence_vectors]
        if todo:
            vectors = _unit(self.embedder.queries(todo))
            self._sentence_vectors.update(zip(todo, vectors))
            self.sentences_embedded += len(todo)
        self.windows.warm(chunk_texts)

    def _dense(self, sentences: Sequence[str], candidates: Sequence[Candidate]) -> np.ndarray:
        """(n_sentences, n_candidates) best-window cosine, rescaled to [0, 1]."""
        self.warm(sentences, [c.text for c in candidates])
        w = self.weights
        matrix = np.stack([self._sentence_vectors[s] for s in sentences])
        out = np.zeros((len(sentences), len(candidates)), dtype=np.float32)
        for j, candidate in enumerate(candidates):
            out[:, j] = (matrix @ self.windows.vectors[candidate.text].T).max(axis=1)
        return np.clip((out - w.dense_floor) / max(1e-6, w.dense_ceiling - w.dense_floor), 0.0, 1.0)

    def sentence_scores(self, sentences: Sequence[str], candidates: Sequence[Candidate]) -> np.ndarray:
        """(n_sentences, n_candidates) support of each sentence on its own by each chunk."""
        w = self.weights
        facts = [text_facts(c.text) for c in candidates]
        lexical = np.array([[word_coverage(s, f) for f in facts] for s in sentences], dtype=np.float32).reshape(len(sentences), -1)
        dense = self._dense(sentences, candidates) if self.embedder is not None and sentences and candidates else None
        out = np.zeros_like(lexical)
        for i, sentence in enumerate(sentences):
            numbers = numbers_in(sentence)
            for j, fact in enumerate(facts):
                if numbers - fact.numbers:
                    continue  # a figure the chunk does not hold: never attributed to it
                parts = [(w.lexical, lexical[i, j])]
                if dense is not None:
                    parts.append((w.dense, dense[i, j]))
                if numbers:
                    parts.append((w.numbers, 1.0))
                total = sum(weight for weight, _ in parts)
                out[i, j] = sum(weight * value for weight, value in parts) / total if total else 0.0
        return out

    def question_prior(self, question: str, candidates: Sequence[Candidate]) -> np.ndarray:
        """(n_candidates,) how much each chunk is about the question, 0..1 with the best at 1."""
        if not question.strip() or not candidates:
            return np.zeros(len(candidates), dtype=np.float32)
        if self.embedder is not None:
            self.warm([], [c.text for c in candidates], [question])
            q = self._sentence_vectors[question]
            raw = np.array([float((self.windows.vectors[c.text] @ q).max()) for c in candidates], dtype=np.float32)
        else:
            raw = np.array([word_coverage(question, text_facts(c.title + "\n" + c.text)) for c in candidates], dtype=np.float32)
        low, high = float(raw.min()), float(raw.max())
        return (raw - low) / (high - low) if high > low else np.ones_like(raw)

    def score(self, question: str, sentences: Sequence[str], candidates: Sequence[Candidate], spans: Sequence[Span]) -> np.ndarray:
        """Span scores: the mean of their sentences' scores pulled toward the weakest, times the question prior."""
        if not spans:
            return np.zeros(0, dtype=np.float32)
        key = (question, tuple(sentences), tuple(candidates))
        if self._memo is None or self._memo[0] != key:  # the matcher asks twice per answer (sentences, then longer spans)
            self._memo = (key, self.sentence_scores(sentences, candidates), self.question_prior(question, candidates))
        _, single, prior = self._memo
        out = np.zeros(len(spans), dtype=np.float32)
        for n, (start, end, c) in enumerate(spans):
            values = single[start:end, c]
            mean, low = float(values.mean()), float(values.min())
            if low <= 0.0:
                base = 0.0
            elif low < self.weights.solo_floor:  # a weak sentence does not ride along with good neighbours
                base = mean - self.weights.spread_penalty * (mean - low)
            else:
                base = mean
            out[n] = base * (1.0 - self.weights.question_weight + self.weights.question_weight * float(prior[c]))
        return out


# -- model scorers -----------------------------------------------------------------------------


class _WindowPairScorer:
    """A model that scores (span text, window) pairs: best window per chunk, numbers as a hard rule."""

    name = "pairs"

    def __init__(self, window_words: int) -> None:
        self.windows = _ChunkWindows(None, window_words)

    def _pair_scores(self, texts: list[str], passages: list[str], titles: list[str]) -> np.ndarray:
        raise NotImplementedError

    def score(self, question: str, sentences: Sequence[str], candidates: Sequence[Candidate], spans: Sequence[Span]) -> np.ndarray:
        """Each span's joined text against every window of its chunk; the best window, through a sigmoid when needed."""
        texts, passages, titles, owner = [], [], [], []
        out = np.zeros(len(spans), dtype=np.float32)
        for n, (start, end, c) in enumerate(spans):
            text = " ".join(sentences[start:end])
            if missing_numbers(text, text_facts(candidates[c].text)):
                continue  # stays 0: a figure the chunk does not hold
            for window in self.windows.of(candidates[c].text):
                texts.append(text)
                passages.append(window)
                titles.append(candidates[c].title)
                owner.append(n)
        if texts:
            values = _sigmoid(self._pair_scores(texts, passages, titles))
            best: dict[int, float] = {}
            for n, value in zip(owner, values):
                best[n] = max(best.get(n, -math.inf), float(value))
            for n, value in best.items():
                out[n] = value
        return out


def sentence_transformers_missing() -> str | None:
    """Why sentence-transformers cannot be imported, or None when it can."""
    try:
        import sentence_transformers  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


class CrossEncoderScorer(_WindowPairScorer):
    """A sentence-transformers cross-encoder loaded from a local folder (never from a hub)."""

    def __init__(self, model_path: Path, window_words: int = 60, batch_size: int = 32) -> None:
        """Load the model in ``model_path``; a clear error when the package or the folder is missing."""
        super().__init__(window_words)
        reason = sentence_transformers_missing()
        if reason is not None:
            raise ScorerError(
                f"refmatch.scorer = cross-encoder needs the sentence-transformers package ({reason}); "
                "pip install sentence-transformers, or use refmatch.scorer = embedded"
            )
        if not Path(model_path).is_dir():
            raise ScorerError(f"refmatch.cross_encoder_path {model_path} is not a local model folder")
        use_local_models_only()  # a local folder only: never ask the hub
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(str(model_path))
        self.batch_size = batch_size
        self.name = f"cross-encoder ({model_path})"

    def _pair_scores(self, texts: list[str], passages: list[str], titles: list[str]) -> np.ndarray:
        return np.asarray(self.model.predict(list(zip(texts, passages)), batch_size=self.batch_size), dtype=np.float64)


class RerankerScorer(_WindowPairScorer):
    """Any re-ranker with ``score_pairs(queries, passages, titles)`` (the trained one of ``ragprep train reranker``)."""

    def __init__(self, reranker, window_words: int = 60) -> None:
        """Score spans with ``reranker``."""
        super().__init__(window_words)
        self.reranker = reranker
        self.name = f"re-ranker ({getattr(reranker, 'name', type(reranker).__name__)})"

    def _pair_scores(self, texts: list[str], passages: list[str], titles: list[str]) -> np.ndarray:
        return np.asarray(self.reranker.score_pairs(texts, passages, titles), dtype=np.float64)


# -- from settings -----------------------------------------------------------------------------


def blend_weights(settings: Settings) -> BlendWeights:
    """The default scorer's weights from ``refmatch`` settings."""
    return BlendWeights.from_settings(settings.refmatch)
