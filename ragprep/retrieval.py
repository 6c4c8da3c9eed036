"""Ranking chunks for a question: dense (cosine), BM25 and their reciprocal-rank fusion.

The one ranking logic of ragprep, used two ways:

* ``Retriever``: built in memory from chunk ids and texts (no LanceDB), for evaluation, re-ranking
  and training code that wants scores for many questions at once (``search_many``,
  ``dense_scores``);
* ``tasks/index/store.py``'s ``SearchIndex``: the persistent index (LanceDB vectors + a saved BM25),
  whose dense candidates come from LanceDB and whose BM25 and fusion are the functions below.

**Dense**: the cosine of L2-normalised query and passage vectors. **BM25**: ``bm25s`` over
``ragprep.text.tokens`` (Korean particles stripped); a chunk sharing no token with the query is
not ranked. **Hybrid**: reciprocal-rank fusion of the two rankings, each cut to its best
``rrf_depth`` (default 100) candidates: ``score(c) = sum 1 / (rrf_k + rank(c))`` over the
rankings that hold ``c`` (ranks 1-based, ``rrf_k`` 60 as in Cormack et al. 2009). Ties are broken
by the better single rank, then by the order the candidate was first seen (dense first), so the
same inputs always give the same order.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np

from ragprep.engines.embedder import Embedder
from ragprep.library_logs import quiet_library_loggers
from ragprep.markdown import row_cells
from ragprep.text import tokens, word_forms

quiet_library_loggers()  # bm25s sets its logger to DEBUG when imported

MODES = ("dense", "bm25", "hybrid")
EMPTY_TOKEN = "∅"
"""Stands in for a chunk without any token, so bm25s indexes it (it matches no query)."""

QueryVectors = Mapping[str, np.ndarray] | Callable[[list[str]], np.ndarray]
"""Precomputed query vectors by query text, or a function from queries to (n, dim) vectors
(a trained query adapter on top of the embedder, say)."""


@dataclass(frozen=True)
class Hit:
    """One ranked chunk: its id, the mode's score (cosine, BM25 or fused RRF) and its 1-based rank."""

    chunk_id: str
    score: float
    rank: int


def check_mode(mode: str) -> str:
    """``mode`` when it is dense, bm25 or hybrid; raise ``ValueError`` otherwise."""
    if mode not in MODES:
        raise ValueError(f"unknown retrieval mode {mode!r}: use one of {', '.join(MODES)}")
    return mode


def embed_queries(embedder: Embedder, queries: Sequence[str]) -> np.ndarray:
    """(n, dim) L2-normalised float32 query vectors (E5 models put ``query:`` before each)."""
    return _unit_rows(embedder.queries(list(queries)))


