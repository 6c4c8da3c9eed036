"""Generator rule over crash-test results tables: tests (ids, stages, variants, dates) by measures with units.

A test report or deck often compares tests side by side: its columns are test numbers ("| | 11391 | 14084 |") and
its rows measures whose units stand in the label ("Chest Deflection [mm]"), or transposed (tests as rows, a measure
per column: "| | OLC [g] |"). The generic table rule reads such a header as a table continued without its header
(numbers in the first row) and would ask "what is the 11391 for Head?". Here a cell is asked as row x column with both
named: "In test 11391 of <deck>, what was the driver's chest deflection?" -> "-26.56 mm" (the unit from the label).
Empty cells (``nan``, ``-``, blank) are never asked, one comparison of two tests is asked on one measure only where
"higher" means something (both values positive, distinct), and rows of different units are never ranked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ragprep.markdown import parse_number, table_rows
from tasks.qa.registry import rule
from tasks.qa.rules.text import Candidate, ChunkView, _section_ok, doc_phrase

_TEST_ID_RE = re.compile(
    r"^(?:\d{3,}|[A-Z]{1,5}[-_]?\d{1,5}[a-z]?|[A-Z]{1,5}-\d{2,4}-\d{2,5}|\d{4}-\d{2}-\d{2}|\d{1,2}[./]\d{1,2}[./]\d{2,4})$"
)
"""A test's id as a column or row label: a test number (11391), a stage or variant code (P2, DV1, V-3), a test code
(FO-2024-017) or a date."""

_UNIT_LABEL_RE = re.compile(r"^(?P<name>.*?[A-Za-z].*?)\s*[\[(](?P<unit>[^\[\]()]{0,12})[\])]\s*$")
"""A measure label with its unit in brackets: "Chest Deflection [mm]", "HIC 15 []" (no unit), "OLC [g]"."""

_EMPTY_CELLS = {"", "-", "–", "—", "nan", "none", "null", "n/a", "na", "x"}
_UNIT_FIXES = {"KN": "kN", "kn": "kN", "nan": "", "-": ""}
_WHO_RE = re.compile(r"^(?P<who>[A-Za-z][A-Za-z ]{2,40}?)\s+(?:values|results?|measurements?|data|criteria)$", re.IGNORECASE)
"""A slide or section title naming whose values the table holds ("Driver Values", "Front Passenger Results")."""

MAX_RESULT_CELLS = 6
"""Cells asked of one results table (a big table gives a few, spread over its measures and tests)."""

MIN_RELATIVE_GAP = 0.05
"""Two tests are compared on a measure only when their values differ by at least this share of the larger."""


@dataclass(frozen=True)
class ResultsTable:
    """A results table read as tests x measures: ``tests`` ids; ``measures`` (name, unit); ``values[m][t]``."""

    tests: list[str]
    measures: list[tuple[str, str]]
    values: list[list[str]]


def _test_ids(cells: list[str]) -> bool:
    ids = [c.strip() for c in cells]
    return len(ids) >= 1 and all(_TEST_ID_RE.match(c) for c in ids) and len(set(ids)) == len(ids)


def _measure(label: str) -> tuple[str, str] | None:
    match = _UNIT_LABEL_RE.match(label.strip())
    if not match:
        return None
    unit = match.group("unit").strip()
    return match.group("name").strip(), _UNIT_FIXES.get(unit, unit)


@rule("generate.table.results_shape", "generate", "a Markdown table whose stub (top-left) cell is empty",
      "its other header cells are distinct test ids (numbers, stage codes, test codes, dates) and most body labels are "
      "measures with a unit in brackets, or transposed (test ids down the first column, measures with units across): "
      "a results table of tests x measures")
def results_table(markdown: str) -> ResultsTable | None:
    """The table read as tests x measures, or None when it is no results table."""
    rows = [[c.strip() for c in r] for r in table_rows(markdown) if any(c.strip() for c in r)]
    if len(rows) < 2 or rows[0][0] or any(len(r) != len(rows[0]) for r in rows) or len(rows[0]) < 2:
        return None
    header, body = rows[0], rows[1:]
    if len(header) >= 3 and _test_ids(header[1:]):
        measures = [_measure(r[0]) for r in body]
        if sum(m is not None for m in measures) < max(2, 0.6 * len(body)):
            return None
        kept = [(m, r[1:]) for m, r in zip(measures, body) if m is not None]
        return ResultsTable(header[1:], [m for m, _ in kept], [v for _, v in kept])
    measures = [_measure(c) for c in header[1:]]
    if len(body) >= 2 and _test_ids([r[0] for r in body]) and all(m is not None for m in measures):
        return ResultsTable([r[0] for r in body], measures, [[r[i + 1] for r in body] for i in range(len(measures))])
    return None


_SCORE_TITLE_RE = re.compile(r"^(?:(?P<who>[A-Za-z][A-Za-z ]{2,40}?)\s+)?(?P<noun>rating|score|points)$", re.IGNORECASE)
"""A slide or section titled by what its table's cells are ("Driver Rating", "Rating", "Front Passenger Score")."""


