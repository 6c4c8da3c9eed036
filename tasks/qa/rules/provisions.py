"""Generator rules over the numbered provisions of regulations and protocols: values, requirements, definitions.

Regulations and test protocols state their facts in numbered paragraphs ("S7.2 Orient the test device ... at a
forward angle of 5 degrees", "5.3.7.3. REESS retention / REESS located inside ... shall remain ...", "2.1.
"Approval of a vehicle" means ..."), often with their lettered sub-items ("(a)", "b)"). A user asks for them by
the paragraph: "What forward angle does paragraph S7.2(a) of FMVSS No. 216 specify?" -> "5 degrees below the
horizontal" is not needed; the value span "5 degrees" with its qualifier is the answer.

``provision_units`` cuts a chunk into such units (number, inline or heading title, text); the rules then ask:

- ``generate.provision.value``: one question per quantity (speed, mass, angle, force, ...) that a unit states
  once (or under a noun that tells it apart: "forward angle" vs "outboard angle"), naming the paragraph, its title
  and the document; the answer is the value with its qualifier ("not more than 13 millimeters per second").
- ``generate.provision.requirement``: a titled unit whose first sentence is a requirement ("shall", "must") is
  asked what it requires; the answer is that sentence.
- ``generate.provision.definition``: a quoted term defined by a numbered paragraph ('2.1. "Vehicle type" means').
- ``generate.requirement.limit_ko``: a Korean limit ("… 이하/이상/초과/미만", "A의 경우 B는 … 이하").

Nothing is asked without a document handle, nor when a unit states the same kind of quantity twice without
telling them apart (which value would be the answer is then ambiguous).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from ragprep.text import verbatim_span
from tasks.qa.registry import rule
from tasks.qa.rules.pointers import (
    after_list,
    attributive,
    bound_lost,
    condition_threshold,
    not_its_own,
    pointer_definition,
    reference_line,
    relative_condition,
    value_kind_gate,
)
from tasks.qa.rules.sections import orphan_items
from tasks.qa.rules.subjects import _NOUN_RE, question_for, value_subject
from tasks.qa.rules.text import (
    Candidate,
    ChunkView,
    _content_blocks,
    _lower_first,
    _section_ok,
    doc_phrase,
    garbled,
    josa,
    sentences,
    where,
)

# --- units of a provision ---------------------------------------------------------------------------

_NUMBER_RE = re.compile(r"^\s*(?P<number>S\d+(?:\.\d+)*[a-z]?|\d+(?:\.\d+)+|\d+)\.?\s+(?P<rest>\S.*)$", re.DOTALL)
_ITEM_RE = re.compile(r"^\s*\(?(?P<item>[a-z]|[ivx]{1,4}|\d{1,2})\)(?:\((?P<item2>[ivx]{1,4}|\d{1,2})\))?\s+(?P<rest>\S.*)$",
                      re.DOTALL)
"""An item label and its text: "(b) ...", "b) ...", and a label with its first sub-item "(c)(1) ..."."""
_INLINE_NUMBER_RE = re.compile(r"(?<=[.;:]\s)(?=S\d+(?:\.\d+)+\.?\s+[A-Z])")
"""An S-numbered paragraph that starts inside a block ("... 49 CFR 571.214). S7.3 Rear moving barrier ..."): the
extraction joined two paragraphs, the second is cut off again."""
_TITLE_WORDS_RE = re.compile(r"^[A-Z][\w\-/&,'’ ()]{2,70}$")
_VERB_WORDS = frozenset("shall must is are was were be will may should can has have means mean".split())


@dataclass(frozen=True)
class Unit:
    """A numbered paragraph (or one of its lettered items): its reference, title and text."""

    number: str
    title: str
    text: str
    criterion: bool = False
    """An item under a lead-in that announces requirements ("The vehicle meets the requirements if all of the
    following are met:"): the item is a requirement even without "shall"."""


def _title(text: str) -> tuple[str, str]:
    """(inline title, body) of a provision's text: "Side moving barrier crash. (a) When ..." -> title and body;
    a text that is a title alone ("Electrolyte spillage") gives (title, '')."""
    head, sep, body = text.partition(". ")
    candidate = head.strip().rstrip(".:")
    if not sep and "." not in text.strip().rstrip("."):
        candidate, body = text.strip().rstrip(".:"), ""
    words = candidate.split()
    if body[:1].islower():
        return "", text  # "Using the new padding materials, seat, etc. presented for ...": a sentence, not a title
    if (not 1 <= len(words) <= 9 or re.search(r"\b(?:as follows|following)$", candidate)
            or not _TITLE_WORDS_RE.match(candidate) or _VERB_WORDS & {w.lower() for w in words}
            or re.search(r"\d{2,}|\bat (?:least|most)\b|\bno(?:t)? (?:more|less) than\b", candidate)):
        return "", text  # "Open at least one door per row of seats.": the item's requirement, not its title
    return candidate, body.strip()


_ANNEX_RE = re.compile(r"^\s*#*\s*(Annex|Appendix)\s+(\d+[A-Z]?)\b(?:\s*[-–—]\s*(Appendix)\s+(\d+[A-Z]?)\b)?")


@rule("generate.provision.annex_appendix", "generate", "the chunk title or first heading ('Annex 17 - Appendix 1 ...')",
      "a paragraph of an annex's appendix is named with both ('paragraph 1.1 of Appendix 1 to Annex 17 to UN Regulation "
      "No. 16'): paragraph 1.1 of Annex 17 itself is another paragraph")
def annex_of(view: ChunkView) -> str:
    """The annex or appendix a chunk belongs to ("Annex 4", "Appendix 1 to Annex 17"), from its title or first heading;
    '' when none."""
    for part in [view.title.split(" / ")[0], *view.heading_path[:1]]:
        found = _ANNEX_RE.match(part or "")
        if found and found.group(3):
            return f"{found.group(3)} {found.group(4)} to {found.group(1)} {found.group(2)}"
        if found:
            return f"{found.group(1)} {found.group(2)}"
    return ""


def _blocks(markdown: str) -> list[str]:
    """The chunk's prose blocks (a block's lines joined) and its headings as text, in order."""
    out = []
    for block in re.split(r"\n\s*\n", markdown):
        block = block.strip()
        if block.startswith("#"):
            out.append(block.lstrip("#").strip())
        elif block and any(block == b for b in _content_blocks(block)):
            out.append(" ".join(ln.strip() for ln in block.splitlines()))
    return out


_MEASURE_RE = re.compile(r"(?:in|mm|cm|m|kg|kN|N|g|ms|s|°|%|deg|lb|ft)(?:\.|\b)(?:[\s\d.,]*(?:in|mm|cm|m|°)\.?)*\s*$")


def _push(items: "_Items", sub: re.Match) -> str:
    """Open the item (and its first sub-item, "(c)(1)") and return the item path."""
    path = items.push(sub.group("item"))
    return items.push(sub.group("item2")) if sub.group("item2") else path


def provision_units(view: ChunkView) -> list[Unit]:
    """The chunk cut into numbered paragraphs and their items (a unit's text without its number); an item is named
    with its parents ("S9.2.3(b)(3)": the third numbered item under item (b) of S9.2.3). Cached per Markdown text: every
    provision rule reads the same chunk's units."""
    return list(_provision_units(view.markdown))


@lru_cache(maxsize=1024)
def _provision_units(markdown: str) -> tuple[Unit, ...]:
    units: list[Unit] = []
    titles: dict[str, str] = {}
    number, items, lead = "", _Items(), False
    blocks = [piece for block in _blocks(markdown) for piece in _INLINE_NUMBER_RE.split(block) if piece.strip()]
    for index, block in enumerate(blocks):
        block = block.strip()
        found = _NUMBER_RE.match(block)
        found = None if found and reference_line(found.group("rest")) else found
        if found and _MEASURE_RE.match(found.group("rest")):
            continue  # "6.5 in. 30 in.": a figure's dimension label, not paragraph 6.5
        if found and (found.group("number").startswith("S") or "." in found.group("number") or index > 0):
            number, items, lead = found.group("number"), _Items(), False
            title, body = _title(found.group("rest"))
            if title:
                titles[number] = title
            nested = _NUMBER_RE.match(body)
            if nested and nested.group("number").startswith(number + "."):
                number, body = nested.group("number"), nested.group("rest")  # "S5.4 Sun visors. S5.4.1 A sun visor ..."
            if not body or _bare(number) and not title:
                continue  # a bare "12" without a title is a figure label or a list number, not a paragraph
            for piece in _ITEM_SPLIT_RE.split(body):
                sub = _ITEM_RE.match(piece)
                label = number + _push(items, sub) if sub else number
                units.append(Unit(label, _inherited(titles, number), sub.group("rest") if sub else piece))
            continue
        if not number or _bare(number) and number not in titles:
            continue
        if _ITEM_RE.match(block):  # "g) The CRS can be placed ... h) After adjustment ...": one item per unit
            for piece in _ITEM_SPLIT_RE.split(block):
                sub = _ITEM_RE.match(piece)
                if sub:
                    units.append(Unit(number + _push(items, sub), _inherited(titles, number), sub.group("rest"), lead))
        elif not block.startswith(("|", "!", "*")):
            if after_list(units, number + items.path(), block):
                continue  # the paragraph goes on after its list: the sentence is no part of the last item
            lead = bool(_LEAD_IN_RE.search(block)) and not _FAILURE_LEAD_RE.search(block)
            units.append(Unit(number + items.path(), _inherited(titles, number), block))
    return tuple(units)


_LEAD_IN_RE = re.compile(r"(?:requirements?|criteria|shall|must)\b[^.]*(?:following|below)[^.]*:\s*$", re.IGNORECASE)
_FAILURE_LEAD_RE = re.compile(r"\b(?:not|fails?|failure)\b[^.]*(?:following|below)[^.]*:\s*$", re.IGNORECASE)
"""A lead-in to failure conditions ("The vehicle would not meet the requirements if any of the following occur:"): its
items are no requirements to ask for."""
_ADMINISTRATIVE_RE = re.compile(
    r"transitional provisions|phase-in|penalties|production definitively discontinued|names and addresses|"
    r"conformity of production|modification(?:s)? (?:and|of)|extension of (?:the )?approval|approval mark|communication|"
    r"amendments?\b|effective date|\bapproval\b", re.IGNORECASE)


_ATTRIBUTION_RE = re.compile(r"\bshall be attributed to\b|\bproduced by more than one manufacturer\b|\bexcluded from\b[^.]{0,40}"
                             r"\bphase-in\b", re.IGNORECASE)
"""Text of a phase-in's production counting ("A vehicle which is imported shall be attributed to the importer."):
legal bookkeeping, asked by nobody who tests vehicles."""


def administrative(view: ChunkView, unit: Unit) -> bool:
    """A unit of an administrative section (transitional provisions, phase-in, penalties, approval marks): its
    sentences are legal procedure, not a fact a safety engineer asks."""
    return bool(_ADMINISTRATIVE_RE.search(unit.title) or _ADMINISTRATIVE_RE.search(" ".join([view.title, *view.heading_path]))
                or _ATTRIBUTION_RE.search(unit.text))


_ROMAN = frozenset("i ii iii iv v vi vii viii ix x".split())
_ITEM_RANK = {"letter": 1, "digit": 2, "roman": 3}


class _Items:
    """The open item labels of a paragraph, outermost first: (a) > (1) > (i)."""

    def __init__(self) -> None:
        self.stack: list[tuple[str, str]] = []

    def push(self, label: str) -> str:
        """Open item ``label`` (closing items at its level or deeper) and return the item path "(b)(3)"."""
        last_letter = next((lab for kind, lab in reversed(self.stack) if kind == "letter"), "")
        if label.isdigit():
            kind = "digit"
        elif label in _ROMAN and self.stack and not (label in ("i", "v") and last_letter and ord(label) == ord(last_letter) + 1):
            kind = "roman"
        else:
            kind = "letter"
        while self.stack and _ITEM_RANK[self.stack[-1][0]] >= _ITEM_RANK[kind]:
            self.stack.pop()
        self.stack.append((kind, label))
        return self.path()

    def path(self) -> str:
        """The open items as a reference suffix: "(b)(3)"."""
        return "".join(f"({label})" for _, label in self.stack)


_ITEM_SPLIT_RE = re.compile(r"\s(?=\(?[a-z]\)\s)")


def _bare(number: str) -> bool:
    return "." not in number and not number.startswith("S")


def _inherited(titles: dict[str, str], number: str) -> str:
    """The title of the paragraph or of its nearest titled parent ("5.3.7.2" -> "5.3.7")."""
    parts = number.split(".")
    for end in range(len(parts), 0, -1):
        title = titles.get(".".join(parts[:end]))
        if title:
            return title
    return ""


def _reference(view: ChunkView, unit: Unit) -> str:
    """How a question names the unit: "paragraph 6.1 of Annex 4 to UN Regulation No. 95" (with its title)."""
    doc = doc_phrase(view)
    annex = annex_of(view)
    word = "paragraph" if view.handle.kind == "standard" or re.search(r"\b(?:Regulation|Standard|FMVSS)\b", doc) else "section"
    paragraph = f"{word} {unit.number}"
    if unit.title and unit.title.lower() not in doc.lower():
        paragraph += f" ({unit.title})"
    return f"{paragraph} of {annex} to {doc}" if annex else f"{paragraph} of {doc}"


# --- values ---------------------------------------------------------------------------------------

_UNIT_CLASSES = (
    ("speed", r"km\s?/\s?h|kph|mph|m/s(?![2²])|kilometers per hour|kilometres per hour|miles per hour"),
    ("rate", r"mm/s|millimet(?:er|re)s per second"),
    ("temperature", r"°\s?[CF]\b|℃|degrees? (?:Celsius|C\b|F\b)"),
    ("angle", r"°|degrees?|deg\b"),
    ("acceleration", r"m/s[2²]|g\b"),
    ("mass", r"kg|kilograms?|grams?|lb\b|pounds?"),
    ("force", r"kN|daN|N\b|newtons?|lbf"),
    ("moment", r"N\s?m|kNm"),
    ("pressure", r"kPa|MPa|bar\b|psi"),
    ("time", r"ms\b|milliseconds?|seconds?|minutes?|s\b|min\b|hours?"),
    ("share", r"%|per\s?cent|percent"),
    ("volume", r"lit(?:er|re|ter)s?|ml\b"),
    ("energy", r"kJ|J\b|joules?"),
    ("voltage", r"V\b|volts?"),
    ("distance", r"mm|cm|m\b|millimet(?:er|re)s?|centimet(?:er|re)s?|met(?:er|re)s?|inch(?:es)?|in\.|ft\b|feet"),
)
_ANY_UNIT = "|".join(pattern for _, pattern in _UNIT_CLASSES)
_UNIT_ALTERNATIVES = "|".join(f"(?P<{name}>{pattern})" for name, pattern in _UNIT_CLASSES)
_AMOUNT = r"(?:[±+]\s?)?\d[\d,]*(?:\.\d+)?"
_QUALIFIER = (r"(?:not (?:be )?(?:[a-z]+ed )?(?:by )?(?:more|less|greater|lower) than|not (?:be )?exceed(?:ing)?|"
              r"no (?:more|less|greater) than|at (?:least|most)|up to and including|between and including|"
              r"up to|(?:more|less|greater|lower) than|(?:a )?(?:maximum|minimum) of|within|between|from|below|above|"
              r"exceeding|under|over)")
_VALUE_RE = re.compile(
    rf"(?:(?P<qualifier>(?i:{_QUALIFIER}))\s+)?(?P<amount>{_AMOUNT}(?:\s?(?:±|\+/-|\+)\s?\d[\d,.]*)?"
    rf"(?:\s?(?:to|-|–)\s?\d[\d,.]*|\sand\s\d[\d,.]*)?)(?P<space>\s?)(?:{_UNIT_ALTERNATIVES})"
    rf"(?![/\w])(?P<upper>\s(?:and|to)\s(?:not (?:more|less) than\s)?\d[\d,.]*\s?(?:{_ANY_UNIT}))?"
    rf"(?P<tolerance>\s?(?:±|\+/-)\s?\d[\d,.]*\s?(?:{_ANY_UNIT}))?",
)
_SKIP_CONTEXT_RE = re.compile(r"(?:Figure|Fig\.|Table|paragraph|Annex|Regulation|Standard|part|ISO|SAE|CFR|No\.|§)\s*$",
                              re.IGNORECASE)
_NOT_A_VALUE_BEFORE_RE = re.compile(r"\d\s*(?:and|or|,)\s*$|[\w./]$|(?:^|\s)[-−–]\s?$")
"""Before a value: a list of numbers ("2.2 and 2.7 kN"), a word it is glued to ("P205/75R15"), a sign ("- 10°")."""
_TEMPERATURE_AFTER_RE = re.compile(r"\s?(?:[±+]\s?\d[\d.,]*\s?)?°\s?C\b")


def _kind(match: re.Match) -> str:
    return next(name for name, _ in _UNIT_CLASSES if match.group(name))


def _not_a_value(match: re.Match, text: str) -> bool:
    """A figure or paragraph number, a listed or signed number, a tolerance alone ("± 1 mm"), "-10° + 1 °C" read as
    an angle, or a part label of a figure ("4g", "2c") unless a qualifier makes it a limit ("not exceed 80g")."""
    before, after = text[:match.start()], text[match.end():match.end() + 14]
    if _SKIP_CONTEXT_RE.search(before) or _NOT_A_VALUE_BEFORE_RE.search(before) or match.group("amount")[:1] in "±+":
        return True
    if " and " in match.group("amount") and match.group("qualifier") != "between":
        return True  # "2.2 and 2.7 kN": two values listed, not a range
    if _kind(match) == "angle" and _TEMPERATURE_AFTER_RE.match(after) or re.match(r"\s?per\s(?:second|minute|hour)\b", after):
        return True  # "-10° + 1 °C" is a temperature; "2° per second" a rate our units do not name
    unit = match.group(0)[match.end("space") - match.start():].split()[0]
    return not match.group("space") and len(re.sub(r"\W", "", unit)) == 1 and not match.group("qualifier")


_WORD_VALUE_RE = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|sixty)\s+"
    r"(?P<time>seconds?|minutes?|hours?)\b|\b(?:one|two|three|four|five|ten)\s+(?P<distance>millimet(?:er|re)s?|met(?:er|re)s?)\b",
    re.IGNORECASE)
