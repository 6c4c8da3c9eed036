"""Generator rules over tables, charts and pictures."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ragprep.markdown import parse_number, table_rows
from tasks.qa.rules.cells import cell_answer, head_counts, merged_label_rows, unit_from_label
from tasks.qa.rules.facts import (
    _KEY_RE,
    KEY_FRAMES_EN,
    KEY_FRAMES_KO,
    SKIPPED_KEYS,
    UNITS,
    _clause_value,
    _clean_key,
    _handle_echo,
    key_value_question,
)
from tasks.qa.rules.results import results_table
from tasks.qa.rules.text import _TERMINAL_RE, Candidate, ChunkView, _section_ok, doc_phrase, josa, label_phrase, where

# --- tables ------------------------------------------------------------------------------------

_METRIC_HEADERS = {"metric", "metrics", "parameter", "parameters", "measurement", "measurements", "criterion", "criteria",
                   "item", "items", "channel", "quantity", "injury criterion", "property", "항목", "구분", "지표", "측정 항목"}
_LIMIT_RE = re.compile(r"\b(?:limit|threshold|max(?:imum)?|allowable|target|requirement)\b|기준|한계|목표", re.IGNORECASE)
_SKIPPED_COLUMNS = {"how", "why", "what", "when", "who", "note", "notes", "remark", "remarks", "comment", "comments", "비고",
                    "no", "no.", "#", "id", "page", "ref", "reference", "source"}
_COLUMN_NOUNS = {"due": "due date", "owner": "owner", "when": "date"}


@dataclass(frozen=True)
class Table:
    """A parsed table: one header row (a two-row header merged into labels), labelled body rows."""

    header0: str
    columns: list[str]
    groups: list[str]
    rows: list[tuple[str, list[str]]]


def parse_table(markdown: str) -> Table | None:
    """The table's column labels and unambiguous rows, or None when its columns cannot be named.

    A first row whose cells are all equal is a caption merged across the columns and is dropped;
    a second header row (its first cell repeating the first header cell, e.g. "Measured" over
    "Driver") becomes the column labels with the first row as their group. Rows whose label
    repeats, is empty or is a footnote are left out.
    """
    rows = [r for r in table_rows(markdown) if any(c.strip() for c in r)]
    if len(rows) >= 2 and len(rows[0]) > 1 and len({c.strip() for c in rows[0]}) == 1:
        rows = rows[1:]  # one merged caption cell repeated across the columns
        if any(parse_number(c) is not None for c in rows[0][1:]):
            return None  # no header row under the caption: the columns cannot be named
    if len(rows) < 2 or _headless(rows) or _zone_grid(rows):
        return None
    rows = _without_list_numbers(rows)
    header, body = rows[0], rows[1:]
    groups = [""] * len(header)
    if body[0][:1] == header[:1] and len(body[0]) == len(header):
        groups, header, body = header, body[0], body[1:]
    elif _sub_header(header, body[0]):
        # a header cell merged over several columns ("구성" over "정부 | 민간") above a row of sub-labels
        filled = [cell or (header[i - 1] if i else "") for i, cell in enumerate(header)]
        for i in range(1, len(filled)):
            filled[i] = header[i] or filled[i - 1]
        labels = [sub or top for top, sub in zip(filled, body[0])]
        groups = [top if sub and sub != top else "" for top, sub in zip(filled, body[0])]
        header, body = [header[0]] + labels[1:], body[1:]
    columns = [c.strip() for c in header]
    if len({c for c in columns[1:] if c}) < len([c for c in columns[1:] if c]) or not any(columns[1:]):
        duplicated = {c for c in columns[1:] if columns[1:].count(c) > 1}
        columns = [c if c not in duplicated else "" for c in columns]
    labels = [r[0].strip() if r else "" for r in body]
    merged = merged_label_rows(labels, body)
    kept = [(label, [c.strip() for c in r[1:]]) for i, (label, r) in enumerate(zip(labels, body))
            if _row_label_ok(label) and labels.count(label) == 1 and label not in columns and i not in merged]
    if not kept or not any(columns[1:]):
        return None
    return Table(columns[0], columns[1:], [g.strip() for g in groups[1:]], kept)


_MEASURE_CELL_RE = re.compile(r"\d\s?(?:cm|mm|kg|km/h|kph|ms|kN|N|g|%|°)(?![A-Za-z])")


def _headless(rows: list[list[str]]) -> bool:
    """A table continued from a page before without its header row: half or more of its first row's cells are
    numbers or measured values ("R129 100cm- 135cm"), which no header names a column by."""
    cells = [c for c in rows[0] if c.strip()]
    numbers = sum(parse_number(c) is not None for c in cells)
    return bool(cells) and (numbers >= max(1, len(cells) / 2) or any(_MEASURE_CELL_RE.search(c) for c in cells))


_HANGUL_WORD_RE = re.compile(r"[가-힣]")
"""A Korean word or counted value is short ("여성", "28명") but no zone code: Korean tables are not zone grids for it."""


def _zone_grid(rows: list[list[str]]) -> bool:
    """A figure's zone grid or label layout read as a table: most cells empty or a short code ("A1", "2c", "x")."""
    cells = [c.strip() for r in rows for c in r]
    short = sum(len(c) <= 3 and not re.fullmatch(r"\d+(?:[.,]\d+)?", c) and not _HANGUL_WORD_RE.search(c) for c in cells)
    named = [m.group(1).lower() for m in (_ZONE_LABEL_RE.match(c) for c in cells if c) if m]
    labels = bool(named) and len(named) >= 0.7 * len([c for c in cells if c]) and len(set(named)) == 1
    return len(cells) >= 6 and short >= 0.7 * len(cells) or labels  # "Zone 5 | Zone 4 | Zone 6": a figure's layout


