"""Whose value a value question asks for: the quantity noun and the subject a value belongs to.

A value question must name what the value is of: "What is the yaw angle of the vehicle according to ...?", "What rate
does paragraph S7.5 of FMVSS No. 216 specify for the test device?". The subject is the noun phrase that opens the
value's clause (``value_subject``), or the passive agent ("impacted ... by a barrier moving at 32 km/h"); a clause
with another noun phrase between its verb and the value leaves the owner unknown, and then, unless the quantity noun
itself is specific ("forward angle"), nothing is asked (``question_for``).
"""

from __future__ import annotations

import re

from tasks.qa.registry import rule

_NOUN_HEADS = (
    "speed|velocity|mass|angle|force|load|pressure|rate|inclination|accuracy|tolerance|precision|distance|height|length|"
    "width|diameter|temperature|time|duration|deflection|acceleration|weight|clearance|displacement|energy|offset|overlap|"
    "thickness|radius|depth|gap|torque|tension|level|spacing|stroke|intrusion|elongation|volume|voltage|resistance"
)
_NOUN_RE = re.compile(
    r"\b(?:an?|the|its)\s+(?P<noun>(?:(?!(?:has|have|is|are|was|were|with|of|in|on|at|to|and|or)\s)[a-z][a-z\-]+\s){0,3}?"
    rf"(?:{_NOUN_HEADS}))(?:\s+\([^)]{{0,40}}\)|,[^,;]{{0,40}},)?\s+(?:of|to|at|is|equal to)\s+(?:about\s+)?$"
)

_CLAUSE_START_RE = re.compile(
    r"(?:[.;:!?]\s|(?i:\bso that\b|\bverify that\b|\bensure that\b|\bwhere\b|\bwhen\b|\bif\b|\bsuch that\b)"
    r"|,\s(?:and|but|while)\s|,\s(?=(?:[\w\-]+\s){0,4}(?:shall|must|is|are|will)\b)|—|\u2014)")
_SUBJECT_VERBS = ("shall|must|is|are|was|were|will|may|should|can|has|have|moves?|travels?|impacts?|strikes?|reaches?|"
                  "exceeds?|remains?|weighs?|measures?|applies|applied|positioned|placed|located|mounted|set|loaded|"
                  "rotated|tilted|raised|lowered|inclined|moved|propelled|accelerated|held|caps")
_NP_STOP = (r"of|in|on|at|to|by|for|with|and|or|from|which|that|not|be|relative|when|during|as|than|under|without|"
            r"between|along|while|if|so|specified|described|shown|defined|given|listed|used|made|equipped|attached|required|"
            r"do|does|did|could|would|might|"
            rf"inflated|{_SUBJECT_VERBS}")
_INITIAL_SUBJECT_RE = re.compile(
    rf"\s*(?:\d{{1,2}}[.)]\s+|\([a-z0-9]{{1,3}}\)\s+)?(?P<det>[Tt]he|[Ee]ach|[Aa]ny|[Aa]ll|[Tt]his)\s+"
    rf"(?P<np>(?:(?!(?:{_NP_STOP})\b)[A-Za-z0-9][\w\-/’']*\s+){{0,4}}(?!(?:{_NP_STOP})\b)[A-Za-z][\w\-’']*)"
    rf"(?:\s+of\s+(?:the\s+|each\s+)?(?P<of>(?:(?!(?:{_NP_STOP})\b)[A-Za-z][\w\-’']*\s+){{0,2}}"
    rf"(?!(?:{_NP_STOP})\b)[A-Za-z][\w\-’']*))?(?=[\s,])(?=.*\b(?:{_SUBJECT_VERBS})\b)", re.DOTALL)
"""A clause that opens with its subject (a determiner and up to five words, "of the" and up to three more) and has a
verb after it."""
_BARE_SUBJECT_RE = re.compile(
    r"\s*(?P<np>[A-Z][\w\-]*(?:\s+(?!(?:shall|must|is|are|was|were|will|may|should|of|in|on|at|to|by|for|with|and|or)\b)"
    r"[a-z][\w\-]*){0,4})\s+(?=(?:shall|must|is|are|was|were|will|may|should)\b)")
"""A clause that opens with a subject without determiner ("Offset barrier crash tests are ...", "Tyres shall be ...")."""
_DETERMINERS = frozenset("the each any all this".split())
_PRONOUNS = frozenset("one two three four five six seven eight ten several some many most both "
                      "it its they their them this that these those there he she we one which who".split())
_NOT_A_SUBJECT = frozenset("following value values figure table paragraph section annex standard regulation "
                           "requirements requirement procedure same above below other".split())


