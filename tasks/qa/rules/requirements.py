"""Generator rules for requirements and test conditions: the limits a regulation or protocol sets.

A requirement sentence ("The deceleration of the head form shall not exceed 80 g ...", "... shall be at least
250 mm", "≤ 700", "... 이하") becomes a limit question that names the document and, when the paragraph is
numbered, the paragraph: "According to paragraph S5.1 of FMVSS No. 201, what limit applies to the deceleration of
the head form?" The answer is the requirement clause itself, a complete span of the chunk. A test condition
("... at a speed of 32 ± 1 km/h", "... a mass of 1,300 kg") becomes a condition question about the quantity.
Sentences whose subject is not a clean noun phrase (a pronoun, a clause, a fragment) give no question, and
nothing is asked without a document handle.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tasks.qa.handles import clean_name
from tasks.qa.registry import rule
from tasks.qa.rules.provisions import annex_of
from tasks.qa.rules.sections import orphan_items
from tasks.qa.rules.text import _GARBLED_RE, Candidate, ChunkView, _lower_first, doc_phrase, paragraphs, sentences, where

_NUMBER = r"\d[\d,.]*\s?(?:±\s?\d[\d,.]*\s?)?(?:%|°|[a-zA-Zµ/²]{1,6}\b)?"
_LIMIT_RE = re.compile(
    r"\b(?:shall|must|should|will)\s+(?:not\s+)?(?:be\s+)?(?:exceed|(?:at\s+(?:least|most))|(?:not\s+)?(?:less|more|greater|lower|"
    r"higher)\s+than|no\s+(?:less|more|greater)\s+than|(?:a\s+)?(?:maximum|minimum)\s+of|between|within|below|above|"
    r"equal\s+to\s+or\s+(?:less|greater)\s+than)\b[^.;]*?\d"
    r"|\b(?:shall|must)\b[^.;]{0,80}?\b(?:(?:less|more|greater|lower|higher)\s+than|(?:minimum|maximum)\b[^.;]{0,30}?)\s*\d"
    r"|[≤≥]\s?\d",
    re.IGNORECASE,
)
_SYMBOL_ARG = r"(?<=\w)\(\w{1,4}\)"
"""A symbol's argument glued to it, part of the name: "HIC(d)", "HIC(36)", "a(t)"."""
_SUBJECT_RE = re.compile(rf"^(?P<subject>[A-Z](?:[^,;:()]|{_SYMBOL_ARG}){{3,110}}?)\s(?P<verb>shall|must|should)\s")
_NOT_SUBJECT_START = frozenset("it this that these those they there if when where in for after before during as at on with "
                               "no none such".split())
_INNER_MODIFIER_RE = re.compile(
    r",\s(?:(?:as|when)\s(?:measured|tested|determined|specified|calculated)\b|(?:filtered|measured|calculated)\s"
    r"(?:using|with|by|according\sto|in\saccordance\swith)\b)[^,]{0,80},", re.IGNORECASE
)
"""A measuring clause between subject and verb: ", as measured ...,", ", filtered using ISO 6487:2000 CFC 1000,"."""
_CONDITION_PREFIX_RE = re.compile(
    r"^(?:When|Where)\s+(?:tested|measured|determined|calculated)\s+(?:in accordance with|as prescribed in|according to)\s+"
    r"(?:paragraph|annex|S)\s?[\dA-Z][\w.]*\.?,?\s+",
    re.IGNORECASE,
)
_CONDITION_RE = re.compile(r"^(?P<condition>(?:If|In the case of|For|Where|When)\s[^,;]{5,110}),\s+(?P<rest>.+)$")
_MODIFIER_RE = re.compile(r"\s(?:as prescribed|in accordance with|determined as|when (?:tested|measured)|in the test|"
                          r"according to|specified in|referred to in)\b.*$", re.IGNORECASE)
