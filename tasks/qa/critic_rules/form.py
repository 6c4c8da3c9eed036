"""The template critic's well_formed rules."""


from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tasks.qa.critic_rules.grounded import (
    _DANGLING,
    _FILE_RE,
    _KO_QUESTION_END_RE,
    _KO_TABLE_KEY_RE,
    _QUOTED_RE,
    _TABLE_KEY_RE,
    _WHAT_IS_RE,
    Signal,
    _has_hangul,
    _quoted,
    _without_files,
    _words,
    garbage_tokens,
)

if TYPE_CHECKING:
    from tasks.qa.pair_context import PairContext


# --- well_formed ---------------------------------------------------------------------------------

_SENTENCE_STARTS = frozenset(
    "The A An This That These Those It They There Here Both All Some Any Most One Each We You He She Our Its Their If When "
    "Since Because Although Though Despite Thus Also But However In As While Whatever Whenever So Then For How Why Where "
    "What Which Who Such Many Several Only Even Therefore Hence Moreover Furthermore Unlike".split()
)
_DEICTIC_STARTS = frozenset("This That These Those It They There Here Both All We You He She Its Their Our Such".split())
_FRAGMENT_STARTS = frozenset(
    "If When Since Because Although Though Despite Thus Also But However In As While Whatever Whenever So Then For How "
    "Why Where What Which Who Even Therefore Hence Moreover Furthermore Unlike".split()
)
_FINITE_RE = re.compile(
    r"\b(?:is|are|was|were|can|could|must|should|would|will|may|might|does|do|did|has|have|had)\b"
    r"|\b[a-z]{3,}s\s+(?:on|upon)\s+(?:how|whether|what|which)\b"
)
_RELATIVE_RE = re.compile(r"\b(?:that|which|who|whom|whose)\b", re.IGNORECASE)
_KO_ARTEFACT_RE = re.compile(
    r"은\(는\)|는\(은\)|이\(가\)|가\(이\)|을\(를\)|를\(을\)|와\(과\)|과\(와\)|"
    r"\(으\)로|으로\(로\)|\(이\)"
)
_REPEAT_RE = re.compile(r"\b([^\W\d_]{2,})\s+\1\b", re.IGNORECASE)
_REPEAT_PAIR_RE = re.compile(r"\b([^\W\d_]+\s+[^\W\d_]+)\s+\1\b", re.IGNORECASE)
_PREPOSITIONS = frozenset("of in on for with by from at to under over above below between during per via that which".split())
_SINGULAR_S = frozenset(
    "series species news means lens chassis canvas atlas alias bias thermos corpus status basis analysis".split()
)
_DEFINING = frozenset("a an the one any another some something defined called known termed referred what how".split())
_ONE_OF_RE = re.compile(
    r"\bone of the (?:\w+\s+){0,2}(?:steps|items|points|things|examples|phrases|texts|lines|reasons|options|entries|words)\b"
    r"|중 하나는", re.IGNORECASE,
)
_BULLET_GLYPH_RE = re.compile(r"[\x00-\x1f\x7f\ufffd•▪●◦‣➢➤►▸■□]|\bthe\s+[–—-]\s", re.IGNORECASE)




def _subject_core(subject: str) -> str:
    """The subject without its quoted titles, file names and a leading lower-case article."""
    core = _QUOTED_RE.sub(" TITLE ", _FILE_RE.sub(" ", subject))
    core = re.sub(r"\s+(?:in|of|according to)\s*,?\s*$", "", " ".join(core.split()))
    return re.sub(r"^(?:the|a|an)\s+", "", core)


def _has_finite_verb(words: list[str]) -> bool:
    """A finite verb after the first word, not inside a relative clause ("the value that was recorded" is fine,
    "Institutions must ensure that ..." is a sentence), or a clause after a preposition ("for why", "on how")."""
    rest = " ".join(words[1:])
    verb, relative = _FINITE_RE.search(rest), _RELATIVE_RE.search(rest)
    clause = re.search(r"\b(?:for|on|of|about)\s+(?:why|how|whether)\b", rest, re.IGNORECASE)
    return bool(clause) or bool(verb and not (relative and relative.start() < verb.start()))