_ZONE_LABEL_RE = re.compile(r"^([A-Za-z]+)\s*\d{1,2}[a-z]?$")


_LIST_NUMBER_RE = re.compile(r"^(\d{1,2})[.)]?\s+(?=[A-Za-z가-힣])")


def _without_list_numbers(rows: list[list[str]]) -> list[list[str]]:
    """Row labels without the list numbers a table's first column carries ("1 Maxi-Cosi Pebble" -> "Maxi-Cosi Pebble")
    when every body row is numbered 1, 2, 3, ... in order."""
    numbers = [_LIST_NUMBER_RE.match(r[0].strip()) if r else None for r in rows[1:]]
    if len(numbers) < 2 or not all(numbers) or [int(m.group(1)) for m in numbers] != list(range(1, len(numbers) + 1)):
        return rows
    return [rows[0]] + [[_LIST_NUMBER_RE.sub("", r[0].strip()), *r[1:]] for r in rows[1:]]


def _sub_header(header: list[str], row: list[str]) -> bool:
    """A second header row under horizontally merged header cells: no row label, only non-numeric labels,
    and at least one of them under an empty (merged) header cell."""
    if len(row) != len(header) or row[0].strip() or not any(c.strip() for c in row[1:]):
        return False
    if any(parse_number(c) is not None for c in row[1:] if c.strip()):
        return False
    return any(not top.strip() and sub.strip() for top, sub in zip(header[1:], row[1:]))


def _row_label_ok(label: str) -> bool:
    if not label or label.startswith(("*", "※", "<", "-", "·")) or len(label) > 80 or len(label.split()) > 12:
        return False
    return bool(re.search(r"[A-Za-z가-힣]", label))


_MARK_CELL_RE = re.compile(r"^(?:\(?\d{1,2}\)|[A-Za-z*✓✔×xX]|\d+(?:[.,]\d+)?\s*\+\s*\d+(?:[.,]\d+)?.*)$")
"""A footnote mark "(1)", a tick or single letter, or a tolerance whose '±' was read as '+' ("40.3 + 1.0")."""


def _cell_ok(value: str, label: str) -> bool:
    if _MARK_CELL_RE.match(value.strip()) and not value.strip().isdigit():
        return False
    empty = value.lower() in ("-", "–", "—", "·", "n/a", "nan", "none", "null")  # "nan": an empty cell a data frame printed
    return bool(value) and not empty and value != label and len(value) <= 200


def is_metric_table(table: Table) -> bool:
    """True when the rows are metrics and the columns who or what was measured.

    A metric table's first header reads "Metric", "Criterion", "항목", ...
    """
    return table.header0.strip().lower() in _METRIC_HEADERS


