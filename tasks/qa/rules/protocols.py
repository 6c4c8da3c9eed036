"""Generator rules for test protocols (Euro NCAP, IIHS): test conditions stated in prose, rating tables, glossaries.

A protocol states its test conditions as plain sentences, not as "shall" requirements: "Offset barrier crash tests
are conducted at 64.4 ± 1 km/h and a 40 ± 1% overlap."; "The roof is crushed to 127 mm at 5 mm/s." Such a sentence
becomes a condition question about the quantity its value measures (speed, angle, rate, clearance, mass, ...) and
the sentence's own subject, naming the protocol and its section. A rating table (a column of ratings such as Good /
Acceptable / Marginal / Poor next to a column of thresholds) gives one question per row, naming the row's rating and
the column's header, the boundary rows included. A glossary line "Term - is/means ..." becomes a definition question
with the term quoted, answered by the definition after the dash and its verb ("a Model which ..."); trivial terms
("Manufacturer") and bare words that read as verbs ("make") are skipped. Nothing is asked without a document handle.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ragprep.markdown import table_rows
from tasks.qa.registry import rule
from tasks.qa.rules.text import _GARBLED_RE, Candidate, ChunkView, _lower_first, doc_phrase, sentences, where

_VALUE = r"[-−]?\d[\d,.]*(?:\s?±\s?\d[\d,.]*)?"
_QUANTITY_UNITS = (
    ("rate", r"mm/s|cm/s|mm/min|°/s|deg/s|g/s|kN/s|N/s"),
    ("speed", r"km/h|kph|mph|m/s"),
    ("angle", r"°|º|deg(?:rees?)?\b"),
    ("mass", r"kg|tonnes?\b|lb\b"),
    ("force", r"kN|N\b"),
    ("distance", r"mm|cm|m\b|in\.|inch(?:es)?\b"),
    ("share", r"%|per\s?cent\b"),
)
_UNIT_RE = re.compile(
    "|".join(rf"(?P<{name}>(?<![\w.:/-]){_VALUE}\s?(?:{units}))" for name, units in _QUANTITY_UNITS), re.IGNORECASE
)
_DISTANCE_NOUNS = ("clearance", "height", "width", "depth", "offset", "overlap", "crush", "displacement", "travel",
                   "length", "distance", "gap", "spacing", "deflection", "intrusion")
"""A distance is asked as the noun the sentence names it by ("150 mm of clearance" -> clearance)."""
_SHARE_NOUNS = ("overlap", "state of charge", "capacity", "load", "weight")
_SUBJECT_RE = re.compile(
    r"^(?P<subject>(?:The|A|An|Each|Both|All)?\s?[A-Za-z][\w\-' /]{2,80}?)\s(?P<aux>is|are|was|were)\s"
    r"(?P<participle>(?:then\s|first\s|also\s)?[a-z]+(?:ed|en|wn|ut|et)\b)(?P<rest>.*)$"
)
_SUBJECT_BAD = frozenset("it this that these those they there which what if when where it's".split())
_PREPOSITION_RE = re.compile(r"\b(?P<prep>at|to|by|of|with|from)\s(?:an?\s|the\s)?(?:average\sof\s|approximately\s|about\s)?$",
                             re.IGNORECASE)


def _protocol(view: ChunkView) -> bool:
    return view.language == "en" and view.handle.doc_kind == "protocol" and bool(doc_phrase(view))


def _quantity(sentence: str, found: re.Match) -> str:
    kind = found.lastgroup or ""
    lowered = sentence.lower()
    if kind == "distance":
        return next((noun for noun in _DISTANCE_NOUNS if re.search(rf"\b{noun}\b", lowered)), "distance")
    if kind == "share":
        return next((noun for noun in _SHARE_NOUNS if re.search(rf"\b{noun}\b", lowered)), "")
    if kind == "speed" and re.search(r"\brate\b", lowered):
        return "rate"
    return kind


@rule("generate.protocol.test_condition", "generate", "a prose sentence of a test protocol whose subject is a noun phrase "
      "and whose verb is passive ('Offset barrier crash tests are conducted at 64.4 ± 1 km/h') with a value in a unit of "
      "speed, rate, angle, mass, force or distance", "factual")
def test_condition_candidates(view: ChunkView) -> Iterator[Candidate]:
    """Condition questions naming the protocol, its section, the quantity and the sentence's subject."""
    if not _protocol(view):
        return
    place = where(view)
    for sentence in sentences(view.markdown):
        question = condition_question(sentence, view.markdown)
        if question and not _GARBLED_RE.search(sentence) and len(sentence) <= 400:
            yield Candidate(f"According to {place}, {question}", sentence, "factual", "text")


