"""Round-trip retrieval: each question searched over every chunk of the corpus must find its own chunk.

The filter used for synthetic retrieval QA (a question that does not retrieve its own passage names too little
of it to be answerable from the collection). The search is the project's one ranking logic
(``ragprep.retrieval.Retriever``): BM25 over ``ragprep.text.tokens``, and with an embedder the
reciprocal-rank fusion of BM25 and dense cosine (``hybrid``). The rank is 1-based; a chunk that is not ranked
at all within ``depth`` gets ``NOT_RANKED``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragprep.engines.embedder import Embedder
from ragprep.retrieval import Retriever

NOT_RANKED = 10**6
"""The rank of an own chunk the search did not return within its depth."""


def roundtrip_ranks(
    questions: Sequence[str], own: Sequence[str], chunk_ids: Sequence[str], texts: Sequence[str],
    embedder: Embedder | None = None, depth: int = 50,
) -> list[int]:
    """Per question, the 1-based rank of its own chunk (``own[i]``, a chunk id) among ``chunk_ids`` (``texts``):
    hybrid search with an embedder, BM25 alone without one; ``NOT_RANKED`` past ``depth``."""
    if not questions:
        return []
    retriever = Retriever(list(chunk_ids), list(texts), embedder)
    mode = "hybrid" if embedder is not None else "bm25"
    hits = retriever.search_many(list(questions), k=depth, mode=mode)
    out = []
    for wanted, ranked in zip(own, hits):
        out.append(next((h.rank for h in ranked if h.chunk_id == wanted), NOT_RANKED))
    return out