def _is_plural(word: str) -> bool:
    lower = word.casefold()
    return (word.isalpha() and len(word) >= 4 and not word.isupper() and lower.endswith("s")
            and not lower.endswith(("ss", "us", "is", "ics", "ous", "xis")) and lower not in _SINGULAR_S)


def _head_phrase(core: str) -> str:
    """The subject up to its first preposition or relative pronoun: "peak chest deflection" of "... in the test"."""
    head: list[str] = []
    for word in core.split():
        if word.casefold() in _PREPOSITIONS:
            break
        head.append(word)
    return " ".join(head)


def _head_noun(core: str) -> str:
    words = _head_phrase(core).split()
    return words[-1] if words else ""


def _subject_signals(ctx: PairContext, verb: str, subject: str) -> list[Signal]:
    """Template artefacts in the subject of "what is X?": sentence starts, fragments, agreement."""
    core = _subject_core(subject)
    words = core.split()
    if not words:
        return []
    out: list[Signal] = []
    first = words[0].strip("\"'“”")
    if first in _SENTENCE_STARTS:
        out.append(Signal("well_formed", 1, f"template artefact: a sentence start pasted after 'what {verb}' ('{first} ...')"))
        if first in _DEICTIC_STARTS and len(words) <= 2:
            out.append(Signal("standalone", 1, f"deictic subject '{core}': what it refers to is only in the chunk"))
    key_template = len(words) >= 2 and words[-1].casefold() in ("is", "are")  # "what is the Refactoring is?"
    fragment = first in _FRAGMENT_STARTS or words[-1].casefold() in _DANGLING or _has_finite_verb(words)
    if key_template:
        out.append(Signal("well_formed", 1, f"template artefact: a 'Key is:' label pasted as the subject ('{core[:60]}')"))
    elif fragment:
        out += [Signal("well_formed", 1, f"the subject is a sentence fragment ('{core[:60]}')"),
                Signal("standalone", 1, "the subject is a sentence fragment")]
    answer = ctx.answer.strip().casefold()
    says_are = answer.startswith((core.casefold() + " are ", core.casefold() + " were "))
    says_is = answer.startswith((core.casefold() + " is ", core.casefold() + " was "))
    plural = says_are or (_is_plural(_head_noun(core)) and not says_is)
    if verb.casefold() in ("is", "was") and not fragment and plural and not re.search(r"https?|www", core):
        out.append(Signal("well_formed", 2, f"agreement error: 'what {verb}' with the plural '{core[:50]}'"))
    head_words = len(_head_phrase(core).split())
    if head_words > 8:
        out.append(Signal("well_formed", 2, f"the subject runs to {head_words} words (merged cells or pasted text)"))
    if re.search(r"\bhttps?\b|\bwww\b", core, re.IGNORECASE):
        out += [Signal("well_formed", 1, "a URL fragment pasted into the question"),
                Signal("grounded", 2, "a web address split at ':' into a key and a value"),
                Signal("standalone", 2, "the subject is a fragment of a web address")]
    elif re.fullmatch(r"(?:figure|fig\.|table|chart|slide|page|exhibit)\s*[\d.]+", core, re.IGNORECASE):
        out += [Signal("well_formed", 2, f"asks what the label '{core}' is"),
                Signal("useful", 2, f"asks for the caption of '{core}'")]
    elif not re.search(
        r"[^\W\d_]{2,}", re.sub(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)\b\.?", "", core, flags=re.I)
    ):
        out += [Signal("well_formed", 2, f"the key '{core}' is a date or a number, not a named quantity"),
                Signal("grounded", 2, "a time stamp or number split at ':' into a key and a value"),
                Signal("standalone", 2, "a bare date or number is no subject a user could ask about"),
                Signal("useful", 2, "the key is a date or a number")]
    out += _definition_signals(ctx, core)
    return out


def _definition_signals(ctx: PairContext, core: str) -> list[Signal]:
    """"what is X?" answered by "X is/are <not a definition>" (X is used ..., X is fixed ...)."""
    answer = ctx.answer.strip()
    match = re.match(rf"{re.escape(core)}\s+(?:is|are)\s+(?P<next>[^\W_]+)", answer, re.IGNORECASE)
    if not match or match.group("next").casefold() in _DEFINING:
        return []
    if match.group("next").casefold() == "not":
        return [Signal("well_formed", 2, f"the answer says what '{core}' is not, not what it is")]
    return [Signal("well_formed", 2, f"the answer says something about '{core}' ('{answer[:50]} ...'), not what it is")]