def _column_phrase(name: str, context: str) -> str:
    noun = _COLUMN_NOUNS.get(name.lower(), name)
    if noun.isalpha() and noun[:1].isupper() and noun[1:].islower():
        return noun.lower()  # a one-word header ("Members", "Threshold") is capitalised as a header, not as a name
    return label_phrase(noun, context)


def _row_phrase(label: str, context: str) -> str:
    return label_phrase(label.rstrip("."), context)


@dataclass(frozen=True)
class _TableContext:
    element_id: str
    doc: str
    context: str
    language: str
    stage: str = ""
    """The test's own stage (a report header's "Prototype P2"): its column is asked first."""


_CODE_RE = re.compile(r"^[A-Z]{1,4}\d{1,3}[a-z]?$")
"""A column named by a code ("P2", "DV1"): no article before it."""


def _numeric_column(table: Table, col: int) -> bool:
    values = [cells[col] for _, cells in table.rows if col < len(cells) and cells[col] not in ("", "-")]
    return bool(values) and sum(parse_number(v) is not None for v in values) >= 0.8 * len(values)


def _cell_question(table: Table, col: int, label: str, ctx: _TableContext) -> str | None:
    name, group = table.columns[col], table.groups[col] if col < len(table.groups) else ""
    if ctx.language == "ko":
        return _cell_question_ko(table, col, label, ctx)
    row, column = _row_phrase(label, ctx.context), _column_phrase(name, ctx.context)
    if is_metric_table(table) and _numeric_column(table, col) and not _LIMIT_RE.search(name):
        verb = group.lower() if group.lower().endswith("ed") else "recorded"
        subject = column if column[:1].isdigit() or _CODE_RE.match(column) else f"the {column}"
        return f"In {ctx.doc}, what {row} was {verb} for {subject}?"
    quoted = f'"{label.rstrip(".")}"' if len(label.split()) > 4 else row
    return f"In {ctx.doc}, what is the {column} for {quoted}?"


_KO_COUNTERS = {"명": "몇 명", "개": "몇 개", "건": "몇 건", "곳": "몇 곳", "회": "몇 회", "대": "몇 대", "개소": "몇 곳"}


def ko_label(text: str) -> str:
    """A Korean label set with letter spacing by the PDF ("총인 원", "비 고") joined back ("총인원", "비고")."""
    tokens = text.split()
    if len(tokens) > 1 and all(re.fullmatch(r"[가-힣]{1,3}", t) for t in tokens) and any(len(t) == 1 for t in tokens):
        return "".join(tokens)
    return text


def _cell_question_ko(table: Table, col: int, label: str, ctx: _TableContext) -> str:
    name, group = ko_label(table.columns[col]), ko_label(table.groups[col]) if col < len(table.groups) else ""
    column = f"{group} {name}".strip() if group and group != name else name
    value = next((cells[col] for row, cells in table.rows if row == label and col < len(cells)), "")
    label = ko_label(label)
    counter = re.fullmatch(r"\d[\d,.]*\s*(?P<unit>명|개소|개|건|곳|회|대)", value.strip())
    if counter:
        return f"{ctx.doc}에서 {column}의 {josa(label, '은/는')} {_KO_COUNTERS[counter.group('unit')]}인가요?"
    ending = "얼마인가요" if parse_number(value) is not None else "무엇인가요"
    return f"{ctx.doc}에서 {label}의 {josa(column, '은/는')} {ending}?"


def data_columns(table: Table) -> list[int]:
    """Named columns to ask about: measured columns (not limits), numeric ones first; a reference table
    without measured columns ("Threshold", "Body region") asks about its limit column too."""
    named = [i for i, name in enumerate(table.columns) if name and ko_label(name.strip()).lower() not in _SKIPPED_COLUMNS]
    measured = [i for i in named if not _LIMIT_RE.search(table.columns[i])]
    if not any(_numeric_column(table, i) for i in measured):
        measured = named
    return sorted(measured, key=lambda i: not _numeric_column(table, i))


def limit_column(table: Table) -> int | None:
    """The one limit/threshold/target column of a table, or None."""
    limits = [i for i, name in enumerate(table.columns) if name and _LIMIT_RE.search(name)]
    return limits[0] if len(limits) == 1 else None