def value_subject(before: str) -> str:
    """The noun phrase a value belongs to: the subject of the clause that states it ("The impactor shall strike ... at
    24 km/h" -> "the impactor"; "the moving deformable barrier of the test vehicle travels at ..."), or ''.

    Only the clause of the value is read (it starts after the last sentence end, semicolon, colon, "so that",
    "when", "if"); the subject is a determiner ("the", "each", "any", "all", "this") and at most five words before a
    verb ("shall", "is", "moves", "positioned", ...). A figure, table, paragraph or "the following" is no subject."""
    starts = [m.end() for m in _CLAUSE_START_RE.finditer(before)]
    clause = before[starts[-1] if starts else 0:]
    found = _INITIAL_SUBJECT_RE.match(clause)  # the clause's own subject ("The yaw angle of the vehicle ... is"); a noun
    if not found:  # phrase further in ("... on which the lumbar spine attaches is 23 degrees") is no owner of the value
        bare = _BARE_SUBJECT_RE.match(clause)  # "Offset barrier crash tests are conducted at 64.4 km/h"
        words = bare.group("np").split() if bare else []
        if not bare or words[0].lower() in _NOT_A_SUBJECT | _PRONOUNS or len(words) < 2:
            return ""
        first = words[0] if words[0][1:2].isupper() else words[0].lower()  # "ISOFIX anchorages" keeps its capitals
        return _predicated(" ".join([first, *words[1:]]), clause[bare.end("np"):])
    words = found.group("np").lower().split()
    if len(words) > 1 and _VERB_AFTER_NP_RE.match(clause[found.end():]) and re.fullmatch(r"[a-z]+[^s]s", words[-1]):
        return _shortened(found, clause)  # "the lumbar spine attaches to ...": the last word is the verb
    if words[0] in _NOT_A_SUBJECT or words[-1] in _NOT_A_SUBJECT or any(w.isdigit() for w in words):
        return ""
    if subject_identifier(clause[found.end():]):
        return ""
    if re.match(r"\s+(?:and|or)\s", clause[found.end():]) and not found.group("of"):
        return ""  # "The front and rear track width of the trolley": the phrase is cut at its coordination
    if _PARTICIPLE_END_RE.search(found.group("np")):
        return ""  # "the maximum deflection calculated ...": the phrase runs into a participle, the owner is cut
    np = found.group("np") + (f" of the {found.group('of')}" if found.group("of") else "")
    if re.search(r"\w- \w", np):
        return ""  # a word broken at a line end ("the rear- ward edge"): not a name to ask by
    return _predicated(f"{found.group('det').lower()} {np}", clause[found.end():])


_IDENTIFIER_AFTER_RE = re.compile(r"\s+(?:\d+[a-z]?|[A-Z]\d*)(?:\s*(?:,|and|or|to|-|–)\s*(?:\d+[a-z]?|[A-Z]\d*))*(?=[\s,.;)]|$)")


@rule("generate.value.subject_identifier", "generate", "the words right after a value's subject",
      "the subject's noun goes on with its number or letter ('the dissipated energy against block 2', 'blocks 5 and 6', "
      "'point P'): the subject phrase stops before that identifier, so a question on it ('... for the dissipated energy "
      "against block?') cannot say which one; not asked")
def subject_identifier(after: str) -> bool:
    """True when the text after the subject phrase starts with the identifier of its last noun ("2", "5 and 6", "P")."""
    return bool(_IDENTIFIER_AFTER_RE.match(after))


_PARTICIPLE_END_RE = re.compile(r"\s(?!(?:speed|sled|bed|feed|need|seed|shed|red|bled)\b)[a-z]{3,}ed$")
"""A noun phrase whose last word is a participle ("the deflection calculated"): the phrase is cut before its noun ends."""
_VERB_AFTER_NP_RE = re.compile(r"\s+(?:to|the|a|an|at|on|in|with|into|onto|from|by|its|their)\b")


def _shortened(found: re.Match, clause: str) -> str:
    """The subject without its last word, which was the verb ("the lumbar spine attaches to" -> "the lumbar spine")."""
    np = found.group("np").rsplit(None, 1)[0]
    end = found.start("np") + len(np)
    return _predicated(f"{found.group('det').lower()} {np}", clause[end:].split(None, 1)[-1])


_VERB_RE = re.compile(rf"\b(?:{_SUBJECT_VERBS})\b")
_DETERMINER_RE = re.compile(r"\b(?:the|a|an|any|each|its|their|either)\s+[a-z]", re.IGNORECASE)
_AGENT_RE = re.compile(r"\bby\s+(?:a|an|the)\s+")
_PARTICIPLES = frozenset("moving traveling travelling specified described shown defined given listed used made located "
                         "mounted equipped attached inflated positioned placed which that with at to in on of from".split())


_OWN_NOUN_RE = re.compile(rf"\b(?:a|an|the)\s+(?:[a-z\-]+\s+){{0,2}}(?:{_NOUN_HEADS})\s+(?:of|between|from|to|at|equal to)?\s*$")
"""The value's own noun phrase at the end of its clause ("set at a level between"): no other noun phrase."""


def _agent(text: str) -> str:
    """The noun phrase after "by a/the" ("by a moving deformable barrier 80 km/h" -> "moving deformable barrier")."""
    words = []
    for n, token in enumerate(text.split()):
        word = token.rstrip(",;")
        if not re.fullmatch(r"[A-Za-z][\w\-]*", word) or n and word.lower() in _PARTICIPLES or len(words) == 5:
            break
        words.append(word)
        if word != token:
            break
    return " ".join(words)