_NEGATION_RE = re.compile(r"\bnot\b[^.;]{0,40}$")


_NOUN_AFTER_RE = re.compile(r"\s(overlap|offset|clearance|deflection|intrusion|displacement|elongation|overload)\b")
_SHARE_OF_RE = re.compile(r"\s+of\s+(?P<np>(?:the|all|its|their)\s+(?:[\w’'\-]+\s+){0,4}?[\w’'\-]+)"
                          r"(?=\s+(?:stated|specified|of|in|on|at|for|by|with|that|which|and|or|as|manufactured|shall|"
                          r"must|is|are|will|may)\b|[,.;)]|$)")
"""What a share is of: "not less than 20 percent of the vehicles manufactured ..." -> "the vehicles"."""
_SHARE_BASE_RE = re.compile(r"(?:capacit(?:y|ies)|weight|mass|volume|length|width|height|load|force|speed|energy|"
                            r"stroke|displacement|pressure|value|score|points|production)$")
"""What a share can be a share of: a quantity ("92 percent of the fuel tank's usable capacity"), not a thing ("110% of
the typically equipped model")."""
_DIFFERENCE_AFTER_RE = re.compile(r"\s+(?:greater|more|less|higher|lower|heavier|lighter|longer|shorter|wider|narrower|"
                                  r"larger|smaller|above|below)"
                                  r"\s+than\b|\s+(?:over|under)\s+(?:the|its)\b|\s+(?:different|differ(?:s|ing)?)\s+from\b")
