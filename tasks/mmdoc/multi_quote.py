"""Multi-quote questions: one question written across 2-3 quotes of one document.

MMDocRAG items often need several quotes. Per document, up to
``multi_quote_items_per_doc`` groups are drawn (deterministically from the seed): two
text quotes from different pages where possible, and every other group a third, image,
quote (a table or figure whose OCR/VLM text has a fact). The LLM writes the question
(``generate_multi_qa`` prompt); offline, the heuristic provider asks about one fact
sentence of each quote and answers with those sentences. The group's quotes are the gold.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from ragprep.engines.generator import Generator
from ragprep.ids import stable_id
from ragprep.prompts import PromptTemplate
from schemas.quotes import QuoteRow
from tasks.mmdoc.negatives import Question, search_text
from tasks.qa import rules
from tasks.qa.flags import language_of
from tasks.stage import run_items


class MultiQuoteQuestion(BaseModel):
    question: str
    answer: str
    question_type: str = "factual"


def _fact(quote: QuoteRow) -> str | None:
    return rules.fact_of(quote.text if quote.modality == "text" else (quote.ocr_text or quote.vlm_text or ""))


def pick_groups(
    quotes: Sequence[QuoteRow], per_doc: int, seed: int, split_of_quote: Callable[[QuoteRow], str] | None = None
) -> list[list[QuoteRow]]:
    """Up to ``per_doc`` groups per document; with ``split_of_quote`` a group never mixes splits
    (the documents' quotes are grouped per split, the largest split first)."""
    by_doc: dict[str, list[QuoteRow]] = {}
    for quote in sorted(quotes, key=lambda q: (q.doc_id, q.page_id, q.layout_id)):
        if quote.chunk_id and _fact(quote):
            by_doc.setdefault(quote.doc_id, []).append(quote)
    if split_of_quote is not None:
        split_docs: dict[str, list[QuoteRow]] = {}
        for doc_id, members in by_doc.items():
            per_split: dict[str, list[QuoteRow]] = {}
            for quote in members:
                per_split.setdefault(split_of_quote(quote), []).append(quote)
            for name, part in per_split.items():
                split_docs[f"{doc_id}:{name}"] = part
        by_doc = split_docs
    groups: list[list[QuoteRow]] = []
    for doc_id, members in sorted(by_doc.items()):
        texts = [q for q in members if q.modality == "text"]
        images = [q for q in members if q.modality == "image"]
        if len(texts) < 2:
            continue
        rng = random.Random(stable_id("multi", seed, doc_id))
        used: set[str] = set()
        for k in range(per_doc):
            first = rng.choice([q for q in texts if q.quote_id not in used] or texts)
            others = [q for q in texts if q.quote_id != first.quote_id and q.quote_id not in used]
            elsewhere = [q for q in others if q.page_id != first.page_id] or others
            if not elsewhere:
                break
            second = rng.choice(elsewhere)
            group = [first, second]
            if k % 2 == 1 and images:
                group.append(rng.choice(images))
            used.update(q.quote_id for q in group)
            groups.append(sorted(group, key=lambda q: (q.page_id, q.layout_id)))
    return groups


async def write_questions(
    groups: Sequence[list[QuoteRow]], generator: Generator, prompt: PromptTemplate
) -> tuple[list[Question], list[str]]:
    """(questions, flags): one question per group; a failed generation is a flag, not an error."""

    async def one(group: list[QuoteRow]) -> Question | str:
        document = Path(group[0].source_path).name
        facts = [_fact(q) or "" for q in group]
        language = language_of(" ".join(facts))
        generation = await generator.generate(
            "generate_multi_qa",
            prompt,
            {"document": document,
             "quotes": [{"kind": q.type, "page": q.page_id + 1, "text": search_text(q)[:2000]} for q in group]},
            heuristic=lambda: rules.multi_quote_question(document, facts, language),
            output_model=MultiQuoteQuestion,
        )
        if generation.data is None:
            return f"multi_quote_failed: {document}: {generation.flag}"
        data = MultiQuoteQuestion.model_validate(generation.data)
        gold = [q.quote_id for q in group]
        return Question(
            q_key="multi:" + stable_id("multi_q", *gold, data.question), origin="multi_quote", doc_id=group[0].doc_id,
            source_path=group[0].source_path, chunk_id=group[0].chunk_id or "", question=data.question.strip(),
            answer=data.answer.strip(), question_type=data.question_type, provider=generation.provider,
            model=generation.model, prompt=generation.prompt_ref, gold_ids=gold,
        )

    results = await run_items(groups, one)
    return [r for r in results if isinstance(r, Question)], [r for r in results if isinstance(r, str)]