def stage_column(table: Table, stage: str) -> int | None:
    """The one column named by the test's own stage ("P2" or "Prototype P2" for stage "Prototype P2"), or None."""
    words = {w.casefold() for w in re.findall(r"[^\W_]+", stage)}
    found = [i for i, name in enumerate(table.columns)
             if name and {w.casefold() for w in re.findall(r"[^\W_]+", name)} <= words and re.search(r"\d", name)]
    return found[0] if len(found) == 1 and words else None


def _columns(table: Table, ctx: _TableContext) -> list[int]:
    """The data columns, the test's own stage column first (a results table's P2 column before P1's)."""
    columns = data_columns(table)
    own = stage_column(table, ctx.stage) if ctx.stage else None
    return sorted(columns, key=lambda i: i != own)


def _table_cells(table: Table, ctx: _TableContext, skip: frozenset[tuple[int, str]] = frozenset()) -> Iterator[Candidate]:
    """One lookup per cell (row x column), except the cells in ``skip`` (column index, row label)."""
    for col in _columns(table, ctx):
        for label, cells in table.rows:
            value = cell_answer(cells[col] if col < len(cells) else "")
            if (col, label) in skip or not _cell_ok(value, label):
                continue
            question = _cell_question(table, col, label, ctx)
            qtype = "numeric" if parse_number(value) is not None else "factual"
            if question and ctx.language == "ko":
                question, value = unit_from_label(question, value, label)
            if question:
                yield Candidate(question, value, qtype, "table", ctx.element_id)




def _limit_checks(table: Table, ctx: _TableContext) -> Iterator[Candidate]:
    """Measured against limit: per measured column, the row closest to its limit, and one yes/no check."""
    limit = limit_column(table)
    if limit is None or not is_metric_table(table) or ctx.language != "en":
        return
    for col in [c for c in _columns(table, ctx) if c != limit and _numeric_column(table, c)][:1]:
        ratios = []
        for label, cells in table.rows:
            measured = parse_number(cells[col]) if col < len(cells) else None
            bound = parse_number(cells[limit]) if limit < len(cells) else None
            if measured is not None and bound:
                ratios.append((measured / bound, label, cells[col], cells[limit]))
        if len(ratios) < 2:
            continue
        ratios.sort(reverse=True)
        column = _column_phrase(table.columns[col], ctx.context)
        subject = column if column[:1].isdigit() else f"the {column}"
        ratio, label, measured, bound = ratios[0]
        question = (
            f"Did the {column} {_row_phrase(label, ctx.context)} of {measured} "
            f"stay within the limit of {bound} in {ctx.doc}?"
        )
        answer = f"{'Yes' if ratio <= 1 else 'No'}: {measured} vs. limit {bound}"
        yield Candidate(question, answer, "comparative", "table", ctx.element_id)
        if ratios[0][0] != ratios[1][0]:
            question = f"In {ctx.doc}, which metric came closest to its limit for {subject}?"
            yield Candidate(question, ratios[0][1], "comparative", "table", ctx.element_id)


_TOTAL_LABEL_RE = re.compile(r"^(?:total|sum|overall|all|합계|총계|소계|계|전체)\b", re.IGNORECASE)


def _highest_rows(table: Table) -> list[tuple[int, str]]:
    """Per named numeric column of a table of comparable categories: (column index, label of its highest row)."""
    if is_metric_table(table) or len(table.rows) < 3:
        return []
    out = []
    for col in data_columns(table):
        values = [(parse_number(re.sub(r"[^\d.,-]", "", cells[col])), label) for label, cells in table.rows
                  if col < len(cells) and re.fullmatch(r"-?[\d.,]+\s?(?:%|명|개|건|원|[A-Za-z/]{0,4})", cells[col].strip())]
        values = [(v, label) for v, label in values if v is not None and not _TOTAL_LABEL_RE.match(label)]
        if len(values) < 3 or len(values) < len(table.rows) - 1 or head_counts(table, col):
            continue
        values.sort(reverse=True)
        if values[0][0] != values[1][0]:
            out.append((col, values[0][1]))
    return out


def _table_highest(table: Table, ctx: _TableContext) -> Iterator[Candidate]:
    """For tables whose rows are comparable categories: the row with the highest value of a named numeric column."""
    for col, label in _highest_rows(table):
        name = table.columns[col]
        if ctx.language == "ko":
            question = f"{ctx.doc}에서 {name} 값이 가장 큰 항목은 무엇인가요?"
        else:
            kind = table.header0.lower() if table.header0 and len(table.header0.split()) <= 3 else "row"
            question = f"In {ctx.doc}, which {kind} has the highest {_column_phrase(name, ctx.context)}?"
        yield Candidate(question, label, "comparative", "table", ctx.element_id)