@rule("generate.table.score_shape", "generate", "a table of test-id columns whose row labels carry no unit",
      "the chunk's slide or section title says what every cell is ('Driver Rating', 'Score'): the rows are rated body "
      "regions or items; an item whose rating differs between the tests is asked per test ('what was the driver's femur "
      "rating?'), a rating alike in every test (a constant) is not")
def score_table(markdown: str, section: str) -> tuple[ResultsTable, str, str] | None:
    """(table, whose, noun) for a table of scores per test titled by its noun, or None."""
    title = _SCORE_TITLE_RE.match(section.strip())
    rows = [[c.strip() for c in r] for r in table_rows(markdown) if any(c.strip() for c in r)]
    if not title or len(rows) < 3 or rows[0][0] or len(rows[0]) < 3 or not _test_ids(rows[0][1:]):
        return None
    if any(len(r) != len(rows[0]) or _measure(r[0]) is not None for r in rows[1:]):
        return None
    who = (title.group("who") or "").lower()
    body = [r for r in rows[1:] if r[0].lower() != who and re.search(r"[A-Za-z]", r[0])]
    table = ResultsTable(rows[0][1:], [(r[0], "") for r in body], [r[1:] for r in body])
    return table, who, title.group("noun").lower()


def _empty(value: str) -> bool:
    return value.strip().lower() in _EMPTY_CELLS


def _who(view: ChunkView) -> str:
    """Whose values the table holds, from the slide or section title ("Driver Values" -> "driver"), or ''."""
    match = _WHO_RE.match(view.handle.section) if _section_ok(view) else None
    return match.group("who").lower() if match else ""


def _measure_phrase(name: str, view: ChunkView, title_measure: bool) -> str:
    """"the driver's chest deflection"; a measure named by the slide title itself stays as it is named there."""
    if title_measure and _section_ok(view):
        name = view.handle.section  # "OLC [g]" on the slide "Occupant Load Criterion (OLC)": the title's full name
    phrase = " ".join(w.lower() if re.fullmatch(r"[A-Z][a-z]{2,}", w) else w for w in name.split())
    who = _who(view)
    if who:
        return f"the {who}'s {phrase}"
    if _section_ok(view) and not title_measure:
        kind = "slide" if view.handle.section_kind == "slide" else "section"
        return f'the {phrase} on the "{view.handle.section}" {kind}'
    return f"the {phrase}"


def _test_phrase(test: str) -> str:
    return f"test {test}"


def _answer(value: str, unit: str) -> str:
    return f"{value} {unit}" if unit else value


@rule("generate.table.results", "generate", "a results table of tests x measures (``generate.table.results_shape``)",
      "one lookup per filled cell with the test and the measure both named and the unit from the measure's label "
      "('In test 11391 of <deck>, what was the driver's chest deflection?' -> '-26.56 mm'); empty cells (nan, -) never; "
      "one comparison of two tests on one measure where both values are positive and differ by 5% or more; no ranking "
      "across measures (their units differ); nothing when the document has no handle")