def _korean_form_signals(question: str) -> list[Signal]:
    out = []
    if _KO_ARTEFACT_RE.search(question):
        out.append(Signal("well_formed", 1, "template artefact: an unresolved Korean particle ('은(는)')"))
    singles = [t for t in question.split() if len(t) == 1 and _has_hangul(t)]
    if len(singles) >= 3:
        out.append(Signal("well_formed", 2, f"spaced-out syllables from the page layout ('{' '.join(singles[:4])}')"))
    key = _KO_KEY_RE.search(question)
    if key and len(singles) < 3:
        parts = key.group("key").split()
        if 2 <= len(parts) <= 3 and any(len(p) == 1 and _has_hangul(p) and p not in _KO_ONE_SYLLABLE_WORDS for p in parts):
            out.append(Signal("well_formed", 2, f"a header split by spaces ('{key.group('key')}')"))
    return out


_KO_KEY_RE = re.compile(r"의 (?P<key>[가-힣]+(?: [가-힣]+){1,2}?)(?: 값)?(?:은|는|이|가)? (?:무엇|얼마|몇)")
_KO_ONE_SYLLABLE_WORDS = frozenset("및 등 중 값 수 것 때 총 각 안 더 약 전 후 내 외 간 별 당 즉 또".split())


def _table_key_signals(question: str) -> list[Signal]:
    match = _TABLE_KEY_RE.search(question) or _KO_TABLE_KEY_RE.search(question)
    if not match:
        return []
    column, row = (_QUOTED_RE.sub(" TITLE ", match.group(g)) for g in ("column", "row"))
    out = []
    if len(column.split()) >= 5:
        out += [Signal("grounded", 2, f"a merged-header table cell: the column is '{column[:60]}'"),
                Signal("well_formed", 2, "the column name is several header cells run together")]
    if len(row.split()) >= 10:
        out.append(Signal("well_formed", 2, "the row label is a whole sentence"))
    return out


_QUANTITY_RE = re.compile(
    r"\bwhat\b[^?]{1,80}?\b(?:was|were|is|are)\s+(?:measured|recorded)\b|\bhow (?:much|many|long|far|fast|high|heavy)\b"
    r"|\bat what (?:time|speed)\b|\bby how much\b|얼마|몇\s?(?:명|개|건|회|%)",
    re.IGNORECASE,
)


_DEFINITION_Q_RE = re.compile(r"\bwhat\s+(?:does|do)\s+[\"“'][^\"”']+[\"”']\s+mean\?|\bwhat\s+is\s+meant\s+by\s+[\"“']",
                              re.IGNORECASE)
"""A definition question that quotes its term (the provision definition rule's form)."""


def _echo_signals(ctx: PairContext) -> list[Signal]:
    """A question that quotes the opening words of its own answer ("what explains the statement beginning ...")."""
    answer = _words(ctx.answer)
    if _DEFINITION_Q_RE.search(ctx.question):
        return []  # 'what does "REESS" mean?' -> '"REESS" means ...': the quoted term is what is asked, not a fragment
    for quoted in _quoted(ctx.question):
        opening = _words(quoted)
        if len(opening) >= 4 and answer[: len(opening)] == opening:
            return [Signal("well_formed", 2, "the answer only restates the statement whose opening words the question quotes"),
                    Signal("standalone", 2, "the only handle is a quoted sentence fragment of the answer")]
    return []


_DOUBLE_VERB_RE = re.compile(
    r"^\W*(?:why|how|when|where|what)\s+(?:does|do|did)\b(?:(?!\b(?:that|which|who|whose|whom|where|when)\b)[^?])*?"
    r"\b(?:are|is|was|were)\b",
    re.IGNORECASE,
)
_DOES_PLURAL_RE = re.compile(r"\b(?:does|is|was|has)\s+(?:many|several|these|those|both|all)\b", re.IGNORECASE)
_DOC_ATTRIBUTE_RE = re.compile(
    r"\bwhat (?:is|are|was|were) the (?P<attribute>[^\"“?]{2,60}?) of the [\"“][^\"”]+[\"”]\s+"
    r"(?:document|presentation|report|deck|book|textbook|paper|manual|guide)\b",
    re.IGNORECASE,
)
DOCUMENT_ATTRIBUTES = frozenset(
    """purpose objective objectives goal goals aim scope title author authors date version summary conclusion conclusions
    result results recommendation recommendations topic subject audience status abstract focus approach method methodology
    outcome outcomes finding findings decision decisions owner deadline agenda location venue publisher edition""".split()
)
_PERSON_ROLE_RE = re.compile(
    r"\b(?:manager|architect|engineer|leader|lead|director|professor|researcher|scientist|specialist|consultant|developer|"
    r"analyst|officer|president|student|author|chair|head of)\b",
    re.IGNORECASE,
)