def embed_passages(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """(n, dim) L2-normalised float32 passage vectors (cached by text hash when the embedder caches)."""
    return _unit_rows(embedder.passages(list(texts)))


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    if vectors.size == 0:
        return vectors.reshape(vectors.shape[0], -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest scores, best first; equal scores keep their position order."""
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        cutoff = scores[part].min()
        candidates = np.flatnonzero(scores >= cutoff)  # every tie at the cut, so the stable sort decides
    else:
        candidates = np.arange(n)
    order = np.argsort(-scores[candidates], kind="stable")
    return candidates[order][:k]


@dataclass(frozen=True)
class Fusion:
    """How a hybrid search weighs its rankings: ``sum weight / (rrf_k + rank)``, dense weight 1, BM25 ``bm25_weight``.

    ``sentence_weight`` > 0 re-orders the fused top ``SENTENCE_DEPTH`` by ``fused / best fused + sentence_weight *
    sentence_match`` (see ``rerank_by_sentences``)."""

    rrf_k: int = 60
    bm25_weight: float = 1.0
    sentence_weight: float = 0.0


SENTENCE_DEPTH = 20
"""Fused candidates the sentence match re-orders."""
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;:])\s+|\n+")
STOPWORDS = frozenset(
    "what which how the of is are was were does do did in for to and by at on with from be may must can who when why "
    "where this that an as or its it any many much long".split()
)
"""Question words that carry no content for the sentence match."""


_TABLE_ROW_RE = re.compile(r"^\s*\|")
_TABLE_RULE_RE = re.compile(r"^\s*\|?\s*:?-{3,}")


def first_cell(row: str) -> str:
    """The first cell of a Markdown table row, stripped (``""`` for an empty one)."""
    return row_cells(row)[0]


def continues_header(row: str, header: str) -> bool:
    """Whether the table ``row`` just under the rule is a second header row: it repeats the header row's (non-empty)
    first cell, as a header cell merged over two rows is read into both (``| 구분 | 총인원 | 구성 | | 민간현황 |`` over
    ``| 구분 | 총인원 | 정부 | 민간 | 학계 | ... |``)."""
    first = first_cell(header)
    return bool(first) and first_cell(row) == first


def match_pieces(text: str) -> Iterator[str]:
    """What ``sentence_match`` reads one at a time: sentences and lines, and each Markdown table row together with its
    table's header rows (a row's cells are values; what they are is named in the header; see ``continues_header``)."""
    lines = text.split("\n")
    header = ""
    heading = False  # still in the header rows (the header row, its rule, rows that continue it)
    for n, line in enumerate(lines):
        if _TABLE_ROW_RE.match(line):
            if _TABLE_RULE_RE.match(line):
                continue
            if n + 1 < len(lines) and _TABLE_RULE_RE.match(lines[n + 1]):
                header, heading = line, True
                yield line
            elif heading and continues_header(line, header):
                header = f"{header} {line}"
                yield line
            else:
                heading = False
                yield f"{line} {header}"
            continue
        header, heading = "", False
        yield from (piece for piece in _SENTENCE_SPLIT.split(line) if piece.strip())


def sentence_match(query: str, text: str, idf: Callable[[str], float]) -> float:
    """Share of the question's content-token weight (``idf``) that the best sentence, line or table row (read with
    its header row, ``match_pieces``) of ``text`` holds."""
    wanted = [t for t in dict.fromkeys(tokens(query)) if t not in STOPWORDS]
    total = sum(idf(t) for t in wanted)
    if not total:
        return 0.0
    best = 0.0
    for piece in match_pieces(text):
        have = set(tokens(piece))
        best = max(best, sum(idf(t) for t in wanted if t in have) / total)
    return best


def rerank_by_sentences(fused: Sequence[tuple[str, float]], match: Callable[[str], float], weight: float,
                        depth: int = SENTENCE_DEPTH) -> list[tuple[str, float]]:
    """The fused top ``depth`` re-ordered by ``score / best score + weight * match(id)``; the rest after, unchanged.

    ``match`` is the passage's ``sentence_match`` with the question: a passage whose one sentence holds most of the
    question's rare words rises above a neighbour that only shares its document's context; ties keep the fused order."""
    if weight <= 0 or not fused:
        return list(fused)
    top = list(fused[:depth])
    best = top[0][1] or 1.0
    scored = [(s / best + weight * match(u), -n, u) for n, (u, s) in enumerate(top)]
    return [(u, round(v, 6)) for v, _, u in sorted(scored, reverse=True)] + list(fused[depth:])


def query_language(text: str) -> str:
    """``ko`` when a quarter or more of the query's letters are Hangul, else ``en``."""
    letters = [c for c in text if c.isalpha()]
    hangul = sum(1 for c in letters if "\uac00" <= c <= "\ud7a3")
    return "ko" if letters and hangul * 4 >= len(letters) else "en"