"""After a value: it is a difference ("175-250 kg greater than the measured curb weight"), not the quantity itself."""
_RESPECTIVELY_RE = re.compile(r"[^.;]{0,80}\brespectively\b")


def _values(text: str) -> list[tuple[str, str, str, bool, str]]:
    """(quantity noun or '', unit class, value span, askable, subject or '') for each value with a unit in ``text``. Values that
    cannot be asked (a listed, signed or tolerance-only number, a garbled or negated one, a value written in words)
    are kept, not askable, so that a question never treats the other value of their kind as the only one."""
    out = []
    for match in _VALUE_RE.finditer(text):
        span = match.group(0).strip(" ,;")
        if _SKIP_CONTEXT_RE.search(text[:match.start()]):
            continue
        before = text[max(0, match.start() - 80):match.start()]
        negated = bool(_NEGATION_RE.search(before)) and "not" not in (match.group("qualifier") or "")
        negated = negated or bool(_RESPECTIVELY_RE.match(text[match.end():]))  # "at 25 and -5 degrees, respectively"
        negated = negated or bool(re.match(r"\s{2,}[\d±]|\s?\+\s?\d", text[match.end():]))  # "15°  10°": its ± was lost
        askable = not (_not_a_value(match, text) or garbled(span) or negated or span.startswith("not be "))
        noun = _NOUN_RE.search(before)
        after = _NOUN_AFTER_RE.match(text[match.end():])  # "with a 70 percent overlap": the noun follows its value
        noun_text = after.group(1) if after else noun.group("noun") if noun else ""
        share_of = _SHARE_OF_RE.match(text[match.end():]) if _kind(match) == "share" else None
        if share_of and len(share_of.group("np").split()) >= 3 and _SHARE_BASE_RE.search(share_of.group("np")):
            noun_text = f"percentage of {share_of.group('np')}"  # ("20 percent of the vehicles" names no subject)
        askable = askable and not _DIFFERENCE_AFTER_RE.match(text[match.end():])
        attributed = attributive(text[match.end():]) and not _NOUN_AFTER_RE.match(text[match.end():])
        if askable and (bound_lost(text[:match.start()]) or attributed
                        or condition_threshold(text[max(0, match.start() - 300):match.start()], match.group("qualifier") or "")):
            askable = None  # a fact (counted in the budget), but its bound or its owner is not read: not asked
        subject = value_subject(text[:match.start()])
        out.append((noun_text, _kind(match), span, askable, subject))
    for match in _WORD_VALUE_RE.finditer(text):
        out.append(("", "time" if match.group("time") else "distance", match.group(0), False, ""))
    return out


