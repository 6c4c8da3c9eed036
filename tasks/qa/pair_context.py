"""``PairContext``: everything the critic sees of one QA pair (built by ``judge.py``, read by ``critic_rules.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PairContext:
    """Everything the critic sees of one pair."""

    question: str
    answer: str
    chunk_markdown: str
    """The chunk text the pair was generated from (``markdown_v0``, else ``markdown``)."""
    chunk_title: str
    file_name: str
    """The document's file name (never a good handle)."""
    question_type: str
    target_modality: str
    language: str
    """``en`` | ``ko`` | ``other``."""
    flags: tuple[str, ...] = ()
    """Flags already on the pair (``near_duplicate``, ``ambiguous_gold``, ...)."""
    answer_also_in: int = 0
    """How many other chunks have a pair with the same answer (normalised): boilerplate or ambiguity."""
