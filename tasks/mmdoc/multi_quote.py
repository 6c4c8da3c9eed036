"""Multi-quote questions: one question written across two quotes of one document that are connected.

MMDocRAG items often need several quotes. Per document (and split), up to
``multi_quote_items_per_doc`` groups are drawn (deterministically from the seed) among the
pairs of quotes that something connects: the purpose of a test and the result it measured (a
purpose line and the table row of the metric it names), or two measured values of the same
kind of quantity in different places (same unit and head noun: "peak sled acceleration" and
"T1 acceleration"), which the question compares. Quotes nothing connects give no question.
The LLM writes the question from the quotes, the document's handle and the connection found
(``generate_multi_qa`` prompt); offline, the heuristic provider writes it from the connection.
The group's quotes are the gold.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from ragprep.engines.generator import Generator
from ragprep.ids import stable_id
from ragprep.markdown import KEY_VALUE_RE, parse_number
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


# --- facts of a quote ----------------------------------------------------------------------

_FACT_SPLIT_RE = re.compile(r"(?<=[.!?。])\s+|\n+")


def fact_of(text: str) -> str | None:
    """The sentence or line a quote contributes: the first complete one with a digit, else the first of 6+ words;
    reference-list and contents lines never count."""
    pieces = [s.strip(" -•*#|") for s in _FACT_SPLIT_RE.split(text) if s.strip(" -•*#|")]
    pieces = [s for s in pieces if not rules.is_reference_or_toc_line(s)]
    with_digit = [s for s in pieces if re.search(r"\d", s) and len(s.split()) >= 3]
    long_enough = [s for s in pieces if len(s.split()) >= 6]
    chosen = (with_digit or long_enough or [None])[0]
    return chosen[:300] if chosen else None


def _fact(quote: QuoteRow) -> str | None:
    return fact_of(quote.text if quote.modality == "text" else (quote.ocr_text or quote.vlm_text or ""))


@dataclass(frozen=True)
class Measurement:
    """A named measured value in a quote: "peak sled acceleration" = "10.4 g"."""

    metric: str
    value: str
    number: float
    unit: str

    @property
    def head(self) -> str:
        """The quantity measured: the metric's last word, abbreviations expanded ("accel" -> "acceleration")."""
        word = self.metric.split()[-1].lower()
        return {"accel": "acceleration", "decel": "deceleration", "defl": "deflection"}.get(word, word)


@dataclass(frozen=True)
class Features:
    """What can connect a quote to another: its measurements, purpose line and metric-table rows."""

    measurements: tuple[Measurement, ...] = ()
    purpose: str = ""
    table: rules.Table | None = None


_UNIT_IN_LABEL_RE = re.compile(r"\s*\((?P<unit>[^()]{1,8})\)\s*$")
_MEASURE_RE = re.compile(rf"^(?P<metric>[A-Za-z][A-Za-z0-9\- ]{{2,50}}?)\s+(?:(?:measured\s+)?(?:at|of)\s+)?(?P<value>(?P<number>\d[\d.,]*)\s?(?P<unit>{rules.UNITS}))$")
_PURPOSE_KEYS = {"purpose", "objective", "aim", "goal", "목적"}


def features(quote: QuoteRow) -> Features:
    """The connectable features of a quote (text lines, or the Markdown table of a slide's table quote)."""
    text = search_text(quote)
    table = rules.parse_table(quote.text) if quote.type == "table" and "|" in quote.text else None
    found, purpose = [], ""
    for line in text.splitlines():
        line = re.sub(r"^\s*[-*•]\s+", "", line).strip()
        pair = KEY_VALUE_RE.match(line)
        if pair and pair.group("key").strip().lower() in _PURPOSE_KEYS:
            purpose = pair.group("value").strip()
        match = _MEASURE_RE.match(line)
        if match and not rules.has_clause_word(match.group("metric")):
            number = parse_number(match.group("number"))
            if number is not None:
                found.append(Measurement(match.group("metric").strip(), match.group("value"), number, match.group("unit")))
    if table is not None and rules.is_metric_table(table):
        found.extend(_table_measurements(table))
    return Features(tuple(found), purpose, table if table is not None and rules.is_metric_table(table) else None)


def _table_measurements(table: rules.Table) -> list[Measurement]:
    columns = rules.data_columns(table)
    if not columns:
        return []
    col = columns[0]
    out = []
    for label, cells in table.rows:
        unit = _UNIT_IN_LABEL_RE.search(label)
        number = parse_number(cells[col]) if col < len(cells) else None
        if unit and number is not None:
            metric = f"{rules.label_phrase(table.columns[col], '')} {rules.label_phrase(_UNIT_IN_LABEL_RE.sub('', label), '')}".strip()
            out.append(Measurement(metric, f"{cells[col]} {unit.group('unit')}", number, unit.group("unit")))
    return out


# --- connections -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Connection:
    """What links two quotes, and the question and answer it makes."""

    kind: str
    description: str
    question: str
    answer: str
    question_type: str