def results_candidates(view: ChunkView) -> Iterator[Candidate]:
    """Questions of the chunk's results tables."""
    doc = doc_phrase(view)
    if not doc or view.language != "en":
        return
    for element_id, markdown in view.tables:
        table = results_table(markdown)
        if table is None:
            yield from _score_candidates(view, doc, element_id, markdown)
            continue
        compared = list(_comparison(table, view, doc, element_id))
        skip = {m for m, _ in compared}  # the comparison's answer carries both cells of its measure: not asked again
        cells = list(_cell_questions(table, view, doc, element_id, skip))
        yield from cells[:1]
        yield from (c for _, c in compared)
        yield from cells[1:MAX_RESULT_CELLS]


def _title_measure(table: ResultsTable, view: ChunkView) -> bool:
    section = view.handle.section.lower()
    return len(table.measures) == 1 and any(w in section for w in re.findall(r"[a-z]{3,}", table.measures[0][0].lower()))


def _cell_questions(table: ResultsTable, view: ChunkView, doc: str, element_id: str,
                    skip: set[int]) -> Iterator[Candidate]:
    """Cells spread over measures first: measure i asks test i mod n, so each measure is asked once before any twice."""
    titled = _title_measure(table, view)
    order = [(m, (m + k) % len(table.tests)) for k in range(len(table.tests)) for m in range(len(table.measures))]
    for m, t in order:
        value = table.values[m][t] if t < len(table.values[m]) else ""
        if m in skip or _empty(value) or parse_number(value) is None:
            continue
        name, unit = table.measures[m]
        question = f"In {_test_phrase(table.tests[t])} of {doc}, what was {_measure_phrase(name, view, titled)}?"
        yield Candidate(question, _answer(value, unit), "numeric", "table", element_id)


def _comparison(table: ResultsTable, view: ChunkView, doc: str, element_id: str) -> Iterator[tuple[int, Candidate]]:
    """(measure index, question): which of two tests recorded the higher value of one measure (both positive, clearly
    different); the answer is the test id with both values, as the table writes them."""
    if len(table.tests) != 2:
        return
    for m, ((name, unit), values) in enumerate(zip(table.measures, table.values)):
        numbers = [parse_number(v) if not _empty(v) else None for v in values]
        if any(n is None or n <= 0 for n in numbers) or abs(numbers[0] - numbers[1]) < MIN_RELATIVE_GAP * max(numbers):
            continue
        high = 0 if numbers[0] > numbers[1] else 1
        first, second = (_test_phrase(t) for t in table.tests)
        measure = _measure_phrase(name, view, _title_measure(table, view))
        question = f"In {doc}, which test recorded the higher value of {measure}: {first} or {second}?"
        answer = f"{table.tests[high]} ({_answer(values[high], unit)} vs. {_answer(values[1 - high], unit)})"
        yield m, Candidate(question, answer, "comparative", "table", element_id)
        return


def _score_candidates(view: ChunkView, doc: str, element_id: str, markdown: str) -> Iterator[Candidate]:
    """A rating per test and item ("In test 14084 of <deck>, what was the driver's femur rating?" -> "0.0"), asked only
    of items whose rating differs between the tests: a rating every test got alike (the full 4.0 points) is a constant,
    no fact worth asking."""
    found = score_table(markdown, view.handle.section if _section_ok(view) else "")
    if found is None:
        return
    table, who, noun = found
    asked = 0
    for (label, _), values in zip(table.measures, table.values):
        numbers = {parse_number(v) for v in values if not _empty(v)}
        if len(numbers) < 2 or None in numbers:
            continue
        item = " ".join(w.lower() if re.fullmatch(r"[A-Z][a-z]{2,}", w) else w for w in label.split())
        subject = f"the {who}'s {item} {noun}" if who else f"the {item} {noun}"
        for test, value in zip(table.tests, values):
            if asked < MAX_RESULT_CELLS and not _empty(value):
                asked += 1
                yield Candidate(f"In {_test_phrase(test)} of {doc}, what was {subject}?", value, "numeric", "table",
                                element_id)
