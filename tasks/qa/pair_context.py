"""``PairContext``: everything the critic sees of one QA pair (built by ``judge.py``, read by ``critic_rules.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


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
    title_repeats: Mapping[str, int] = field(default_factory=dict)
    """Per normalised chunk title of the pair's document, how many of its chunks carry it (running heads repeat)."""
    roundtrip_rank: int | None = None
    """The rank of the pair's own chunk when the question is searched over the whole corpus (None: not run)."""
    roundtrip_k: int = 0
    """The own chunk must rank within this many (0: the round trip is not checked)."""
    siblings: tuple[tuple[str, str], ...] = ()
    """(question, answer) of the other pairs generated from the same chunk (a value asked twice; the same question with
    another answer included)."""
    doc_kind: str = ""
    """The kind of the pair's document read off its chunks (``tasks.qa.doc_kind``): the auto-approval band's first part."""
