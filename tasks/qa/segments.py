"""The QA flag ``unsupported_segment``: a generated answer with a sentence its chunk does not support.

The answer is matched against its own chunk with the lexical scorer (content words and numbers;
no model, so the qa stage stays fast and deterministic), one sentence per segment. Each sentence
below ``qa.segment_threshold`` is quoted in the flag's reason, so reviewers see which part to
check. A one-sentence answer already flagged ``unsupported_answer`` or ``number_not_in_chunk`` is
not flagged again: its only segment is the whole answer.
"""

from __future__ import annotations

from ragprep.matching.matcher import MatchOptions, match_sentences
from ragprep.matching.scoring import BlendScorer, Candidate
from ragprep.matching.sentences import split_sentences

CODE = "unsupported_segment"
QUOTE_CHARS = 160


def unsupported_segments(answer: str, chunk_text: str, threshold: float) -> tuple[list[str], int]:
    """(the answer's sentences its chunk supports below ``threshold``, the number of sentences)."""
    sentences = split_sentences(answer)
    if not sentences or not chunk_text.strip():
        return [], len(sentences)
    options = MatchOptions(max_span_sentences=1, span_candidates=1, segment_penalty=0.0, null_score=0.0, threshold=threshold)
    result = match_sentences("", answer, sentences, [Candidate("chunk", chunk_text)], BlendScorer(None), options)
    return [s.text for s in result.unsupported], len(sentences)


def unsupported_segment_flag(answer: str, chunk_text: str, threshold: float, already_flagged: bool = False) -> tuple[str, str] | None:
    """``("unsupported_segment", reason quoting the segments)``, or None when every segment is supported."""
    quoted, n_sentences = unsupported_segments(answer, chunk_text, threshold)
    if not quoted or (n_sentences == 1 and already_flagged):
        return None
    shown = "; ".join(f"\u201c{q if len(q) <= QUOTE_CHARS else q[:QUOTE_CHARS - 1] + '…'}\u201d" for q in quoted[:3])
    more = f" and {len(quoted) - 3} more" if len(quoted) > 3 else ""
    return CODE, f"{len(quoted)} of {n_sentences} answer sentence(s) not supported by the chunk: {shown}{more}"