def condition_question(sentence: str, context: str = "") -> str:
    """'at what speed are offset barrier crash tests conducted?' for a passive sentence with a measured value, or ''."""
    if re.search(r"\b(?:shall|must|should)\b", sentence):
        return ""  # a requirement: the limit rules ask it
    found = _SUBJECT_RE.match(sentence)
    value = _UNIT_RE.search(sentence)
    if not found or not value or found.group("subject").split()[0].lower() in _SUBJECT_BAD:
        return ""
    if value.start() < found.end("participle"):
        return ""  # the value is part of the subject ("The 150 mm platen ..."): not a condition of it
    quantity = _quantity(sentence, value)
    if not quantity:
        return ""
    subject = _lower_first(found.group("subject").strip(), context)
    participle = found.group("participle").replace("then ", "").replace("first ", "").replace("also ", "")
    between = sentence[found.end("participle"):value.start()]
    prep = _PREPOSITION_RE.search(between) if len(between) < 40 else None
    if prep and prep.group("prep").lower() in ("at", "to") and between.strip().lower() == prep.group(0).strip().lower():
        return f"{prep.group('prep').lower()} what {quantity} {found.group('aux')} {subject} {participle}?"
    return ""  # "what height is specified when the face is attached?": the subject's value asked through its verb reads
    # garbled and loses what is measured (IIHS moderate overlap, labelled 0 of 2 usable)


_DIMENSION_RE = re.compile(
    r"^(?P<subject>(?:The|A|An|Each)\s[a-z][\w\-' ]{2,60}?)\s(?:is|are)\s(?P<dims>(?:(?:and\s)?\d[\d,.]*\s?(?:mm|cm|m)\s"
    r"(?:high|wide|deep|long|thick|tall)(?:,\s|\s|\.|$))+)"
)


def dimension_question(sentence: str, context: str = "") -> str:
    """'what are the dimensions of the base unit?' for 'The base unit is 184 cm high, 366 cm wide, and 542 cm deep.';
    'how high is the ...?' for one dimension; '' otherwise."""
    found = _DIMENSION_RE.match(sentence)
    if not found:
        return ""
    subject = _lower_first(found.group("subject"), context)
    adjectives = re.findall(r"\b(high|wide|deep|long|thick|tall)\b", found.group("dims"))
    if len(adjectives) >= 2:
        return f"what are the dimensions of {subject}?"
    verb = "are" if re.search(r"s$", subject) and not subject.endswith("ss") else "is"
    return f"how {adjectives[0]} {verb} {subject}?"


_RATINGS = ("good", "acceptable", "marginal", "poor", "pass", "fail", "excellent", "adequate", "weak")
_RATING_CELL_RE = re.compile(rf"^(?:{'|'.join(_RATINGS)}|\d\s?stars?|[1-5]\s?★)$", re.IGNORECASE)
_THRESHOLD_CELL_RE = re.compile(r"[≥≤<>]=?\s?\d|\d[\d.,]*\s?(?:[-–]|to)\s?\d|\d")


def rating_rows(table: str) -> list[tuple[str, str, str]]:
    """(rating, threshold column header, threshold cell) per body row of a rating table, or [] when it is none.

    A rating table has a column whose body cells are all ratings (Good, Acceptable, ... or stars) and a column whose
    body cells all hold a threshold (a number, a bound, a range)."""
    rows = table_rows(table)
    if len(rows) < 3:
        return []
    header, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    if len(body) < 2:
        return []
    columns = list(zip(*body))
    rating = next((i for i, col in enumerate(columns) if all(_RATING_CELL_RE.match(c) for c in col)), None)
    if rating is None or len({c.lower() for c in columns[rating]}) < len(body):
        return []
    out = []
    for i, col in enumerate(columns):
        name = header[i].strip()
        if i != rating and name and not name.isdigit() and all(_THRESHOLD_CELL_RE.search(c) for c in col):
            out.extend((r[rating], name, r[i]) for r in body)
            break
    return out