_CLAUSE_WORDS = frozenset("which that who when where if because although while unless whether is are was were has have".split())
_VAGUE_WORDS = frozenset("above below following said such this these those it its their same other former latter".split())
_DETERMINERS = frozenset("the each any all every a an of in on for to at by with and or".split())
_CRITERION_SYMBOL_RE = re.compile(r"\b[A-Z][A-Za-z]*[A-Z]\w*(?:\(\w{1,4}\))?(?=\s|$)")
"""An injury criterion's symbol in a subject ("HIC(d)", "HIC36", "Nij", "VC"): specific alone, and its limit is a bare
number."""
_UNIT_VALUE_RE = re.compile(r"\d[\d,.]*\s?(?:±\s?\d[\d,.]*\s?)?(?:%|per\s?cent|°|º|[a-zA-Zµ]{1,6}\b|[≤≥])|[≤≥]\s?\d")
_PARAGRAPH_NUMBER_RE = re.compile(r"^\s*(?P<number>S\d+(?:\.\d+)*|\d+(?:\.\d+){1,5})\.?\s")


_ITEM_LABEL_RE = re.compile(r"(?:^|(?<=\s))(?:\((?:[a-z]|\d{1,2}|[ivx]{1,4})\)\s*)+(?=[A-Z])")
"""Item labels ("(1) ", "(c)(1) ") before a capitalised sentence: each item is a sentence of its own."""


def _item_sentences(markdown: str) -> list[str]:
    """The chunk's sentences with list items cut apart and their labels dropped ("(2) The pubic symphysis force shall
    not exceed 6,000 N." -> "The pubic symphysis force shall not exceed 6,000 N.")."""
    return sentences(_ITEM_LABEL_RE.sub("\n\n", markdown))


def _condition(sentence: str) -> tuple[str, str]:
    """(the leading condition "if the retractor is part of a lap belt", the main clause), or ('', sentence)."""
    found = _CONDITION_RE.match(_PARAGRAPH_NUMBER_RE.sub("", sentence))
    if not found or re.search(r"\b(?:above|below|paragraphs?|annex)\b|\d", found.group("condition"), re.IGNORECASE):
        return "", sentence
    condition = found.group("condition")
    return condition[:1].lower() + condition[1:], found.group("rest")


def _subject(sentence: str) -> tuple[str, str] | None:
    """(subject, the clause from the subject on) of a requirement sentence.

    None when its subject is not a clean noun phrase.
    """
    raw = _CONDITION_PREFIX_RE.sub("", _PARAGRAPH_NUMBER_RE.sub("", sentence))
    body = raw[:1].upper() + raw[1:]
    match = _SUBJECT_RE.match(_INNER_MODIFIER_RE.sub("", body))
    if not match or match.group("subject").split()[0].lower() in _NOT_SUBJECT_START:
        return None
    subject = _MODIFIER_RE.sub("", match.group("subject").strip())
    words = subject.lower().split()
    if not 2 <= len(words) <= 14 or _CLAUSE_WORDS & set(words[1:]) or re.search(r"\d{2,}|\d\.\d", subject):
        return None  # "a maximum of 0.5 kg/m2 ..." is the value, not what it limits
    criterion = bool(_CRITERION_SYMBOL_RE.search(subject))  # "The HIC(d)", "The Nij": a named injury criterion
    if _VAGUE_WORDS & set(words) or (len([w for w in words if w not in _DETERMINERS]) < 2 and not criterion):
        return None  # "the threshold", "the load quoted above": which one only the chunk says
    if not _UNIT_VALUE_RE.search(body[match.end():]) and not (criterion and re.search(r"\d", body[match.end():])):
        return None  # the limit is a reference ("the limit indicated in paragraph 6.2.2.5"), not a value
    return subject, raw  # the clause as the chunk writes it


_LATE_SUBJECT_RE = re.compile(r",\s+(?P<subject>(?:the|each|any)\s[^,;:()]{3,110}?)\s(?:shall|must)\s(?!.*,\s+(?:the|each|any)\s"
                              r"[^,;:()]{3,110}?\s(?:shall|must)\s)")


