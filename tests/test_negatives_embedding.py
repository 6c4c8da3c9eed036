"""Negatives embed the documents that have questions first (tasks/mmdoc/negatives.py): another document's quotes are
embedded only when a set runs out of its own document's candidates, and the sets are those of embedding every quote.
Synthetic quotes and a hashing embedder: fast, and the sets are compared exactly."""

from __future__ import annotations

import numpy as np

from ragprep.settings import Settings
from schemas.quotes import QuoteRow
from tasks.mmdoc.negatives import Question, QuotePool, mine_candidate_sets
from tests.downstream import HashingEmbedder

TOPICS = ["barrier offset", "airbag vent", "seat belt pretensioner", "door intrusion", "pulse peak", "dummy head",
          "steering column", "pedal travel", "sill beam", "battery tray"]


def _quotes(doc: str, n: int) -> list[QuoteRow]:
    return [QuoteRow(quote_id=f"{doc}-{i}", doc_id=doc, source_path=f"/docs/{doc}.pptx", unit="slide", page_id=i,
                     layout_id=0, modality="text", type="text", bbox=[0, 0, 10, 10], page_size=[100, 100],
                     text=f"Slide {i} of {doc}: the {TOPICS[(i + len(doc)) % len(TOPICS)]} measured in test {i} "
                          f"stayed within the limit of the {doc} programme.",
                     layout_backend="python-pptx")
            for i in range(n)]


class _Recording(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def passages(self, texts):
        self.embedded += list(texts)
        return super().passages(texts)


def _question(quotes: list[QuoteRow]) -> Question:
    gold = quotes[0]
    return Question(q_key="q1", origin="multi_quote", doc_id=gold.doc_id, source_path=gold.source_path, chunk_id="c",
                    question="Which barrier offset stayed within the limit?", answer="the barrier offset",
                    question_type="factual", provider="test", model="test", prompt="test", gold_ids=[gold.quote_id])


def _settings(budget: tuple[int, int]) -> Settings:
    return Settings(negatives={"candidate_sets": [budget], "same_split": False})


def test_a_document_without_questions_is_not_embedded_while_the_sets_fill_from_their_own(monkeypatch):
    asked, other = _quotes("asked", 6), _quotes("other", 6) + _quotes("third", 6)
    question = _question(asked)
    lazy = _Recording()
    items, stats = mine_candidate_sets([question], asked + other, [], lazy, _settings((4, 0)))
    assert stats.sets == 1 and items[0].same_doc_negatives == 3 and items[0].corpus_negatives == 0
    assert {t.split(":")[0].split(" of ")[1] for t in lazy.embedded} == {"asked"}  # only the asked document

    # a budget its own document cannot fill: the other documents are embedded, and the sets are the eager ones
    wide = _Recording()
    lazy_items, lazy_stats = mine_candidate_sets([question], asked + other, [], wide, _settings((10, 0)))
    assert (lazy_items[0].same_doc_negatives, lazy_items[0].corpus_negatives) == (4, 5) and {t.split(":")[0].split(" of ")[1] for t in wide.embedded} == {
        "asked", "other", "third"}

    def embed_all(pool, with_gold, progress=None):
        return pool.index.embed_where(np.ones(len(pool.index.quotes), dtype=bool), progress)

    monkeypatch.setattr(QuotePool, "embed_needed", embed_all)
    eager_items, eager_stats = mine_candidate_sets([question], asked + other, [], _Recording(), _settings((10, 0)))
    assert [i.model_dump() for i in lazy_items] == [i.model_dump() for i in eager_items]
    assert lazy_stats == eager_stats  # a set built twice is counted once
    eager_small, _ = mine_candidate_sets([question], asked + other, [], _Recording(), _settings((4, 0)))
    assert [i.model_dump() for i in items] == [i.model_dump() for i in eager_small]
