"""Limits stated as criteria of a numbered paragraph: "(a) Rib Deflection Criterion (RDC) less than or equal to 42 mm;".

Regulations and protocols list their pass/fail limits as short items under a lead-in ("The thorax performance criteria
shall be:") or as one-clause paragraphs ("5.2.1.1. The head performance criterion (HPC) shall be less than or equal to
1,000; ..."). Neither is a sentence the requirement or value rules can ask: the item has no verb, the value may have no
unit. ``generate.provision.criterion_limit`` asks for the bound of such a criterion, naming the criterion (the unit's own
opening words), the paragraph or item and the document; the answer is the bound with its comparator and value, as the
document writes it ("less than or equal to 42 mm"). It does not fire when the criterion has no name of its own, when the
comparator or the value is missing, or when the requirement rule already asks the unit's sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ragprep.text import verbatim_span
from tasks.qa.registry import rule
from tasks.qa.rules.provisions import (
    _reference,
    _requirement_sentence,
    administrative,
    garbled,
    provision_units,
)
from tasks.qa.rules.text import Candidate, ChunkView, doc_phrase

_COMPARATOR = (r"(?:(?:less|lower|more|greater|higher) than(?: or equal to)?|(?:less|lower|greater|higher) or equal to|"
               r"not (?:more|less|greater|lower) than|(?:shall )?not exceed(?:ing)?|at (?:least|most)|"
               r"(?:a )?(?:maximum|minimum) of|≤|≥|<|>|=<|>=)")
_CRITERION_RE = re.compile(
    r"^(?:The\s+)?(?P<name>[A-Za-z][\w\-*/ ]{2,60}?(?:\s\([A-Z][\w*/ .\-]{0,14}\))?)\s+"
    r"(?:(?:shall|must)\s+(?:be\s+)?|is\s+|of\s+)?(?P<bound>" + _COMPARATOR + r")\s*"
    r"(?P<value>\d[\d,]*(?:\.\d+)?(?:\s?(?:%|per\s?cent|mm|cm|m|m/s(?:ec)?|km/h|kN|N|daN|g|ms|s|kg|°|deg|Nm|bar|kPa|MPa))?)"
    r"(?=\s*(?:[;.,:]|$|\s(?:for|in|at|when|internal|and)\b))")
_FUNCTION_WORDS = frozenset("for where when if in on at with by and or to from which that whose than as".split())
_NOT_A_NAME = frozenset("it this that these those they there value values result results following requirements "
                        "requirement test tests vehicle vehicles".split())


def _criterion(text: str) -> re.Match | None:
    """The criterion, its comparator and its value at the start of a unit's text, or None."""
    found = _CRITERION_RE.match(text.strip())
    if not found:
        return None
    words = found.group("name").lower().split()
    if not words or words[0] in _NOT_A_NAME | _FUNCTION_WORDS or len(words[0]) < 2 or len(words) > 8:
        return None
    if words[-1] in ("shall", "must", "be", "is", "are") or _FUNCTION_WORDS & set(words[1:]) - {"of"}:
        return None  # "for vehicles with a wheelbase", "p and": a clause, not the criterion's name
    return found


@rule("generate.provision.criterion_limit", "generate", "a numbered paragraph or item that states a named criterion and "
      "its bound ('(a) Rib Deflection Criterion (RDC) less than or equal to 42 mm;', 'The head performance criterion (HPC) "
      "shall be less than or equal to 1,000;')", "numeric")
def criterion_limit_candidates(view: ChunkView) -> Iterator[Candidate]:
    """'What limit does paragraph 5.2.1.2(a) (Performance criteria) of UN Regulation No. 95 set for the Rib Deflection
    Criterion (RDC)?' -> 'less than or equal to 42 mm'."""
    if view.language != "en" or not doc_phrase(view):
        return
    for unit in provision_units(view):
        found = _criterion(unit.text)
        if not found or administrative(view, unit) or _requirement_sentence(view, unit):
            continue  # no named bound, or the requirement rule asks the unit's sentence already
        name = found.group("name").strip()
        answer = verbatim_span(f"{found.group('bound')} {found.group('value')}".strip(), view.markdown)
        if answer and not garbled(answer):
            words = name.split()
            titled = len(words) > 1 and all(w[:1].isupper() for w in words[:2])  # "Rib Deflection Criterion (RDC)"
            acronym = bool(re.match(r"[A-Z0-9]{2,}\b", words[0]))  # "HIC", "HIC15"
            name = name if titled or acronym else name[:1].lower() + name[1:]
            yield Candidate(f"What limit does {_reference(view, unit)} set for the {name}?", answer, "numeric", "text")


CRITERIA_SOURCES = (criterion_limit_candidates,)
"""Asked first of a regulation's or protocol's chunk: its pass/fail limits."""