def prose_values(markdown: str) -> list[str]:
    """Every value with a unit in the chunk's prose (tables, pictures and quotes left out), also those a question cannot
    ask because their bound or owner is not read (``askable`` None): they are facts of the chunk all the same."""
    text = " ".join(b for b in _blocks(markdown) if not b.startswith(("|", "!", ">")))
    return [span for _, _, span, askable, _ in _values(text) if askable is not False]


@rule("generate.provision.value", "generate", "a numbered paragraph or lettered item of a regulation or protocol "
      "with a value and unit (speed, mass, angle, force, pressure, time, distance, ...)", "numeric")
def value_candidates(view: ChunkView) -> Iterator[Candidate]:
    """One question per quantity a provision states unambiguously, naming paragraph, title and document."""
    if view.language != "en" or not doc_phrase(view):
        return
    if value_kind_gate(view):
        return
    units = [(_reference(view, unit), unit.text) for unit in provision_units(view)]
    if not units and _section_ok(view) and not orphan_items(view.markdown):  # unnumbered prose: named by its heading
        units = [(where(view), " ".join(b for b in _blocks(view.markdown)[1:] if not b.startswith(("|", "!", ">"))))]
    for reference, text in units:
        values = _values(text)
        for noun, kind, span, askable, subject in values:
            question = question_for(noun, kind, reference, subject)
            if not askable or not question:
                continue
            same = [v for v in values if v[1] == kind]
            told_by_noun = noun and sum(v[0] == noun for v in same) == 1
            keys = [(v[0], v[4]) for v in same]
            told_apart = ("", "") not in keys and keys.count((noun, subject)) == 1
            if len(same) > 1 and not (told_by_noun or told_apart):
                continue  # two values of one kind, not told apart by their nouns or subjects: the answer would be ambiguous
            answer = verbatim_span(span, view.markdown)
            if answer:
                yield Candidate(question, answer, "numeric", "text")


