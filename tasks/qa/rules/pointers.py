"""Checks the provision rules apply before they ask: a value's lost bound or other owner, a requirement that only points.

Regulations state a value's bound with a glyph the PDF font may drop ("elongation ≥ 12 per cent" read as
"elongation  12 per cent"), put values before the noun they measure ("a 1 - 2 g holding force"), and write requirements
that say nothing but where the requirement is ("shall be tested as prescribed in paragraph 7.5.1."). A question built
on any of them names the wrong owner, drops the bound or answers with a cross-reference, so none is asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tasks.qa.registry import rule
from tasks.qa.rules.subjects import _NOUN_HEADS
from tasks.qa.rules.text import ChunkView

_LOST_GLYPH_BEFORE_RE = re.compile(r"(?:\S\s{2,}|\d\s+)$")
"""Before a value: a gap of two spaces where the PDF's font dropped a glyph ("elongation  12 per cent" for "≥ 12 per
cent", "35  0.5 km/h" for "35 ± 0.5 km/h"), or a bare number ("35 0.5 km/h"): the value's bound or its base was lost."""


_UNREAD_BOUND_RE = re.compile(r"\bthan\b[^.;,]{0,40}$|\b(?:adding|subtracting|add|subtract|increased by|reduced by|"
                              r"offset by|plus|minus)\s+$", re.IGNORECASE)
"""Before a value: a comparison whose bound the value pattern did not read ("no further forward than a torso angle of
15 degrees"), or an offset ("obtained by adding 25 cm to the brake pedal reference"): the value is a bound or a
difference, not the quantity itself."""


@rule("generate.value.bound_lost", "generate", "the text just before a value (provision values)",
      "two spaces where a glyph was dropped ('elongation  12 per cent' for '≥ 12 per cent'; '35  0.5 km/h' for "
      "'35 ± 0.5 km/h'), a bare number, an unread comparison ('no further forward than a torso angle of 15 degrees') or "
      "an offset ('adding 25 cm to') before it: the bound or base of the value was lost, so it is not asked")
def bound_lost(before: str) -> bool:
    """True when a glyph (a bound "≥", a "±") was dropped just before the value, or a bare number precedes it."""
    return bool(_LOST_GLYPH_BEFORE_RE.search(before) or _UNREAD_BOUND_RE.search(before))


_CONDITION_START_RE = re.compile(r"(?:^|[.;:]\s|\n)(?P<clause>[^.;:\n]*)$")
_CONDITIONAL_RE = re.compile(r"\b(?:[Ii]f|[Uu]nless|[Ww]hen|[Ww]henever|[Ww]here)\b(?![^.;:\n]*\b(?:shall|must|should)\b)")
_THRESHOLD_RE = re.compile(r"\b(?:(?:more|less|greater|fewer|higher|lower)\s+than|exceeds?|exceeding|(?:at\s+)?(?:least|most)|"
                           r"below|above|over|under)(?:\s+the)?\s*$", re.IGNORECASE)


@rule("generate.value.condition_threshold", "generate", "the clause a value stands in (provision values)",
      "the value is the bound of a condition, not a specification: it stands in an 'if/unless/when/where' clause that has "
      "no 'shall/must' before it and is compared there ('if the strap length ... is not more than 250 mm, the points A, B "
      "and K are used'; 'if the mass of the measuring apparatus exceeds the 25 kg allowed'; 'when the ignition is "
      "switched off for more than 30 minutes'): asked 'what is the strap length?', its answer reads as the specification")
def condition_threshold(before: str, qualifier: str = "") -> bool:
    """True when the text before the value (its sentence) opens a condition that compares the value (``qualifier``: the
    value's own bound word, e.g. 'not more than', when the value pattern read it)."""
    clause = _CONDITION_START_RE.search(before)
    if not clause or not _CONDITIONAL_RE.search(clause.group("clause")):
        return False
    return bool(_THRESHOLD_RE.search(before) or re.search(r"than|least|most|exceed", qualifier or "", re.IGNORECASE))