def _late_subject(sentence: str) -> str:
    """The subject of a requirement that follows its conditions ("Except as provided in S5.1.2, when ... is impacted ...
    at 24 km/h, the deceleration of the head form shall not exceed 80 g ..." -> "the deceleration of the head form")."""
    found = _LATE_SUBJECT_RE.search(sentence)
    if not found:
        return ""
    subject = _MODIFIER_RE.sub("", found.group("subject").strip())
    words = subject.lower().split()
    if not 2 <= len(words) <= 14 or _CLAUSE_WORDS & set(words[1:]) or _VAGUE_WORDS & set(words) or re.search(r"\d", subject):
        return ""
    return subject if _UNIT_VALUE_RE.search(sentence[found.end():]) else ""


def _paragraph_number(markdown: str, sentence: str) -> str:
    """The number of the numbered paragraph holding ``sentence`` ("S5.1", "5.2.3"), or ''."""
    for paragraph in paragraphs(markdown):
        if sentence[:60] in paragraph:
            found = _PARAGRAPH_NUMBER_RE.match(paragraph)
            return found.group("number") if found else ""
    return ""


def _place(view: ChunkView, number: str) -> str:
    """Where a sentence stands: its paragraph of the document, else the section; '' when the chunk starts inside a
    list whose paragraph stands in an earlier chunk (``generate.section.orphan_items``)."""
    doc = doc_phrase(view)
    if not number and orphan_items(view.markdown):
        return ""
    annex = annex_of(view)
    if number and doc:
        return f"paragraph {number} of {annex} to {doc}" if annex else f"paragraph {number} of {doc}"  # Annex 4's 4.3.5
    return where(view)


_FORMULA_LEAD_IN_RE = re.compile(
    r"(?:^|(?<=[.!?]\s))(?P<head>[A-Z][^.;:!?]{10,300}?\d[^.;:!?]*?),?\s+(?:(?:when|as|if)\s+)?(?:calculated|computed|"
    r"determined)\s+(?:in\saccordance\swith|according\sto|using|by)\s+the\sfollowing\s(?:formula|equation|expression)s?"
    r"\s*:"
)


def _formula_lead_ins(markdown: str) -> list[str]:
    """The requirement before a formula's lead-in ("The HIC(d) shall not exceed 1000 when calculated in accordance with
    the following formula:" -> "The HIC(d) shall not exceed 1000"): the sentence ends in a colon, so ``sentences``
    drops it, but the limit stands whole before "when calculated"; the formula itself is not asked."""
    out = []
    for paragraph in paragraphs(markdown):
        found = _FORMULA_LEAD_IN_RE.search(paragraph)
        if found and not _GARBLED_RE.search(found.group("head")) and not any(found.group("head") in x for x in out):
            out.append(found.group("head"))
    return out


def _without_formula(sentence: str) -> str | None:
    """A sentence that runs on into a formula's lead-in ("... shall not exceed 1000 when calculated in accordance with
    the following formula: t = − − ∫ [( ) ] ( ) .") is None: the text layer's formula is not an answer, and its
    requirement is asked by ``_formula_lead_ins``."""
    return None if _FORMULA_LEAD_IN_RE.search(sentence) else sentence


@rule("generate.requirement.limit", "generate", "a sentence of a regulation or protocol with shall/must and a limit "
      "(not exceed, at least, not less than, ≤, ≥) and a number", "numeric")
def limit_candidates(view: ChunkView) -> Iterator[Candidate]:
    """Limit questions from requirement sentences, naming the document and the numbered paragraph."""
    if view.language != "en" or not doc_phrase(view):
        return
    for sentence in [*filter(None, map(_without_formula, _item_sentences(view.markdown))),
                     *_formula_lead_ins(view.markdown)]:
        if not _LIMIT_RE.search(sentence):
            continue
        condition, main = _condition(sentence)
        found = _subject(main)
        late = _late_subject(sentence) if found is None else ""
        if found is None and not late:
            continue
        subject, clause = found or (late, sentence)  # a late subject is answered with its conditions: the whole sentence
        place = _place(view, _paragraph_number(view.markdown, sentence))
        if not place:
            continue
        phrase = clean_name(_lower_first(subject, view.markdown))
        question = f"According to {place}, what limit applies to {phrase}{' ' + condition if condition and not late else ''}?"
        answer = sentence if condition or late else clause
        if not _GARBLED_RE.search(answer):  # "20 + 5 °C" (± read as +), "kN/mP2P", "vehicles10": not grounded as written
            yield Candidate(question[:1].upper() + question[1:], answer, "numeric", "text")


