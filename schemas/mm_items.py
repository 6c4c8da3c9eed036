"""``mm_items``: one MMDocRAG candidate set per question and set size.

A set holds the question's gold quotes plus hard negatives, ``n_text`` text quotes and
``n_image`` image quotes (15 = 10 + 5, 20 = 12 + 8), shuffled by a seed. Labels are local:
the i-th entry of ``text_quote_ids`` is ``text{i+1}``, of ``image_quote_ids`` ``image{i+1}``.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pyarrow as pa
from pydantic import BaseModel, Field

from schemas import ArrowType, arrow_schema


class MmItemRow(BaseModel):
    item_id: str = Field(description="From the question's source (qa_id or multi-quote key) and the set size.")
    q_key: str = Field(description="The question this set is for: a qa_id, or multi:<hash> for a multi-quote question.")
    origin: Literal["qa_pair", "multi_quote"]
    chunk_id: str = Field(description="Chunk of the (first) gold quote; the item follows it into its split.")
    doc_id: str
    source_path: str
    question: str
    answer: str
    question_type: str
    evidence_modality_type: list[str] = Field(description="Modalities of the gold quotes: text, table, figure, chart, picture.")
    set_size: int
    n_text: int
    n_image: int
    text_quote_ids: list[str] = Field(description="quote_id of text1, text2, ... in order.")
    image_quote_ids: list[str] = Field(description="quote_id of image1, image2, ... in order.")
    gold_quote_ids: list[str]
    gold_labels: list[str] = Field(description="Local labels of the gold quotes, e.g. ['text3', 'image1'].")
    gold_support: list[float] = Field(description="Share of the answer's words each gold quote contains (same order as gold_quote_ids).")
    short: bool = Field(description="True when the pools could not fill the budget (fewer candidates than set_size).")
    short_text: int = Field(description="Text slots left empty.")
    short_image: int = Field(description="Image slots left empty.")
    gold_dropped: int = Field(description="Gold quotes beyond a modality's budget, left out of the set (the weakest first).")
    guard_skipped_answer: int = Field(description="Candidates skipped because they contain the answer.")
    guard_skipped_margin: int = Field(description="Candidates skipped for scoring above the weakest gold by more than the margin.")
    same_doc_negatives: int
    corpus_negatives: int
    seed: Annotated[int, ArrowType(pa.int64())]
    provider: str = Field(description="Who wrote the question (qa_pairs provider, or the multi-quote generator).")
    model: str
    prompt: str


MM_ITEMS_SCHEMA = arrow_schema(MmItemRow)