MAX_CELLS_PER_TABLE = 6
"""Cell lookups asked of one table (its results questions come on top): a big table gives a few, not one per cell."""

_CAPTION_RE = re.compile(r"^(?:Table|Tab\.|표)\s*\d+(?:[.\-]\d+)*", re.IGNORECASE)


_KO_CAPTION_RE = re.compile(
    r"^[\[<〈【□■○●▣※]?\s*(?:\d+\.\s*)?(?P<name>[가-힣A-Za-z0-9][^.:：]{1,58}?)\s*[\]>〉】]?\s*(?:[:：].*)?$"
)


def table_caption(markdown: str, table_markdown: str, language: str = "en") -> str:
    """How a question names a table: its "Table 3.1" label when a caption precedes it in the chunk; in Korean
    also the short title line above it ("[ 제1기및제2기 위원 비교 ]", "2. 광역위원회 위원 구성현황", "□ 1기 탄중위 : ...")."""
    whole = table_markdown.strip()
    position = markdown.find(whole) if whole else -1
    if position < 0 and whole:
        position = markdown.find(whole.splitlines()[0])
    before = [ln.strip() for ln in markdown[:position].splitlines() if ln.strip()] if position > 0 else []
    own = [ln.strip() for ln in whole.split("\n|", 1)[0].splitlines() if ln.strip() and not ln.startswith("|")]
    before = before + own if whole.startswith(("**", "Table", "Tab.")) else before  # a caption the table itself carries
    before = [re.sub(r"^\*\*(.+?)\*\*$", r"\1", ln) for ln in before]  # a bold caption ("**Table 2 Dummy ...**")
    before = [ln for ln in before if not re.match(r"^※|^-\s*\d+\s*-$|^\||^\*", ln)][-2:]  # not a footnote ("* ...")
    for line in reversed(before):
        match = _CAPTION_RE.match(line)
        if match:
            return match.group(0)
    if language == "ko" and before:
        match = _KO_CAPTION_RE.match(before[-1])
        if match and not _TERMINAL_RE.search(match.group("name")) and "다" != match.group("name")[-1:]:
            return ko_label(match.group("name").strip())
    return ""


_PARAGRAPH_RE = re.compile(r"(?m)^(?:#+\s*)?(S\d+(?:\.\d+)*[a-z]?|\d+(?:\.\d+)+)\.?\s")


def _annexed(view: ChunkView, caption: str) -> str:
    """A regulation annex's table label with its annex ("Table 2 of Annex 6"): an annex numbers its tables anew."""
    from tasks.qa.rules.provisions import annex_of

    annex = annex_of(view) if caption and view.handle.kind == "standard" and view.language == "en" else ""
    return f"{caption} of {annex}" if annex and annex.lower() not in caption.lower() else caption


def _paragraph_caption(view: ChunkView, table_markdown: str) -> str:
    """A regulation's table without a caption is named by the numbered paragraph it stands in ("the table of
    paragraph 7.4.1.6.3"); '' for other documents or when no numbered paragraph precedes it."""
    from tasks.qa.rules.provisions import annex_of  # provisions builds on this package's text helpers

    first = next((ln for ln in table_markdown.splitlines() if ln.strip()), "")
    position = view.markdown.find(first) if first and view.handle.kind == "standard" and view.language == "en" else -1
    numbers = _PARAGRAPH_RE.findall(view.markdown[:position]) if position > 0 else []
    annex = annex_of(view)
    return f"the table of paragraph {numbers[-1]}{' of ' + annex if annex else ''}" if numbers else ""


def key_value_rows(markdown: str) -> list[tuple[str, str]] | None:
    """A two-column table of fields and their values, its first row a field too ("Test Name | FO-2024-017"): the
    (key, value) pairs, or None for any other table."""
    rows = [r for r in table_rows(markdown) if any(c.strip() for c in r)]
    if len(rows) < 2 or any(len(r) != 2 for r in rows):
        return None
    if not all(_KEY_RE.match(r[0].strip()) and len(r[0].split()) <= 4 for r in rows):
        return None
    first_key, first_value = rows[0][0].strip().lower(), rows[0][1]
    known = first_key in SKIPPED_KEYS or first_key in KEY_FRAMES_EN or first_key in KEY_FRAMES_KO
    if not (re.search(r"\d", first_value) or known):
        return None  # "구 분 | 현황", "Item | Description": a header row naming columns, not a field and its value
    return [(r[0].strip(), r[1].strip()) for r in rows]