def _grammar_signals(ctx: PairContext) -> list[Signal]:
    """English grammar slips of templated questions: two finite verbs, "does many", a document's odd attribute,
    a mis-cased name, "what is" about a person."""
    question, out = ctx.question, []
    plain = _QUOTED_RE.sub(" TITLE ", question)
    if _DOUBLE_VERB_RE.search(plain) or _DOES_PLURAL_RE.search(plain):
        out.append(Signal("well_formed", 2, "ungrammatical question (agreement or a second finite verb)"))
    attribute = _DOC_ATTRIBUTE_RE.search(question)
    if attribute and _head_noun(attribute.group("attribute")).casefold() not in DOCUMENT_ATTRIBUTES:
        name = attribute.group("attribute")
        if not set(_words(name)) & set(_words(ctx.answer)):
            out.append(Signal(
                "well_formed", 2, f"asks for 'the {name}' of a document: a label turned into a question that makes no sense"
            ))
    for token in re.findall(r"\b[a-z]+[A-Z]\w*", _QUOTED_RE.sub(" ", question)):
        if token[:1].upper() + token[1:] in ctx.chunk_markdown:
            out.append(Signal("well_formed", 2, f"a mis-cased name ('{token}')"))
            break
    person = re.match(r"(?P<name>(?:[A-Z][a-z]+\s){1,3}[A-Z][a-z]+)\s+is\s+(?:an?|the)\s", ctx.answer.strip())
    if (
        person
        and re.search(rf"\bwhat is {re.escape(person.group('name'))}\b", question, re.IGNORECASE)
        and _PERSON_ROLE_RE.search(ctx.answer)
    ):
        out += [Signal("well_formed", 2, f"asks 'what is' about a person ({person.group('name')})"),
                Signal("useful", 2, "a contributor's biography, not a fact of the document's subject")]
    return out


def well_formed_signals(ctx: PairContext) -> list[Signal]:
    """Is it a grammatical, real question with a complete, sensible answer?"""
    question = ctx.question.strip()
    out: list[Signal] = []
    if ctx.language == "ko" or _has_hangul(question):
        if not _KO_QUESTION_END_RE.search(question):
            out.append(Signal("well_formed", 2, "does not end as a question"))
        out += _korean_form_signals(question)
    elif not question.endswith(("?", "？")):
        out.append(Signal("well_formed", 2, "does not end with a question mark"))
    repeat = _REPEAT_RE.search(_QUOTED_RE.sub(" ", question))
    if repeat:
        out.append(Signal("well_formed", 1, f"template artefact: repeated word ('{repeat.group(0)}')"))
    elif _REPEAT_PAIR_RE.search(question):
        out.append(Signal("well_formed", 2, f"repeated phrase ('{_REPEAT_PAIR_RE.search(question).group(0)}')"))
    if _BULLET_GLYPH_RE.search(question) or garbage_tokens(_QUOTED_RE.sub(" ", _without_files(question, ctx.file_name))):
        out.append(Signal("well_formed", 2, "bullet glyphs, control characters or layout debris in the question"))
    out += _table_key_signals(question)
    match = _WHAT_IS_RE.search(question)
    if match and ctx.language != "ko":
        out += _subject_signals(ctx, match.group("verb"), match.group("subject"))
    if ctx.language != "ko":
        out += _grammar_signals(ctx)
    out += _echo_signals(ctx)
    if _QUANTITY_RE.search(question) and not re.search(r"\d", ctx.answer):
        out.append(Signal("well_formed", 2, "asks for a measured quantity, but the answer has no number"))
    if _ONE_OF_RE.search(question):
        out.append(Signal("useful", 2, "asks for an arbitrary one of several items: any of them would be right"))
    return out