_PURPOSE_VERBS = {"verify", "assess", "confirm", "check", "measure", "evaluate", "validate", "compare", "determine",
                  "investigate", "demonstrate", "quantify", "test", "reduce", "improve", "show", "establish", "review"}


def _metric_key(label: str) -> str:
    return _UNIT_IN_LABEL_RE.sub("", label).strip().lower()


def purpose_result(purpose: str, table: rules.Table, handle: str) -> Connection | None:
    """The result a test was run for: a metric named in its purpose line, read from the results table (with its limit)."""
    text = purpose.lower()
    for label, cells in table.rows:
        key = _metric_key(label)
        if len(key) < 3 or not re.search(rf"\b{re.escape(key)}\b", text):
            continue
        columns = rules.data_columns(table)
        named = [c for c in columns if table.columns[c].lower() in text] or columns
        col, limit = named[0], rules.limit_column(table)
        if col >= len(cells) or not cells[col]:
            return None
        column = rules.label_phrase(table.columns[col], text)
        bound = cells[limit] if limit is not None and limit < len(cells) else ""
        lead = purpose[:1].lower() + purpose[1:]
        opening = (f"{handle[:1].upper() + handle[1:]} was run to {lead}." if lead.split()[0] in _PURPOSE_VERBS
                   else f'The purpose of {handle} was "{purpose}".')
        what = f"What {rules.label_phrase(label, text)} was measured for the {column}"
        question = f"{opening} {what}, and what is its limit?" if bound else f"{opening} {what}?"
        answer = f"{cells[col]} for the {column}, against a limit of {bound}" if bound else cells[col]
        description = f"the purpose of the test names {label}; the results table gives its measured value"
        return Connection("purpose_result", description, question, answer, "numeric")
    return None


def compare_measurements(a: Measurement, b: Measurement, handle: str, language: str) -> Connection | None:
    """Two measured values of the same kind of quantity (same unit and head noun, different metrics): which is higher."""
    if a.unit != b.unit or a.head != b.head or a.metric.lower() == b.metric.lower() or a.number == b.number:
        return None
    high, low = (a, b) if a.number > b.number else (b, a)
    description = f"two measured values of {a.head} in {a.unit}: {a.metric} and {b.metric}"
    if language == "ko":
        question = f"{handle}에서 {rules.josa(a.metric, '과/와')} {b.metric} 중 어느 쪽이 더 컸나요?"
        answer = f"{high.metric} ({high.value}, {low.metric} {low.value})"
    else:
        first, second = rules.label_phrase(a.metric, ""), rules.label_phrase(b.metric, "")
        question = f"In {handle}, which was higher: the {first} or the {second}?"
        answer = f"the {rules.label_phrase(high.metric, '')} ({high.value}, against {low.value} for the {rules.label_phrase(low.metric, '')})"
    return Connection("comparison", description, question, answer, "comparative")


def connect(a: Features, b: Features, handle: str, language: str) -> Connection | None:
    """The first connection between two quotes' features, or None when nothing connects them."""
    if not handle:
        return None
    for purpose, table in ((a.purpose, b.table), (b.purpose, a.table)):
        if purpose and table is not None and language == "en":
            found = purpose_result(purpose, table, handle)
            if found:
                return found
    for first in a.measurements:
        for second in b.measurements:
            found = compare_measurements(first, second, handle, language)
            if found:
                return found
    return None


# --- handles -------------------------------------------------------------------------------------

_TEST_NAME_RE = re.compile(r"^\s*(?:[-*]\s*)?Test Name\s*[:：]\s*(?P<name>\S.{2,80}?)\s*$", re.MULTILINE | re.IGNORECASE)
_STAGE_RE = re.compile(r"^\s*(?:[-*]\s*)?Stage\s*[:：]\s*(?P<stage>\S.{1,40}?)\s*$", re.MULTILINE | re.IGNORECASE)


def quote_handle(quotes: Sequence[QuoteRow], language: str) -> str:
    """How a question names the document of these quotes: its test name (and stage) when a quote states it,
    else its title (the first title quote, or a short first text quote, of the first page); '' when unknown."""
    for quote in quotes:
        name = _TEST_NAME_RE.search(quote.text or "")
        if name:
            stage = _STAGE_RE.search(quote.text or "")
            view = rules.ChunkView(title="", language=language, markdown="",
                                   handle=rules.Handle(test_name=name.group("name"), stage=stage.group("stage") if stage else ""))
            return rules.doc_phrase(view)
    first_page = min((q.page_id for q in quotes), default=0)
    for quote in quotes:
        text = (quote.text or "").strip()
        if quote.page_id == first_page and quote.type in ("title", "text") and rules.real_title(text, Path(quote.source_path).name):
            return f"'{text}'" if language == "ko" else f'"{text}"'
    return ""


class QuoteGroup(list):
    """A group of quotes (a list, as before) that also carries its document's handle and the connection found."""

    handle: str = ""
    connection: Connection | None = None