@rule("generate.protocol.rating_table", "generate", "a table with a column of ratings (Good / Acceptable / Marginal / "
      "Poor, stars) and a column of thresholds", "numeric")
def rating_table_candidates(view: ChunkView) -> Iterator[Candidate]:
    """One question per rating row, naming the rating and the threshold column: every boundary row is asked."""
    if view.language != "en" or not doc_phrase(view):
        return
    place = where(view)
    for element_id, table in view.tables:
        for rating, column, cell in rating_rows(table):
            if _GARBLED_RE.search(cell):
                continue
            question = f'According to {place}, what {column} gives a rating of "{rating}"?'
            answer = f"{column} {cell}" if not cell.lower().startswith(column.lower()) and re.match(r"[≥≤<>]", cell) else cell
            yield Candidate(question, answer, "numeric", "table", element_id)


_GLOSSARY_RE = re.compile(r"^(?:[-•*]\s+)?(?P<term>[A-Z][\w'&/()-]*(?:\s[\w'&/()-]+){0,5}?)\s[-–—]\s"
                          r"(?P<verb>is|are|means|refers to)\s(?P<definition>.+)$")
_TRIVIAL_TERMS = frozenset("manufacturer vehicle car model year date name owner user test tests".split())
"""Terms every reader knows: their definitions are not worth a question."""
_VERB_LIKE = frozenset("make use run set type drive build load test check fit mount place seat start stop show state "
                       "report rate score range mark record open close lock move turn change".split())
"""Bare terms that read as verbs in a question ("what is make?")."""


def glossary_entry(line: str) -> tuple[str, str] | None:
    """(term, definition) of a glossary line 'Term - is a Model which ...': the definition after the dash and its verb
    ('a Model which ...'), a complete span of the chunk without the list dash; None for a trivial or verb-like term."""
    found = _GLOSSARY_RE.match(line.strip())
    if not found:
        return None
    term, definition = found.group("term").strip(), found.group("definition").strip()
    words = term.split()
    if term.lower() in _TRIVIAL_TERMS or (len(words) == 1 and term.lower() in _VERB_LIKE):
        return None
    if len(definition.split()) < 5 or not definition.rstrip().endswith((".", ")")):
        return None
    return term, definition


@rule("generate.protocol.glossary", "generate", "a glossary line of a protocol, 'Term - is/means ...' (the term "
      "quoted, the dash dropped; trivial terms and bare verb-like words skipped)", "definition")
def glossary_candidates(view: ChunkView) -> Iterator[Candidate]:
    """Definition questions 'what does "Variant" mean in <protocol>?' from 'Term - is ...' lines."""
    if view.language != "en" or not doc_phrase(view):
        return
    place = where(view)
    for line in view.markdown.splitlines():
        entry = glossary_entry(line)
        if entry and not _GARBLED_RE.search(entry[1]):
            yield Candidate(f'According to {place}, what does "{entry[0]}" mean?', entry[1], "definitional", "text")


@rule("generate.definition.glossary_line", "generate", "a sentence the definition rule would ask ('Make - is the trade "
      "name ...')", "a glossary line 'Term - is ...': only the glossary rule asks it (term quoted, dash dropped) or skips it")
def glossary_line(sentence: str) -> bool:
    """True for a glossary line 'Term - is/means ...': the plain definition rule would ask 'what is make?' and answer
    with the dash kept."""
    return bool(_GLOSSARY_RE.match(sentence.strip()))


PROTOCOL_SOURCES = (rating_table_candidates, glossary_candidates)
"""Protocol questions asked by default: rating tables and glossary definitions. The test-condition rule is a coverage
rule (``tasks.qa.rules.coverage``, behind ``qa.coverage_rules``): its pairs were 7 of 11 usable (2 of 4 on the
protocols it was not written from, IIHS roof strength and Euro NCAP star rating), under the 0.85 a default rule needs."""