_ATTRIBUTIVE_RE = re.compile(
    r"\s+(?:(?!(?:and|or|at|in|on|to|for|from|per|with|by|the|a|an|its|of)\s)[a-z][a-z\-]*\s+)?"
    rf"(?:{_NOUN_HEADS}|diameter|form|holding|radius)\b(?!\s+(?:of|is|are|shall)\b)")


@rule("generate.value.attributive", "generate", "the words right after a value (provision values)",
      "a value that modifies the noun after it ('a 1 - 2 g holding force', 'a 165 mm diameter head form') belongs to that "
      "noun, not to the clause's subject: not asked")
def attributive(after: str) -> bool:
    """True when the value is an attribute of the noun phrase that follows it (its owner is that noun)."""
    return bool(_ATTRIBUTIVE_RE.match(after))


_POINTER_RE = re.compile(
    r"\b(?:(?:the\s+)?(?:requirements?|specifications?|conditions?|characteristics|provisions?|procedures?|criteria)\s+"
    r"(?:of|in|set\s+(?:out|forth)\s+in|specified\s+in|defined\s+in|given\s+in|prescribed\s+in|described\s+in|mentioned\s+in)"
    r"|(?:as\s+)?(?:prescribed|described|specified|defined|detailed|shown|given|indicated|set\s+(?:out|forth))\s+(?:in|under|by)"
    r"|in\s+(?:accordance|conformity|compliance)\s+with|according\s+to|comply\s+with|meet)\s")
_REFERENCE_RE = re.compile(r"\b(?:paragraphs?|Annex(?:es)?|Appendix|Figure|Standard|Part|section)\s+[\dA-Z][\w.]*"
                           r"|\bS\d+(?:\.\d+)*(?:\([a-z0-9]+\))*|\bthis\s+(?:annex|Regulation|standard)\b", re.IGNORECASE)
_VALUE_RE = re.compile(r"\d(?:[\d.,]*\d)?\s?(?:%|per\s?cent|percent|°|mm|cm|m|km/h|kph|mph|kg|g|lb|N|kN|daN|kPa|MPa|bar|"
                       r"ms|s|seconds?|minutes?|hours?|J|kJ|V|VAC|VDC|Hz|litres?|liters?)(?![\w/])")
"""A value with its unit: a sentence that states one says something of its own, even when it also points elsewhere."""
_CONTENT_WORD_RE = re.compile(r"\b[a-z][a-z\-]{3,}\b")
_POINTER_FILLER = frozenset(
    "shall must tested test tests carried each sample samples complete conditioned subjected comply complies meet meets "
    "requirements requirement specifications conditions provisions characteristics procedure procedures prescribed "
    "described specified defined accordance conformity compliance according above below with that this their these "
    "those have been into from when where following vehicle vehicles manufactured after before set forth out under "
    "case considered satisfied satisfactory result results assessed mentioned given regarded also other detailed shown "
    "indicated positioned".split())
MAX_POINTER_WORDS = 4
"""A requirement with at most this many content words besides its reference and the words that point ("shall be
tested as prescribed in paragraph 7.5.1.") says nothing of its own."""


@rule("generate.provision.cross_reference", "generate", "a requirement sentence chosen by the provision requirement rule",
      "a sentence that only points elsewhere ('The strap shall be conditioned as described under paragraph 7.4.1.1.', "
      "'Vehicles manufactured on or after ... shall comply with the requirements of S5 and S6.') and states no value is "
      "not asked: its answer is a cross-reference, not a requirement")
def cross_reference_only(sentence: str) -> bool:
    """True when the sentence points to another paragraph and has (almost) nothing of its own: no value with a unit and at
    most ``MAX_POINTER_WORDS`` content words beside the reference and the pointing words."""
    if not _POINTER_RE.search(sentence) or not _REFERENCE_RE.search(sentence) or _VALUE_RE.search(sentence):
        return False
    rest = _REFERENCE_RE.sub(" ", sentence)
    words = [w for w in _CONTENT_WORD_RE.findall(rest.lower()) if w not in _POINTER_FILLER]
    return len(words) <= MAX_POINTER_WORDS