# --- groups ---------------------------------------------------------------------------------------


def _connected_pairs(members: Sequence[QuoteRow], handle: str) -> list[tuple[QuoteRow, QuoteRow, Connection]]:
    feats = {q.quote_id: features(q) for q in members}
    useful = [q for q in members if feats[q.quote_id].measurements or feats[q.quote_id].purpose or feats[q.quote_id].table]
    out = []
    for i, first in enumerate(useful):
        for second in useful[i + 1 :]:
            if first.modality == "image" and second.modality == "image":
                continue
            language = language_of(search_text(first) + " " + search_text(second))
            connection = connect(feats[first.quote_id], feats[second.quote_id], handle, language if language != "other" else "en")
            if connection:
                out.append((first, second, connection))
    return out


def _split_members(by_doc: dict[str, list[QuoteRow]], split_of_quote: Callable[[QuoteRow], str] | None) -> dict[str, list[QuoteRow]]:
    if split_of_quote is None:
        return by_doc
    out: dict[str, list[QuoteRow]] = {}
    for doc_id, members in by_doc.items():
        for quote in members:
            out.setdefault(f"{doc_id}:{split_of_quote(quote)}", []).append(quote)
    return out


def pick_groups(
    quotes: Sequence[QuoteRow], per_doc: int, seed: int, split_of_quote: Callable[[QuoteRow], str] | None = None
) -> list[list[QuoteRow]]:
    """Up to ``per_doc`` connected pairs of quotes per document (each a :class:`QuoteGroup`); with
    ``split_of_quote`` a group never mixes splits. Quotes nothing connects give no group."""
    by_doc: dict[str, list[QuoteRow]] = {}
    for quote in sorted(quotes, key=lambda q: (q.doc_id, q.page_id, q.layout_id)):
        by_doc.setdefault(quote.doc_id, []).append(quote)
    handles = {doc_id: quote_handle(members, language_of(" ".join(q.text for q in members[:20]))) for doc_id, members in by_doc.items()}
    groups: list[list[QuoteRow]] = []
    for key, members in sorted(_split_members(by_doc, split_of_quote).items()):
        handle = handles[members[0].doc_id]
        pairs = _connected_pairs([q for q in members if q.chunk_id], handle)
        random.Random(stable_id("multi", seed, key)).shuffle(pairs)
        used: set[str] = set()
        for first, second, connection in pairs:
            if len(used) >= 2 * per_doc:
                break
            if first.quote_id in used or second.quote_id in used:
                continue
            group = QuoteGroup(sorted([first, second], key=lambda q: (q.page_id, q.layout_id)))
            group.handle, group.connection = handle, connection
            used.update((first.quote_id, second.quote_id))
            groups.append(group)
    return groups


async def write_questions(
    groups: Sequence[list[QuoteRow]], generator: Generator, prompt: PromptTemplate, handles: Mapping[str, str] | None = None
) -> tuple[list[Question], list[str]]:
    """(questions, flags): one question per connected group; a group with no connection gives none, and a
    failed generation is a flag, not an error. ``handles`` (doc_id -> how questions name it) override the
    handle read from the quotes."""

    async def one(group: list[QuoteRow]) -> Question | str | None:
        language = language_of(" ".join(_fact(q) or "" for q in group))
        handle = (handles or {}).get(group[0].doc_id) or getattr(group, "handle", "") or quote_handle(group, language)
        connection = getattr(group, "connection", None)
        if connection is None and len(group) >= 2:
            connection = connect(features(group[0]), features(group[1]), handle, language if language != "other" else "en")
        if connection is None:
            return None  # nothing connects the quotes: no question rather than a concatenation
        generation = await generator.generate(
            "generate_multi_qa",
            prompt,
            {"handle": handle, "connection": connection.description,
             "quotes": [{"kind": q.type, "page": q.page_id + 1, "text": search_text(q)[:2000]} for q in group]},
            heuristic=lambda: {"question": connection.question, "answer": connection.answer, "question_type": connection.question_type},
            output_model=MultiQuoteQuestion,
        )
        if generation.data is None:
            return f"multi_quote_failed: {Path(group[0].source_path).name}: {generation.flag}"
        data = MultiQuoteQuestion.model_validate(generation.data)
        if not data.question.strip() or not data.answer.strip():
            return None  # the model found no good question about the connection
        gold = [q.quote_id for q in group]
        return Question(
            q_key="multi:" + stable_id("multi_q", *gold, data.question), origin="multi_quote", doc_id=group[0].doc_id,
            source_path=group[0].source_path, chunk_id=group[0].chunk_id or "", question=data.question.strip(),
            answer=data.answer.strip(), question_type=data.question_type, provider=generation.provider,
            model=generation.model, prompt=generation.prompt_ref, gold_ids=gold,
        )

    results = await run_items(groups, one)
    return [r for r in results if isinstance(r, Question)], [r for r in results if isinstance(r, str)]