_REQUIREMENT_RE = re.compile(r"\b(?:shall|must)\b")
_OPENER_RE = re.compile(
    r"^(?:It|This|They|These|Such|However|But|Also|In this case|Additionally|Furthermore|Moreover|In addition)\b")
"""A sentence that goes on from the one before: not a requirement a question can stand on."""
MAX_SENTENCE_CHARS = 320


def _first_sentence(text: str) -> str:
    for piece in re.split(r"(?<=[.;])\s+(?=[A-Z(])", text):
        piece = piece.strip()
        if piece:
            return piece if piece.endswith((".", ";")) else ""
    return ""


@rule("generate.provision.requirement", "generate", "a titled numbered paragraph whose first sentence is a "
      "requirement (shall/must)", "factual")
def requirement_candidates(view: ChunkView) -> Iterator[Candidate]:
    """'What does paragraph 5.3.7.3 (REESS retention) of UN Regulation No. 95 require?' -> its first sentence."""
    if view.language != "en" or not doc_phrase(view):
        return
    if _DEFINITIONS_RE.search(" ".join([view.title, *view.heading_path])):
        return  # a definition's "must" ("such that it must not be possible ...") is no requirement of the paragraph
    asked: set[str] = set()
    for unit in provision_units(view):
        sentence = _requirement_sentence(view, unit)
        answer = verbatim_span(sentence, view.markdown) if sentence and unit.number not in asked else ""
        if answer:
            asked.add(unit.number)
            yield Candidate(f"What does {_reference(view, unit)} require?", answer, "factual", "text")


