"""The windows a retrieved passage is read in, cut the same way when the index is built and when ``ask`` reads.

Two readers look past a passage's first 512 tokens after retrieval, each in windows of its own:

* the embedder re-ranker (``tasks/train/reranker.py``) reads a passage's indexed text (context + text) in
  overlapping windows of ``RERANK_WINDOW_WORDS`` words, each led by the report header block of a Ver.1 text
  (:func:`rerank_windows`);
* the reference matcher's embedded scorer (``ragprep/matching/scoring.py``) reads a candidate's text in windows
  of about ``refmatch.window_words`` words cut at line ends (``scoring.windows``); a candidate is a passage
  (``ask``, ``refmatch`` without chunk ids) or a whole chunk, its passages joined (``refmatch`` with chunk ids).

:func:`index_windows` lists every such window of an index's passages and chunks, so ``ragprep index`` embeds
them into the passage cache once, and an ``ask`` or ``refmatch`` afterwards finds every window vector there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ragprep.matching.scoring import windows as match_windows

HEADER_RULE = "\n---\n"
"""What separates a Ver.1 chunk's report header block from its body (``markdown_v1``)."""
RERANK_WINDOW_WORDS = 160
"""Words per window of the embedder re-ranker."""
RERANK_OVERLAP = 40
"""Words two consecutive re-ranker windows share."""


def rerank_windows(text: str, window_words: int = RERANK_WINDOW_WORDS, overlap: int = RERANK_OVERLAP) -> list[str]:
    """The passage as overlapping windows of words, each led by a Ver.1 header block; ``[text]`` when short."""
    header, body = "", text
    if HEADER_RULE in text:
        head, rest = text.split(HEADER_RULE, 1)
        if len(head.split()) < 80:  # a header block, not a horizontal rule inside the body
            header, body = head.strip() + "\n\n", rest
    words = body.split()
    if len(words) <= window_words:
        return [text]
    step = max(1, window_words - overlap)
    starts = range(0, max(1, len(words) - overlap), step)
    return [header + " ".join(words[s:s + window_words]) for s in starts]


def index_windows(indexed: Sequence[str], bodies: Sequence[str], chunk_bodies: Iterable[str],
                  match_words: int) -> list[str]:
    """Every distinct window the readers after retrieval embed for an index: re-ranker windows of each passage's
    ``indexed`` text, matcher windows (``match_words``) of each passage ``body`` and of each whole chunk's body."""
    out: dict[str, None] = {}
    for text in indexed:
        out.update(dict.fromkeys(rerank_windows(text)))
    for text in [*bodies, *chunk_bodies]:
        out.update(dict.fromkeys(match_windows(text, match_words)))
    return list(out)