def _key_value_table_candidates(view: ChunkView, doc: str) -> Iterator[Candidate]:
    """Field questions of a key-value table (a report's header table): "For which region was the ... test run?"."""
    for element_id, markdown in view.tables:
        for raw, value in key_value_rows(markdown) or []:
            key = _clean_key(raw)  # "Test Name", "Stage": the handle itself, not asked
            if not key or len(value) < 2 or _handle_echo(value, view) or _clause_value(value):
                continue
            question = key_value_question(key, doc, view.language, generic=view.handle.kind != "document")
            if question:
                qtype = "numeric" if parse_number(value.split()[0].rstrip("%")) is not None else "factual"
                yield Candidate(question, value, qtype, "table", element_id)


def _table_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc = doc_phrase(view) or where(view)
    if not doc:
        return
    yield from _key_value_table_candidates(view, doc)
    parsed = [(element_id, markdown, parse_table(markdown)) for element_id, markdown in view.tables
              if key_value_rows(markdown) is None and results_table(markdown) is None]  # results: rules.results
    parsed = [(e, m, t, _annexed(view, table_caption(view.markdown, m, view.language)) or _paragraph_caption(view, m))
              for e, m, t in parsed if t is not None]
    for element_id, _, table, caption in parsed:
        others = [(t, c) for e, _, t, c in parsed if e != element_id]
        shared = {label for label, _ in table.rows for t, c in others if c == caption and any(label == r for r, _ in t.rows)}
        if others and not caption and shared:
            continue  # several tables share row labels and nothing names this one: its cells are ambiguous
        table = Table(table.header0, table.columns, table.groups, [r for r in table.rows if r[0] not in shared])
        if not table.rows:
            continue
        if view.language == "ko":
            doc_with_table = f"{doc}의 '{caption}' 표" if caption else doc
        else:
            doc_with_table = f"{caption} of {doc}" if caption else doc
        ctx = _TableContext(element_id, doc_with_table, view.markdown, view.language, view.handle.stage)
        # the highest row's own value is the "which is highest" question's twin (the rubric counts it once)
        cells = list(_table_cells(table, ctx, skip=frozenset(_highest_rows(table))))[:MAX_CELLS_PER_TABLE]
        extra = list(_limit_checks(table, ctx)) + list(_table_highest(table, ctx))
        yield from _interleave([cells[:1], extra, cells[1:]])


def _interleave(groups: Sequence[Sequence[Candidate]]) -> Iterator[Candidate]:
    for group in groups:
        yield from group


# --- charts ------------------------------------------------------------------------------------

_GENERIC_SERIES_RE = re.compile(r"^(?:series|계열)\s*\d+$", re.IGNORECASE)
_TIME_RE = re.compile(r"^\d+(?:\.\d+)?\s?(?:ms|s|sec|min|h)$")
_YEAR_RE = re.compile(r"^(?:19|20)\d\d$")


def _chart_series(header: list[str], chart_name: str) -> list[tuple[int, str]]:
    named = [(i, h) for i, h in enumerate(header) if i > 0 and h and not _GENERIC_SERIES_RE.match(h)]
    if not named and len(header) == 2 and chart_name:
        return [(1, chart_name)]  # one anonymous series: the chart's title names it
    return named


def _peak_question(series: str, chart: str, doc: str, categories: list[str], language: str) -> str:
    if language == "ko":
        return f"{doc}의 '{chart}' 차트에서 {series} 값이 가장 큰 지점은 어디인가요?"
    if all(_TIME_RE.match(c) for c in categories):
        return f'In {doc}, at what time does "{series}" peak in the "{chart}" chart?'
    if all(_YEAR_RE.match(c) for c in categories):
        return f'In {doc}, in which year is "{series}" highest in the "{chart}" chart?'
    return f'In {doc}, which category has the highest "{series}" value in the "{chart}" chart?'