_DEFINITIONS_RE = re.compile(r"\bdefinitions?\b", re.IGNORECASE)
_LEAD_IN_SENTENCE_RE = re.compile(r"\b(?:the following|as follows|(?:specified|described|set out|listed|prescribed) below)\b|:$")


def _requirement_sentence(view: ChunkView, unit: Unit) -> str:
    """The unit's first sentence when it is a complete requirement a question can stand on, else ''."""
    sentence = _first_sentence(unit.text)
    named = unit.title or "." in unit.number  # "5.3.8" or "2.2.3.2(a)" names a paragraph alone
    if not named or not sentence or len(sentence) > MAX_SENTENCE_CHARS or administrative(view, unit):
        return ""
    if not sentence[:1].isupper() or _OPENER_RE.match(sentence) or _LEAD_IN_SENTENCE_RE.search(sentence) or garbled(sentence):
        return ""  # a continuation, a lead-in to a list ("the following requirements must be met."), or garbled
    if not_its_own(sentence):
        return ""
    return sentence if _REQUIREMENT_RE.search(sentence) or unit.criterion else ""


_QUOTED_DEFINITION_RE = re.compile(r'^[“"](?P<term>[^”"]{2,70})[”"],?\s+(?:means|shall mean|is|refers to)\s+(?P<rest>.{10,})$')


