"""The windows a retrieved passage is read in, cut the same way when the index is built and when ``ask`` reads.

Two readers look inside a retrieved passage, each in windows of its own:

* the embedder re-ranker (``tasks/train/reranker.py``, trained or not) reads a passage's indexed text (context +
  text) in overlapping windows of ``RERANK_WINDOW_WORDS`` words, each led by the report header block of a Ver.1
  text (:func:`rerank_windows`);
* the reference matcher's scorer (``ragprep/matching/scoring.py``) reads a candidate's text in windows of about
  ``refmatch.window_words`` words cut at line ends (``scoring.windows``); the ``embedded`` and ``reranker``
  scorers embed them with the index's embedder, the ``lexical`` and ``cross-encoder`` scorers never do.

:func:`index_windows` lists the windows an ``ask`` can read, so ``ragprep index`` embeds them into the passage
cache once (each distinct text once: a window equal to a passage is the passage's vector) and an ``ask`` finds
every window vector there: the re-ranker's windows of every passage, and the matcher's windows of every passage
body when the configured scorer embeds them. ``ask`` cites passages, so a whole chunk's windows (what
``ragprep refmatch`` reads for an answer that names its chunk ids) are not embedded at index time: refmatch
embeds the windows of all its answers' chunks in one batch when it runs.
"""

from __future__ import annotations

from collections.abc import Sequence

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


MATCHER_EMBEDS = frozenset({"embedded", "reranker"})
"""The ``refmatch.scorer`` kinds that embed the matcher's windows with the index's embedder."""


def index_windows(indexed: Sequence[str], bodies: Sequence[str], match_words: int | None) -> list[str]:
    """Every distinct window an ``ask`` over these passages can read: re-ranker windows of each passage's
    ``indexed`` text, and matcher windows (``match_words`` words; none when None: a scorer that embeds no window)
    of each passage ``body``."""
    out: dict[str, None] = {}
    for text in indexed:
        out.update(dict.fromkeys(rerank_windows(text)))
    if match_words is not None:
        for text in bodies:
            out.update(dict.fromkeys(match_windows(text, match_words)))
    return list(out)