def _value_question(series: str, chart: str, doc: str, category: str, language: str) -> str:
    if language == "ko":
        return f"{doc}의 '{chart}' 차트에서 {category}의 {josa(series, '은/는')} 얼마인가요?"
    preposition = "at" if _TIME_RE.match(category) else "in" if _YEAR_RE.match(category) else "for"
    return f'In {doc}, what is the "{series}" value {preposition} {category} in the "{chart}" chart?'


def _chart_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc = doc_phrase(view) or where(view, with_section=False)
    if not doc:
        return
    for element_id, chart_title, markdown in view.charts:
        rows = table_rows(markdown)
        chart = chart_title or (view.handle.section if _section_ok(view) else "")
        if len(rows) < 3 or not chart:
            continue
        header, body = rows[0], rows[1:]
        categories = [r[0] for r in body if r]
        for col, name in _chart_series(header, chart):
            points = [(r[0], r[col]) for r in body if col < len(r) and parse_number(r[col]) is not None]
            if len(points) < 2:
                continue
            ranked = sorted(points, key=lambda p: parse_number(p[1]), reverse=True)
            if parse_number(ranked[0][1]) == parse_number(ranked[1][1]) or parse_number(ranked[0][1]) == 0:
                continue
            yield Candidate(
                _peak_question(name, chart, doc, categories, view.language), ranked[0][0], "comparative", "chart", element_id
            )
            if len(ranked) >= 3:  # the peak's own value would be the "highest" question's twin: ask the runner-up's
                category, value = ranked[1]
                yield Candidate(_value_question(name, chart, doc, category, view.language), value, "numeric", "chart",
                                element_id)


# --- pictures -----------------------------------------------------------------------------------

_GARBLED_NUMBER_RE = re.compile(r"\d(?:[.,]\d+)?\s+(?:\d|[A-Za-z])\b(?!/)")
_KNOWN_UNIT_RE = re.compile(rf"^{UNITS}$")
_WORD_RE = re.compile(r"^[A-Za-z][a-z]+$|^[A-Z]{2,}$|^[A-Z][a-z]*(?:-[A-Za-z]+)+$|^[가-힣]+$")


def _garbled_numbers(text: str) -> bool:
    """A number followed by a lone digit or letter that is no unit ("38.2 9" for "38.2 g")."""
    for match in _GARBLED_NUMBER_RE.finditer(text):
        tail = match.group(0).split()[-1]
        if not _KNOWN_UNIT_RE.match(tail):
            return True
    return bool(re.search(r"\d[A-Za-z]{4,}|[A-Za-z]{2,}\d{3,}", text))


def word_like(line: str, min_words: int = 3) -> bool:
    """True when a line reads as words: at least ``min_words`` words, each a word-shaped token with a vowel
    (or an acronym or Hangul), and no stray symbols."""
    tokens = [t.strip(",.:;!?'\"()") for t in line.split()]
    words = [
        t for t in tokens
        if _WORD_RE.match(t) and (re.search(r"[aeiouyAEIOUY]", t) or t.isupper() or "\uac00" <= t[:1] <= "\ud7a3")
    ]
    return len(words) >= min_words and len(words) == len(tokens) and not re.search(r"[|\\{}\[\]<>=~_]", line)


def picture_text(ocr_text: str) -> str | None:
    """The confident text of a picture worth asking about: its first line when that line reads as words and
    the OCR shows no garbled numbers; None for noisy OCR."""
    lines = [ln.strip() for ln in ocr_text.splitlines() if ln.strip()]
    if not lines or _garbled_numbers(ocr_text):
        return None
    return lines[0] if word_like(lines[0]) and len(lines[0]) <= 120 else None


def _picture_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc, h = doc_phrase(view), view.handle
    if not _section_ok(view):
        return  # "the picture" alone is ambiguous: a picture is named by its slide or section heading
    for element_id, ocr_text in view.pictures:
        text = picture_text(ocr_text)
        if not text:
            continue
        if view.language == "ko":
            place = f"{doc}의 '{h.section}' 그림" if doc else f"'{h.section}' 그림"
            question = f"{place}의 제목은 무엇인가요?"
        else:
            kind = "slide" if h.section_kind == "slide" else "section"
            place = f'the picture on the "{h.section}" {kind}'
            question = f"What does the heading of {place}" + (f" of {doc} say?" if doc else " say?")
        yield Candidate(question, text, "factual", "image", element_id)