@rule("generate.provision.definition", "generate", "a numbered paragraph defining a quoted term ('2.1. \"Vehicle "
      "type\" means ...')", "definitional")
def definition_candidates(view: ChunkView) -> Iterator[Candidate]:
    """'According to paragraph 2.1 of UN Regulation No. 95, what does "vehicle type" mean?' -> the definition."""
    if view.language != "en" or not doc_phrase(view):
        return
    for unit in provision_units(view):
        found = _QUOTED_DEFINITION_RE.match(unit.text)
        if (not found or re.match(r"(?:is )?as (?:established|defined|specified|described)|see\b", found.group("rest"))
                or len(unit.text) > MAX_SENTENCE_CHARS or unit.text.rstrip()[-1:] not in ".;:"):
            continue
        term = found.group("term").strip()
        reference = f"paragraph {unit.number} of {annex_of(view) + ' to ' if annex_of(view) else ''}{doc_phrase(view)}"
        answer = verbatim_span(unit.text.rstrip(), view.markdown)
        if not answer or not answer.endswith(".") or answer.endswith((" as.", ":")) or pointer_definition(answer):
            continue  # not a complete sentence, or the definition goes on in a list the unit does not hold
        yield Candidate(f'According to {reference}, what does "{term}" mean?', answer, "definitional", "text")


# --- Korean limits ------------------------------------------------------------------------------------

_KO_LIMIT_RE = re.compile(
    r"(?:(?P<case>[가-힣A-Za-z0-9·]+(?:\s[가-힣A-Za-z0-9·]+){0,3})의\s경우[,]?\s+)?"
    r"(?P<subject>[가-힣A-Za-z0-9·]+(?:\s[가-힣A-Za-z0-9·]+){0,3}?)(?:은|는|이|가)\s+"
    r"(?P<value>(?:[가-힣]+\s)?\d[\d,.]*\s?(?:%|[가-힣]{1,3}|[A-Za-z/]{1,5})?\s?(?P<op>이하|이상|초과|미만))"
)
_KO_NOT_SUBJECT = frozenset("이 그 저 또는 및 등 것 수 때 경우 다만 단 위 아래 다음".split())


@rule("generate.requirement.limit_ko", "generate", "a Korean sentence with a limit (… 이하/이상/초과/미만, "
      "'A의 경우 B는 … 이하')", "numeric")
def korean_limit_candidates(view: ChunkView) -> Iterator[Candidate]:
    """'{문서}에서 A의 경우 B의 기준은 무엇인가요?' -> '… 이하'."""
    place = where(view)
    if view.language != "ko" or not place:
        return
    for block in _blocks(view.markdown):
        if block.startswith("|"):
            continue
        for found in _KO_LIMIT_RE.finditer(block):
            subject = found.group("subject").strip()
            case = (found.group("case") or "").strip()
            if subject.split()[0] in _KO_NOT_SUBJECT or subject.split()[-1] in _KO_NOT_SUBJECT or len(subject) < 2:
                continue
            prefix = f"{case}의 경우 " if case else ""
            question = f"{place}에 따르면 {prefix}{subject}의 기준은 무엇인가요?"
            answer = verbatim_span(found.group("value"), view.markdown)
            if answer:
                yield Candidate(question, answer, "numeric", "text")


_HEADLINE_TITLES = {"scope": "scope", "purpose": "purpose", "application": "application"}


@rule("generate.provision.headline", "generate", "the Scope, Purpose or Application paragraph of a regulation or "
      "protocol ('S2. Purpose. The purpose of this standard is ...')", "factual")