_TEST_CONDITION_RE = re.compile(
    r"\ban?\s+(?P<quantity>(?:impact\s+)?(?:speed|velocity|mass|angle|temperature|force|load|pressure|"
    r"height|rate|overlap|duration|distance|diameter))\s+of\s+(?P<value>" + _NUMBER + r")",
    re.IGNORECASE,
)


@rule("generate.requirement.condition", "generate", "a sentence of a procedure that states a test condition "
      "('at a speed of 32 km/h', 'a mass of 1,300 kg')", "factual")
def condition_candidates(view: ChunkView) -> Iterator[Candidate]:
    """Condition questions (speed, mass, angle, ...) from procedure sentences with a clean subject."""
    if view.language != "en" or not doc_phrase(view):
        return
    for sentence in _item_sentences(view.markdown):
        match = _TEST_CONDITION_RE.search(sentence)
        if not match or _LIMIT_RE.search(sentence):
            continue
        found = _subject(sentence)
        if found is None:
            continue
        subject, clause = found
        place = _place(view, _paragraph_number(view.markdown, sentence))
        if not place:
            continue
        quantity = match.group("quantity").lower()
        phrase = clean_name(_lower_first(subject, view.markdown))
        question = f"According to {place}, what {quantity} is specified for {phrase}?"
        yield Candidate(question[:1].upper() + question[1:], clause, "factual", "text")


_STATED_RE = re.compile(
    r"^(?P<subject>(?:[Tt]he|An?|Each)\s[^,;:]{3,110}?)\s(?P<verb>is|are|weighs|weigh)\s(?P<placed>(?:located|positioned|"
    r"set|maintained)\s(?:at\s)?)?(?:(?:approximately|about|nominally)\s)?(?P<value>" + _NUMBER + r")"
)
_STATED_UNIT_RE = re.compile(r"^\d[\d,.]*(?:\s?(?:±|[-–]|to)\s?\d[\d,.]*)?\s?(?:%|°|º|kg|g|t|N|kN|daN|mm|cm|m|km/h|"
                             r"m/s|mph|ms|s|seconds?|minutes?|hours?|degrees?|percent|MPa|kPa|bar|V|A|J|lb|in\.?)(?![\w/])")
"""The value is a measure with its unit ("52 kg", "175–250 kg", "12.5 ± 2.5%", "160 mm"), not a count or a label."""
_POSITION_RE = re.compile(r"\s?(?:(?:(?:±|\+/-)\s?\d[\d,.]*\s?)?(?:mm|cm|m|in\.?)\s)?"
                          r"(?:beyond|above|below|behind|ahead of|in front of|rearward|forward|"
                          r"inboard|outboard|aft|fore|from|to the (?:left|right|rear|front))\b")
"""A value followed by a direction ("254 ± 10 mm beyond the most forward point of the roof") places the subject: asked
"where is ...?", not "what is ...?" (IIHS roof strength: "what is the midpoint of the platen's forward edge?")."""
_OWNERLESS_RE = re.compile(r"^(?:the|a|an)\s(?:(?:center|centre) of (?:gravity|mass)|midpoint|origin|impact (?:surface|point)|"
                           r"reference point|contact point)$", re.IGNORECASE)
"""A point that belongs to a thing the sentence does not name ("The center of gravity is located ..." of the barrier)."""
_STATED_NOT_IN_SUBJECT = frozenset("it this that these those they there which who where when if its their same such "
                                   "following above below former latter said".split())


