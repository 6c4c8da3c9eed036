"""Checks the provision rules apply before they ask: a value's lost bound or other owner, a requirement that only points.

Regulations state a value's bound with a glyph the PDF font may drop ("elongation ≥ 12 per cent" read as
"elongation  12 per cent"), put values before the noun they measure ("a 1 - 2 g holding force"), and write requirements
that say nothing but where the requirement is ("shall be tested as prescribed in paragraph 7.5.1."). A question built
on any of them names the wrong owner, drops the bound or answers with a cross-reference, so none is asked.
"""

from __future__ import annotations

import re

from tasks.qa.registry import rule
from tasks.qa.rules.subjects import _NOUN_HEADS

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