@rule("generate.provision.reference_line", "generate", "a line that starts with a paragraph number",
      "a number followed by a lower-case word ('2.2.3.2 and a force of 100N shall be applied ...') is a cross-reference "
      "the PDF wrapped to the line start ('... tightened as per Section / 2.2.3.2 and a force ...'), not the start of "
      "paragraph 2.2.3.2: the items after it stay under the paragraph they stand in")
def reference_line(rest: str) -> bool:
    """True when the text after a line's leading number goes on in lower case ("and a force of ...", "defined in Annex
    5."): the number was a cross-reference. A title whose first word is a lower-case prefix of a name ("3.1.1 i-Size
    equipped vehicles", "eCall") is not one."""
    text = rest.strip()
    return bool(re.match(r"[a-z]", text)) and not re.match(r"[a-z]{1,3}-?[A-Z]", text)


_POINTER_PREDICATE_RE = re.compile(
    r"\b(?:shall|must)\s+(?:(?:also|only|still)\s+)?(?:be\s+able\s+to\s+)?"
    r"(?:meet|satisfy|fulfil+|comply\s+with"
    r"|be\s+(?:in\s+(?:accordance|conformity|compliance)\s+with|those\s+\w+\s+in|as\s+\w+\s+in|met|satisfied|fulfil+ed)"
    r"|be\s+subjected\s+to\s+(?:a|an|the)\s+(?:[\w-]+\s+){0,3}tests?\s+in\s+(?:accordance|conformity|compliance)\s+with"
    r"|be\s+\w+ed\s+(?:(?:as\s+)?(?:shown|described|specified|prescribed|set\s+out|defined|given|indicated|detailed)\s+"
    r"(?:in|under|by)|in\s+(?:accordance|conformity|compliance)\s+with|according\s+to))\b"
    r"(?P<rest>)", re.IGNORECASE)
_CRITERIA_MET_RE = re.compile(r"\b(?:criteria|requirements|conditions)\s+(?:specified|set\s+out|listed|given|prescribed)\s+in\s+"
                              r"(?:paragraphs?|Annex|S\d)[^;]{0,80}\bshall\s+be\s+(?:met|satisfied|fulfil+ed)\b", re.IGNORECASE)
_TAIL_POINTER_RE = re.compile(
    r"(?:\b(?:requirements?|corridors?|limits?|curves?|conditions?|criteria)\s+(?:of|in|indicated\s+in|specified\s+in|"
    r"shown\s+in|given\s+in|set\s+out\s+in)\s+(?:this\s+annex|Figure\s+\S+|paragraphs?\s+\S+)"
    r"|\bby\s+either\s+(?:paragraphs?\s+)?\d[\d.]*\s+or\s+(?:paragraph\s+)?\d[\d.]*(?:\s+(?:above|below))?"
    r"(?:\s+for\s+the\s+relevant\s+part\(?s?\)?)?)\.?$", re.IGNORECASE)
"""A sentence that ends on what it points to ("... shall fall between corridors of Figure 2e.", "... signals complying
with the requirements indicated in this annex.", "... shall be proved by either 5.3.7.1.3. or 5.3.7.1.4. below.")."""
_PREDICATE_WORDS = 12
"""The reference must come within this many words of the pointing verb ("shall meet the information requirements of
Annex 17"): further on, the predicate says something of its own first."""