def stated_value_question(sentence: str, context: str = "") -> str:
    """"what is the total weight of the five digital cameras?" for "The total weight of the five digital cameras ... is
    approximately 52 kg."; "how much does X weigh?" for "X weighs 10 kg."; "where is X located?" for "X is located
    160 mm rearward ..."; '' when the sentence is no plain statement of a measured value about a named thing."""
    if re.search(r"\b(?:shall|must|should|may)\b", sentence):
        return ""  # a requirement: the limit rules ask it
    condition, main = _condition(sentence)
    found = _STATED_RE.match(main)
    if not found or not _STATED_UNIT_RE.match(found.group("value").strip() + sentence[main.find(found.group("value")) +
                                                                                   len(found.group("value")):][:12]):
        return ""
    subject = _MODIFIER_RE.sub("", found.group("subject").strip())
    subject = re.sub(r"\s\((?:[A-Z][\w-]{0,10})\)$", "", subject)  # "the head center of gravity (CG-R)" -> named by its words
    words = subject.lower().split()
    content = [w for w in words if w not in _DETERMINERS]
    if (not 2 <= len(words) <= 14 or len(content) < 2 or _STATED_NOT_IN_SUBJECT & set(words) or _CLAUSE_WORDS & set(words[1:])
            or re.search(r"\d|[()]", subject)):
        return ""
    if _OWNERLESS_RE.match(subject):
        return ""  # "The center of gravity is located ...": whose (the barrier's) only the paragraph title says
    if re.search(r"\bof\sthe\s[a-z]+[^s\W]s$", subject):
        return ""  # "the combined weight of the systems": which systems only the sentences before say
    phrase = clean_name(_lower_first(subject, context))
    tail = f" {condition}" if condition else ""
    dimensions = re.findall(r"\d\s?(?:mm|cm|m)\s(high|wide|deep|long|thick|tall)\b", main)
    if dimensions:  # "The base unit is 184 cm high, 366 cm wide, and 542 cm deep."
        return (f"what are the dimensions of {phrase}{tail}?" if len(dimensions) > 1
                else f"how {dimensions[0]} {found.group('verb')} {phrase}{tail}?")
    if found.group("verb").startswith("weigh"):
        return f"how much {'does' if found.group('verb') == 'weighs' else 'do'} {phrase} weigh{tail}?"
    after = main[main.find(found.group("value")) + len(found.group("value")):]
    if found.group("placed") and found.group("placed").startswith(("located", "positioned")) or _POSITION_RE.match(after):
        placed = f" {found.group('placed').split()[0]}" if found.group("placed") else ""
        return f"where {found.group('verb')} {phrase}{placed}{tail}?"
    if found.group("placed"):
        return f"at what value {found.group('verb')} {phrase} {found.group('placed').split()[0]}{tail}?"
    return f"what {found.group('verb')} {phrase}{tail}?"


@rule("generate.requirement.stated_value", "generate", "a sentence of a regulation or protocol that states a measured "
      "value of a named thing without a modal ('The total weight of the cameras ... is approximately 52 kg.', 'The "
      "onboard braking system weighs approximately 11 kg.', 'the head center of gravity (CG-R) is located 160 mm "
      "rearward ...')", "numeric")
def stated_value_candidates(view: ChunkView) -> Iterator[Candidate]:
    """Value questions naming the document, the paragraph or section and the thing measured; the sentence answers."""
    if view.language != "en" or view.handle.doc_kind not in ("regulation", "protocol") or not doc_phrase(view):
        return
    for sentence in _item_sentences(view.markdown):
        question = stated_value_question(sentence, view.markdown)
        place = _place(view, _paragraph_number(view.markdown, sentence)) if question else ""
        if question and place and not _GARBLED_RE.search(sentence) and len(sentence) <= 300:
            yield Candidate(f"According to {place}, {question}", sentence, "numeric", "text")


REQUIREMENT_SOURCES = (limit_candidates, condition_candidates)
"""Requirement and condition questions: asked first of a regulation's or protocol's chunk. The stated-value rule is a
coverage rule (``tasks.qa.rules.coverage``, behind ``qa.coverage_rules``): developed on UN R16, FMVSS 201, IIHS moderate
overlap and Euro NCAP CP 008-1, its pairs on the documents it was not written from (UN R95, FMVSS 214/301, IIHS roof
strength) were 8 of 10 usable (``tests/data/qa_labels_regcov_round1.jsonl``), under the 0.85 a default rule needs: "the
center of gravity" without the barrier it belongs to, and "what is the midpoint of ...?" for a position."""