def headline_candidates(view: ChunkView) -> Iterator[Candidate]:
    """A document's headline facts: 'What is the purpose of FMVSS No. 216a?' -> the Purpose paragraph's first sentence."""
    doc = doc_phrase(view)
    if view.language != "en" or not doc:
        return
    for unit in provision_units(view):
        kind = _HEADLINE_TITLES.get(unit.title.lower())
        sentence = _first_sentence(unit.text)
        top_level = re.fullmatch(r"S?\d+", unit.number) and not annex_of(view)  # an annex's "Purpose" is its test's
        if not kind or not top_level or not sentence or len(sentence) > MAX_SENTENCE_CHARS or garbled(sentence):
            continue
        answer = verbatim_span(sentence, view.markdown)
        if answer and not _LEAD_IN_SENTENCE_RE.search(answer):
            question = f"To what does {doc} apply?" if kind == "application" else f"What is the {kind} of {doc}?"
            yield Candidate(question, answer, "factual", "text")


_CONDITIONAL_RE = re.compile(
    r"^(?P<condition>(?:If|When|Where|In the case of)\s[^,;]{5,140}),\s+(?:then\s+)?"
    r"(?P<subject>(?:the|a|an|all|each|any|no)\s[a-z][\w\-]*(?:\s[\w\-]+){0,6}?)\s"
    r"(?P<modal>must|shall|will|should|may)\s(?P<rest>(?:not\s)?[a-z][^;:]{5,160})\.$"
)
_NOT_IN_CONDITIONAL_SUBJECT = frozenset("which that who when where if is are was were be been has have had".split())


def _conditional_question(sentence: str, place: str, context: str) -> tuple[str, str] | None:
    """("According to X, when must all seating positions be assessed individually?", "Where there is any asymmetry")."""
    found = _CONDITIONAL_RE.match(sentence)
    if not found or _NOT_IN_CONDITIONAL_SUBJECT & set(found.group("subject").lower().split()[1:]):
        return None
    if re.search(r"\b(?:above|below|paragraphs?|this|these|it|they)\b", found.group("condition"), re.IGNORECASE):
        return None  # the condition points elsewhere ("if the test in paragraph 7.2 above ...")
    pointer = re.search(r"\b(?:above|below|following)\b", f"{found.group('subject')} {found.group('rest')}")
    condition = found.group("condition")
    deictic = introduced_in_condition(condition, found.group("rest")) or relative_condition(condition)
    if len(found.group("condition").split()) < 4 or pointer or deictic:
        return None  # an elliptic condition ("If adjustable"), or a main clause that points elsewhere
    subject = _lower_first(found.group("subject"), context)
    return f"According to {place}, when {found.group('modal')} {subject} {found.group('rest')}?", found.group("condition")


@rule("generate.provision.conditional_deictic", "generate", "a conditional requirement's condition and main clause",
      "the main clause names with 'the' what only the condition introduces ('Where a range is specified, the vehicle must "
      "meet the requirements at all points within the range'): the question 'when ... within the range?' depends on its "
      "own answer, so it is not asked")
def introduced_in_condition(condition: str, rest: str) -> bool:
    """True when a noun the condition introduces with "a/an" comes back in the main clause as "the <noun>"."""
    nouns = {m.group(1).lower() for m in re.finditer(r"\b(?:a|an)\s+(?:[a-z\-]+\s+)?([a-z]{3,})\b", condition)}
    return any(re.search(rf"\bthe\s+(?:[a-z\-]+\s+)?{re.escape(noun)}\b", rest, re.IGNORECASE) for noun in nouns)


@rule("generate.provision.conditional", "generate", "a requirement with a leading condition ('If the strap slips ..., "
      "the test shall be invalid.', 'Where there is any asymmetry, all seating positions must be assessed ...')", "factual")
def conditional_candidates(view: ChunkView) -> Iterator[Candidate]:
    """'According to paragraph 7.4.2.4 of UN Regulation No. 16, when shall the test be invalid?' -> the condition."""
    if view.language != "en" or not doc_phrase(view):
        return
    units = [(_reference(view, unit), unit.text) for unit in provision_units(view) if not administrative(view, unit)]
    if not units and _section_ok(view):
        units = [(where(view), view.markdown)]
    for place, text in units:
        for sentence in sentences(text) if text is view.markdown else re.split(r"(?<=\.)\s+(?=[A-Z])", text):
            made = _conditional_question(sentence.strip(), place, view.markdown)
            answer = verbatim_span(made[1], view.markdown) if made else ""
            if made and answer and not garbled(answer) and not garbled(made[0]):
                yield Candidate(made[0], answer, "factual", "text")  # the answer is a condition clause, not a sentence


PROVISION_SOURCES = (
    headline_candidates, value_candidates, requirement_candidates, conditional_candidates, definition_candidates,
    korean_limit_candidates,
)
"""Asked first of a regulation's or protocol's chunk, before the prose and table sources."""

__all__ = ["PROVISION_SOURCES", "Unit", "josa", "provision_units"]