def rrf_fuse(rankings: Sequence[Sequence[str]], rrf_k: int = 60,
             weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: ``(id, sum of weight / (rrf_k + rank))`` best first, ranks 1-based (weights default 1).

    Ties: the better single rank first, then the id seen first (earlier ranking, earlier rank)."""
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    for ranking, weight in zip(rankings, weights):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (rrf_k + rank)
            best[item] = min(best.get(item, rank), rank)
    seen = {item: position for position, item in enumerate(scores)}
    order = sorted(scores, key=lambda item: (-scores[item], best[item], seen[item]))
    return [(item, scores[item]) for item in order]


def ranked_hits(
    mode: str, dense: Sequence[tuple[str, float]], lexical: Sequence[tuple[str, float]], k: int, rrf_k: int = 60,
    fusion: Fusion | None = None,
) -> list[Hit]:
    """The top ``k`` hits of ``mode`` from a dense and a BM25 ranking (each ``(id, score)`` best first).

    A hybrid fuses them by ``fusion`` (default: plain RRF with ``rrf_k``)."""
    check_mode(mode)
    if mode == "dense":
        ranked = list(dense)
    elif mode == "bm25":
        ranked = list(lexical)
    else:
        fusion = fusion or Fusion(rrf_k, 1.0)
        ranked = rrf_fuse([[c for c, _ in dense], [c for c, _ in lexical]], fusion.rrf_k, [1.0, fusion.bm25_weight])
    return [Hit(chunk_id=c, score=float(s), rank=r) for r, (c, s) in enumerate(ranked[:k], start=1)]


class Bm25Ranker:
    """BM25 (``bm25s``, Lucene scoring) over ``ragprep.text.tokens``, savable to a folder."""

    def __init__(self, model: bm25s.BM25, size: int, tokenize: Callable[[str], list[str]] = tokens) -> None:
        self.model = model
        self.size = size
        self.tokenize = tokenize

    @classmethod
    def build(cls, texts: Sequence[str], tokenize: Callable[[str], list[str]] = tokens) -> Bm25Ranker:
        """Index ``texts`` (a text without tokens gets a placeholder that matches nothing) with ``tokenize``."""
        model = bm25s.BM25()
        if texts:
            model.index([tokenize(t) or [EMPTY_TOKEN] for t in texts], show_progress=False)
        return cls(model, len(texts), tokenize)

    @property
    def vocabulary(self) -> int:
        """Distinct tokens indexed."""
        return len(getattr(self.model, "vocab_dict", None) or {})

    def idf(self, token: str) -> float:
        """``log(1 + N / df)`` of ``token`` over the indexed texts (an unseen token weighs as a one-text token)."""
        if not self.size:
            return 1.0
        position = (getattr(self.model, "vocab_dict", None) or {}).get(token)
        indptr = (getattr(self.model, "scores", None) or {}).get("indptr")
        df = int(indptr[position + 1] - indptr[position]) if position is not None and indptr is not None else 1
        return math.log(1 + self.size / max(1, df))

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every text for ``query`` (zeros when nothing matches).

        With the default tokenizer each word of the question counts once: the scores of a word's distinct forms
        (``ragprep.text.word_forms``: the word, a Korean word without its particle and its morphemes) are averaged, so
        a Korean compound that yields five forms weighs as much as a noun that yields one (an English word is one form:
        plain BM25). Another tokenizer scores its tokens summed, as BM25 does."""
        if not self.size:
            return np.zeros(0, dtype=np.float32)
        vocabulary = self.model.vocab_dict
        if self.tokenize is not tokens:
            known = [t for t in self.tokenize(query) if t in vocabulary]
            return np.asarray(self.model.get_scores(known), dtype=np.float32) if known else np.zeros(self.size, np.float32)
        total = np.zeros(self.size, dtype=np.float32)
        for forms in word_forms(query):
            distinct = list(dict.fromkeys(forms))
            known = [t for t in distinct if t in vocabulary]
            if known:
                total += np.asarray(self.model.get_scores(known), dtype=np.float32) / len(distinct)
        return total

    def ranking(self, query: str, depth: int) -> list[tuple[int, float]]:
        """``(position, score)`` of the best ``depth`` texts sharing a token with ``query``, best first."""
        scores = self.scores(query)
        return [(int(i), float(scores[i])) for i in top_indices(scores, depth) if scores[i] > 0]

    def save(self, folder: Path) -> None:
        """Write the index to ``folder`` (bm25s' own files plus ``size.json``)."""
        folder.mkdir(parents=True, exist_ok=True)
        if self.size:
            self.model.save(str(folder), show_progress=False)
        (folder / "size.json").write_text(json.dumps({"size": self.size}), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> Bm25Ranker:
        """Read an index written by ``save`` (memory-mapped)."""
        size = json.loads((folder / "size.json").read_text(encoding="utf-8"))["size"]
        model = bm25s.BM25.load(str(folder), mmap=True, show_progress=False) if size else bm25s.BM25()
        return cls(model, size)


class Retriever:
    """Dense, BM25 and hybrid retrieval over chunk texts held in memory (no LanceDB needed).

    ``embedder`` may be None for BM25 alone. Passage vectors are computed on the first dense
    query (or given as ``passage_vectors``); ``query_vectors`` replaces how queries become
    vectors (see ``QueryVectors``)."""

    def __init__(
        self,
        chunk_ids: list[str],
        texts: list[str],
        embedder: Embedder | None,
        *,
        rrf_k: int = 60,
        query_vectors: QueryVectors | None = None,
        passage_vectors: np.ndarray | None = None,
        rrf_depth: int = 100,
    ) -> None:
        if len(chunk_ids) != len(texts):
            raise ValueError(f"{len(chunk_ids)} chunk ids but {len(texts)} texts")
        self.chunk_ids = list(chunk_ids)
        self.texts = list(texts)
        self.embedder = embedder
        self.rrf_k = rrf_k
        self.rrf_depth = rrf_depth
        self.query_vectors = query_vectors
        self._vectors = _unit_rows(passage_vectors) if passage_vectors is not None else None
        self._bm25: Bm25Ranker | None = None
        self.tokenize: Callable[[str], list[str]] = tokens  # BM25's tokenizer; set another before the first search

    @property
    def bm25(self) -> Bm25Ranker:
        """The BM25 index of the texts (built on first use)."""
        if self._bm25 is None:
            self._bm25 = Bm25Ranker.build(self.texts, self.tokenize)
        return self._bm25

    @property
    def passage_vectors(self) -> np.ndarray:
        """(n_chunks, dim) passage vectors (embedded on first use)."""
        if self._vectors is None:
            if self.embedder is None:
                raise ValueError("dense retrieval needs an embedder or passage_vectors")
            self._vectors = embed_passages(self.embedder, self.texts)
        return self._vectors

    def _queries_to_vectors(self, queries: list[str]) -> np.ndarray:
        given = self.query_vectors
        if callable(given):
            return _unit_rows(given(queries))
        if given is None:
            if self.embedder is None:
                raise ValueError("dense retrieval needs an embedder or query_vectors")
            return embed_queries(self.embedder, queries)
        missing = [q for q in dict.fromkeys(queries) if q not in given]
        computed = dict(zip(missing, embed_queries(self.embedder, missing))) if missing and self.embedder else {}
        if len(computed) < len(missing):
            raise ValueError(f"no query vector for {missing[0]!r} and no embedder to make one")
        return _unit_rows(np.stack([given[q] if q in given else computed[q] for q in queries]))

    def dense_scores(self, queries: list[str]) -> np.ndarray:
        """(n_queries, n_chunks) cosine similarities, one batched embedding of the queries."""
        if not queries:
            return np.zeros((0, len(self.chunk_ids)), dtype=np.float32)
        if not self.chunk_ids:
            return np.zeros((len(queries), 0), dtype=np.float32)
        return self._queries_to_vectors(list(queries)) @ self.passage_vectors.T

    def search(self, query: str, k: int = 10, mode: str = "hybrid") -> list[Hit]:
        """The ``k`` best chunks for ``query`` in ``mode`` (dense | bm25 | hybrid)."""
        return self.search_many([query], k, mode)[0]

    def search_many(self, queries: list[str], k: int = 10, mode: str = "hybrid",
                    fusion: Fusion | None = None) -> list[list[Hit]]:
        """``search`` for every query, with the query embeddings computed in one batch (``fusion``: see ``ranked_hits``)."""
        check_mode(mode)
        depth = k if mode != "hybrid" else max(k, self.rrf_depth)
        dense = self.dense_scores(queries) if mode != "bm25" else None
        out = []
        for row, query in enumerate(queries):
            dense_ranking = lexical = []
            if dense is not None:
                scores = dense[row]
                dense_ranking = [(self.chunk_ids[i], float(scores[i])) for i in top_indices(scores, depth)]
            if mode != "dense":
                lexical = [(self.chunk_ids[i], s) for i, s in self.bm25.ranking(query, depth)]
            out.append(ranked_hits(mode, dense_ranking, lexical, k, self.rrf_k, fusion))
        return out