def _predicated(subject: str, rest: str) -> str:
    """The subject when the clause states the value of it: nothing but the quantity's own noun phrase stands between
    its verb and the value. A passive agent ("the vehicle is impacted ... by a barrier moving at 32 km/h") owns the
    value instead; another noun phrase in between ("each vehicle shall have means that prevent any hose ... with a
    length of") leaves the owner unknown: ''."""
    noun = _NOUN_RE.search(rest) or _OWN_NOUN_RE.search(rest)
    rest = rest[:noun.start()] if noun else rest
    verb = _VERB_RE.search(rest)
    after = rest[verb.end():] if verb else rest
    agent = _AGENT_RE.search(after)
    if agent:
        name = _agent(after[agent.end():])
        tail = after[agent.end():].split(name, 1)[-1] if name else after
        return f"the {name}" if name and not _DETERMINER_RE.search(tail) else ""
    return "" if _DETERMINER_RE.search(after) else subject


_GENERIC_NOUNS = frozenset("speed velocity mass angle force load pressure rate time duration distance level length height "
                           "width weight energy tolerance accuracy offset".split())


_HEAD_KINDS = {
    **dict.fromkeys("angle inclination".split(), "angle"), **dict.fromkeys("speed velocity".split(), "speed|rate"),
    **dict.fromkeys("mass weight".split(), "mass|force"), **dict.fromkeys("force load tension".split(), "force|mass"),
    "pressure": "pressure", **dict.fromkeys("time duration".split(), "time"), "temperature": "temperature",
    "acceleration": "acceleration", "rate": "rate|speed", "energy": "energy", "voltage": "voltage", "torque": "moment",
    "volume": "volume",
    **dict.fromkeys("distance height length width diameter deflection displacement clearance offset overlap thickness "
                    "radius depth gap spacing stroke intrusion elongation".split(), "distance"),
}
"""The unit kind a quantity noun is measured in: "the load ... 126.9 mm" is no load (unlisted nouns take any kind)."""
_QUANTITY_HEAD_RE = re.compile(rf"\b(?:{_NOUN_HEADS}|ratio|percentage|share|frequency|number|count)s?$")


_VAGUE_SUBJECTS = frozenset("vehicle test sample samples data event events system device value values result results procedure "
                            "measurement measurements specimen specimens it one".split())
"""Subjects too vague to say what a value is of ("What time does 2.3 specify for the vehicle?")."""


def question_for(noun: str, kind: str, reference: str, subject: str) -> str:
    """The value question; '' when the value's owner is not named.

    A subject that is itself a quantity of two words or more ("the yaw angle of the vehicle") is asked for ("What is the
    yaw angle of the vehicle according to ...?"); another subject is what the quantity is specified for ("What rate does
    S7.5 specify for the test device?"); a quantity noun that carries its owner ("percentage of the fuel tank's usable
    capacity") stands alone. A bare quantity ("What angle ...", "What edge radius ...", "What maximum length ...") is
    not asked: what it is of is not said."""
    quantity = noun or {"share": "percentage", "moment": "moment", "distance": "distance"}.get(kind, kind)
    head = subject.split(" of ")[0]
    if subject and _QUANTITY_HEAD_RE.search(head):
        said = _HEAD_KINDS.get(head.split()[-1].lower().rstrip("s"), kind)
        named = len([w for w in subject.split() if w.lower() not in _DETERMINERS]) >= 2  # "the roll angle", not "the force"
        the = "" if subject.split()[0].lower() in _DETERMINERS else "the "  # "Impact speed shall be ..." -> "the impact speed"
        return f"What is {the}{subject} according to {reference}?" if named and kind in said.split("|") else ""
    if not unit_agrees(quantity, kind):
        return ""
    own = [w for w in subject.split() if w.lower() not in _DETERMINERS]
    vague = not own or len(own) == 1 and own[-1].lower() in _VAGUE_SUBJECTS  # "the vehicle"
    if not vague and subject.split()[-1].lower() not in quantity.lower().split():
        return f"What {quantity} does {reference} specify for {subject}?"
    if " of " in noun and not subject:
        return f"What {quantity} does {reference} specify?"
    return ""



_SHARE_NOUNS = frozenset("overlap offset elongation efficiency".split())


@rule("generate.value.unit_agrees", "generate", "the quantity noun of a value question and the value's unit",
      "the noun's kind (mass, angle, distance, ...) must be the unit's kind: 'What mass ... specify for the fuel tank?' -> "
      "'90 per cent' (a share of the mass) is not asked")
def unit_agrees(noun: str, kind: str) -> bool:
    """True when the quantity noun can be measured in the value's unit class (a noun of no known kind agrees with any)."""
    words = noun.lower().split()
    if not words or words[0] in ("percentage", "share", "ratio") or kind == "share" and "percentage" in words:
        return kind == "share" or not words
    if kind == "share" and words[-1] in _SHARE_NOUNS:
        return True  # "a 70 percent overlap", "elongation of 12 per cent"
    said = _HEAD_KINDS.get(words[-1].rstrip("s") if words[-1] not in _HEAD_KINDS else words[-1])
    return said is None or kind in said.split("|")