@rule("generate.provision.pointer_predicate", "generate", "a requirement sentence chosen by the provision requirement rule",
      "the requirement's own predicate only points elsewhere, whatever its subject or condition says ('vehicles of "
      "categories M1, M2, M3 and N1 shall meet the information requirements of Annex 17', 'shall be those specified in "
      "Annex 16', 'shall be in accordance with ... the documentation specified in paragraph 1.1', 'at least one of the "
      "four criteria specified in paragraph 5.3.7.1.1. ... shall be met', '... shall fall between corridors of Figure 2e.') "
      "and states no value with a unit: asked what it requires, the answer is a cross-reference")
def pointer_predicate(sentence: str) -> bool:
    """True when what the sentence requires (the words after shall/must) is a pointer to another paragraph, annex,
    figure or standard within ``_PREDICATE_WORDS`` words, and that predicate states no value with a unit."""
    if _CRITERIA_MET_RE.search(sentence) or _TAIL_POINTER_RE.search(sentence.strip()) and not _VALUE_RE.search(sentence):
        return True
    found = _POINTER_PREDICATE_RE.search(sentence)
    if not found:
        return False
    rest = sentence[found.start("rest"):]
    head = " ".join(rest.split()[:_PREDICATE_WORDS])
    if re.search(r"\band\s+(?:shall\s+)?(?:be|is|are)\s+\w+ed\b", rest):
        return False  # "... comply with the specifications given in Annex 6 and be installed in the front seat ...": more
    return bool(_REFERENCE_RE.search(head)) and not _VALUE_RE.search(rest)


_SELF_SCOPE_RE = re.compile(r"^(?:The\s)?(?:test\s)?(?:procedures?|requirements?|provisions?|methods?)\b[^.]{0,60}"
                            r"\b(?:in|of)\s+this\s+(?:appendix|annex|regulation|standard|section|part|document)\b[^.]{0,30}\bshall\s+(?:be\s+used|apply)\b",
                            re.IGNORECASE)


@rule("generate.provision.self_scope", "generate", "a requirement sentence chosen by the provision requirement rule",
      "a sentence that says what the annex or appendix itself is for ('The test procedure and the requirements in this "
      "appendix shall be used to determine the suitability of seat positions ...') is its scope, not a requirement: "
      "not asked as what the paragraph requires")
def self_scope(sentence: str) -> bool:
    """True when the sentence's subject is this appendix's (annex's, regulation's) own procedure or requirements."""
    return bool(_SELF_SCOPE_RE.search(sentence))


@rule("generate.provision.after_list", "generate", "a prose block that follows a numbered paragraph's lettered list",
      "when the list's items end with ';' and its last item with '.' ('(g) The buckle-opening force; (h) Any failure or "
      "breakage.'), a capitalised block after it ('If by virtue of paragraph 7.7.1. ... the test report shall describe "
      "...') goes on with the paragraph, not with item (h): it is not asked as the last item")
def after_list(units: Sequence, label: str, block: str) -> bool:
    """True when ``block`` starts a new sentence after a closed ';'-list whose last item is ``label`` (``units``: the
    provision units so far, each with ``number`` and ``text``)."""
    items = [u for u in units if u.number.startswith(label.split("(")[0] + "(")]
    if "(" not in label or len(items) < 2 or not block[:1].isupper() or units[-1].number != label:
        return False
    return items[-1].text.rstrip().endswith(".") and sum(u.text.rstrip().endswith(";") for u in items[:-1]) >= 1


_BACK_REFERENCE_RE = re.compile(
    r"\b(?:this|these|such|said)\s+(?!(?:Regulation|regulation|annex|Annex|standard|Standard|paragraph|appendix|Appendix|"
    r"test|tests|section|part|Part|as|that|is|are|was|were)\b)[a-z]")


@rule("generate.provision.back_reference", "generate", "the first ten words of a requirement sentence",
      "a noun taken up from the sentence before ('Where there is no such door, ...', 'For vehicles of category N1 this "
      "evacuation may ...', 'shall meet these vehicle-to-pole test requirements'): the requirement is not whole without "
      "it, so it is not asked as what the paragraph requires")
def back_reference(sentence: str) -> bool:
    """True when the sentence's opening words refer back ("such door", "this evacuation", "these ... requirements")."""
    return bool(_BACK_REFERENCE_RE.search(" ".join(sentence.split()[:10])))


def not_its_own(sentence: str) -> bool:
    """True when a paragraph's first sentence is no requirement of its own: a pointer (``cross_reference_only``,
    ``pointer_predicate``), the annex's own scope (``self_scope``), a back reference (``back_reference``) or list items
    run together ("Location of points at which displacement shall be measured; and shoulder height.")."""
    return bool(cross_reference_only(sentence) or pointer_predicate(sentence) or self_scope(sentence)
                or back_reference(sentence) or re.search(r";\s+(?:and|or)\s", sentence))


VALUE_SILENT_KINDS = frozenset({"regulation", "protocol"})
"""Document kinds whose numbered provisions the value rule does not ask (``value_kind_gate``)."""


@rule("generate.value.kind_gate", "generate", "the document kind of a chunk with numbered provisions (provision values)",
      "in a regulation or a test protocol the value rule does not emit: its critic-passed pairs were labelled 22 of 38 "
      "usable in round 7 (main's generator, 5 documents: UN R95 8/16, UN R16 7/11, FMVSS 201 0/3, FMVSS 214 4/5, "
      "FMVSS 301 3/3) and 7 of 10 in round 8 after two of its fixes; a value's bound, condition or owner sits in "
      "sentence structure a pattern does not read. The paragraph's requirement (generate.provision.requirement), its "
      "limit sentence (generate.requirement.limit) and its criterion limits still ask the same facts as whole sentences")
def value_kind_gate(view: ChunkView) -> bool:
    """True when the chunk's document is a regulation or a protocol (``Handle.doc_kind``)."""
    return view.handle.doc_kind in VALUE_SILENT_KINDS


_RELATIVE_RE = re.compile(r"(?<!\beach\s)(?<!\bone\s)\b(?:other|another)\b(?!\s+than\b)"
                          r"|\bthe\s+(?:latter|former|prerequisite|above)\b|\bsuch\b(?!\s+(?:that|as)\b)", re.IGNORECASE)
"""'other' that is not 'each other' or 'other than X', 'the latter/former/prerequisite/above', 'such' (not 'such that')."""


@rule("generate.provision.conditional_relative", "generate", "the condition a conditional question would answer with",
      "the condition only makes sense against something the question does not name: 'In the case of other types of "
      "belts' (other than the lap belts of the sentence before), 'Where the prerequisite is met', 'the latter', 'such': "
      "not asked")
def relative_condition(condition: str) -> bool:
    """True when the condition is relative to an unnamed referent ("other", "the latter", "the prerequisite")."""
    return bool(_RELATIVE_RE.search(condition))


_POINTER_DEFINITION_RE = re.compile(
    r"\b(?:means|is)\s+(?:a|an|the|any)\s+(?:[\w-]+\s+){0,3}?(?:(?:as\s+)?(?:defined|described|specified)\s+in|(?:which|that)\s+"
    r"conforms?\s+to(?:\s+the\s+specifications\s+of)?)\s+(?:Regulation\s+No\.|part\s+\d|subpart|Standard\s+No\.|"
    r"paragraphs?\s+\d|Annex\s+\d|S\d|49\s+CFR|ISO\s+\d)", re.IGNORECASE)


@rule("generate.definition.pointer_only", "generate", "a definition sentence ('X means ...')",
      "what the term means is only another document or paragraph: '\"Child restraint\" means a safety device as defined "
      "in Regulation No. 44.', 'Free motion headform means a test device which conforms to the specifications of part 572, "
      "subpart L': not asked (seen in UN R16 and FMVSS 201)")
def pointer_definition(sentence: str) -> bool:
    """True when the definition's content is a class noun and a reference to where it is defined."""
    found = _POINTER_DEFINITION_RE.search(sentence)
    return bool(found) and len(sentence[found.end():].split()) <= 12
