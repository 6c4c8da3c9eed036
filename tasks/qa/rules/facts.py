"""Generator rules over prose: key-value facts, measurements and changes, definitions, causes, procedures."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ragprep.markdown import KEY_VALUE_RE, parse_number
from tasks.qa.registry import rule
from tasks.qa.rules.pointers import pointer_definition
from tasks.qa.rules.protocols import glossary_line
from tasks.qa.rules.text import (
    _ARTICLES,
    _BULLET_RE,
    _TERMINAL_RE,
    Candidate,
    ChunkView,
    _capitalise,
    _lower_first,
    doc_phrase,
    has_final_consonant,
    josa,
    sentences,
    text_lines,
    where,
)

# --- key-value facts -------------------------------------------------------------------

KEY_FRAMES_EN: dict[str, str] = {
    "date": "On what date was {doc} held?",
    "meeting date": "On what date was {doc} held?",
    "test date": "On what date was {doc} run?",
    "time": "At what time was {doc} held?",
    "location": "Where was {doc} held?",
    "place": "Where was {doc} held?",
    "venue": "Where was {doc} held?",
    "site": "At which site was {doc} run?",
    "attendees": "Who attended {doc}?",
    "participants": "Who took part in {doc}?",
    "chair": "Who chaired {doc}?",
    "organizer": "Who organised {doc}?",
    "decision": "What was decided in {doc}?",
    "decisions": "What was decided in {doc}?",
    "owner": "Who is the owner named in {doc}?",
    "due": "What is the due date given in {doc}?",
    "due date": "What is the due date given in {doc}?",
    "deadline": "What is the deadline given in {doc}?",
    "next meeting": "When is the next meeting after {doc}?",
    "dummy": "Which dummy was used in {doc}?",
    "dummies": "Which dummies were used in {doc}?",
    "barrier": "What barrier was used in {doc}?",
    "restraints": "Which restraints were fitted in {doc}?",
    "restraint": "Which restraint was fitted in {doc}?",
    "seat": "Which seat was tested in {doc}?",
    "vehicle": "Which vehicle was tested in {doc}?",
    "speed": "What was the speed in {doc}?",
    "impact speed": "What was the impact speed in {doc}?",
    "test speed": "What was the test speed in {doc}?",
    "region": "For which region was {doc} run?",
    "purpose": "What was the purpose of {doc}?",
    "objective": "What was the objective of {doc}?",
    "result": "What was the result of {doc}?",
    "conclusion": "What was the conclusion of {doc}?",
    "department": "Which department held {doc}?",
}
"""Question frames per (lower-cased) key; other keys get the generic, plural-aware frame."""

KEY_FRAMES_KO: dict[str, str] = {
    "일시": "{doc_josa_topic} 언제 열렸나요?",
    "날짜": "{doc_josa_topic} 언제 열렸나요?",
    "장소": "{doc_josa_topic} 어디에서 열렸나요?",
    "참석자": "{doc}에 참석한 사람은 누구인가요?",
    "참석": "{doc}에 참석한 사람은 누구인가요?",
    "부서": "{doc_josa_object} 주관한 부서는 어디인가요?",
    "다음 회의": "{doc} 이후 다음 회의는 언제인가요?",
    "결정": "{doc}에서 무엇이 결정되었나요?",
    "결정 사항": "{doc}에서 무엇이 결정되었나요?",
    "목적": "{doc}의 목적은 무엇인가요?",
}

SKIPPED_KEYS = {"test name", "stage", "source", "sources", "note", "notes", "page", "slide", "figure", "table",
                "시험명", "단계", "자료", "출처", "비고", "주"}
"""Keys that name the handle itself or are trivia (citations, figure numbers, footnotes)."""

_KEY_RE = re.compile(r"^[A-Za-z가-힣][A-Za-z가-힣 /&'\-]{0,38}[A-Za-z가-힣]$|^[A-Za-z가-힣]$")
_KEY_STOPWORDS = {"is", "are", "was", "were", "the", "this", "that", "what", "how", "why", "use", "case", "step", "note", "here"}


def _clean_key(raw: str) -> str | None:
    key = re.sub(r"^[\W_]+", "", raw).strip()
    if not _KEY_RE.match(key) or len(key.split()) > 4:
        return None
    if key.lower() in SKIPPED_KEYS or any(w.lower() in _KEY_STOPWORDS for w in key.split()):
        return None
    return key


def _plural(noun: str) -> bool:
    last = noun.split()[-1].lower()
    return last.endswith("s") and not last.endswith(("ss", "us", "is", "ics"))


def key_value_question(key: str, doc: str, language: str, generic: bool = True) -> str | None:
    """A natural question for a ``Key: value`` fact of ``doc``: a frame for common keys, else (when ``generic``)
    a grammatical "What is the <key> of <doc>?" with the key lower-cased and the verb agreeing with it."""
    if language == "ko":
        frame = KEY_FRAMES_KO.get(key)
        if frame:
            return frame.format(doc=doc, doc_josa_topic=josa(doc, "은/는"), doc_josa_object=josa(doc, "을/를"))
        return f"{doc}의 {josa(key, '은/는')} 무엇인가요?" if generic else None
    frame = KEY_FRAMES_EN.get(key.lower())
    if frame:
        return _capitalise(frame.format(doc=doc))
    if not generic:
        return None
    noun = key if key.isupper() and len(key) <= 6 else key[:1].lower() + key[1:]
    verb = "are" if _plural(noun) else "is"
    return f"What {verb} the {noun} of {doc}?"


_KEY_PRIORITY = ("purpose", "objective", "decision", "decisions", "result", "conclusion", "목적", "결정", "결정 사항")
"""Keys whose facts are asked first: what a test was for and what a meeting decided."""


def _key_value_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc = doc_phrase(view) or where(view)
    if not doc or view.handle.kind == "standard":
        return  # a regulation's "Key: value" lines are form fields and spec cells, not facts "of" the regulation
    found: list[tuple[int, Candidate]] = []
    for line in text_lines(view.markdown):
        match = KEY_VALUE_RE.match(line)
        if not match:
            continue
        key, value = _clean_key(match.group("key")), match.group("value").strip()
        if not key or len(value) < 2 or value.startswith("//") or _handle_echo(value, view) or _clause_value(value):
            continue
        question = key_value_question(key, doc, view.language, generic=view.handle.kind != "document")
        if question:
            first = value.split()[0]
            qtype = "numeric" if parse_number(first.rstrip("%")) is not None else "factual"
            rank = 0 if key.lower() in _KEY_PRIORITY else 1
            found.append((rank, Candidate(question, value, qtype, "text")))
    yield from (candidate for _, candidate in sorted(found, key=lambda item: item[0]))


_CLAUSE_VALUE_OPENERS = {"but", "and", "or", "so", "because", "which", "that", "this", "it", "they", "there", "if", "when",
                         "while", "although", "let's", "lets", "let", "then", "also", "we", "you", "i"}


def _clause_value(value: str) -> bool:
    """A value that is a clause fragment ("but let's step back ..."), not a fact."""
    words = value.split()
    return words[0].lower().strip(",;") in _CLAUSE_VALUE_OPENERS or (
        len(words) >= 6 and words[0][:1].islower() and not _TERMINAL_RE.search(value)
    )


def _handle_echo(value: str, view: ChunkView) -> bool:
    h = view.handle
    return any(v and value.strip().lower() == v.lower() for v in (h.test_name, h.stage, h.title, h.date))


# --- measurements and changes stated in text ---------------------------------------------

UNITS = r"(?:km/h|m/s2|m/s|mm|cm|ms|kNm|kN|Nm|kg|kHz|Hz|g|N|s|m|%|percent|degrees?|deg|litres?|liters?|bar|kPa|MPa|V|A|W|kW)"
_MEASURE_EN_RE = re.compile(
    rf"^(?P<metric>[A-Z][A-Za-z][A-Za-z\- ]{{1,58}}?)\s+(?:(?:measured\s+)?(?:at|of)\s+)?(?P<value>\d[\d.,]*\s?{UNITS})$"
)
_MEASURE_KO_RE = re.compile(
    r"^(?P<metric>[가-힣][가-힣A-Za-z0-9 ]{1,38}?)\s+"
    r"(?P<value>\d[\d.,]*\s?(?:ms|mm|km/h|kN|g|%|도|초|명|개|건))$"
)
_CHANGE_RE = re.compile(
    r"^(?P<subj>[A-Z][\w\- ]{1,50}?) (?P<verb>improved|dropped|decreased|increased|fell|rose|grew|declined|was reduced)"
    rf" by (?P<value>\d[\d.,]*\s?{UNITS})(?P<rest>[^.;]*)\.$"
)
_SHARE_RE = re.compile(
    r"^(?P<value>(?:(?:About|Around|Roughly|Nearly|Almost|Over|Under|Some)\s)?\d+(?:\.\d+)?\s?(?:%|percent)) of "
    r"(?P<rest>(?:all |the )?[a-z][\w\-]*(?: [\w\-]+){0,4} (?:are|is|were|was|do|does|did|have|has|will|can|occur|occurs|"
    r"use|uses|used|require|requires|hold|holds|report|reported|say|said)\b[^.;:]{3,120})\.?$"
)
_CHANGE_BASE = {"improved": "improve", "dropped": "drop", "decreased": "decrease", "increased": "increase", "fell": "fall",
                "rose": "rise", "grew": "grow", "declined": "decline", "was reduced": "reduce"}


def _measurement_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc = doc_phrase(view) or where(view)
    if not doc:
        return
    context = view.markdown
    for line in text_lines(view.markdown):
        line = _BULLET_RE.sub("", line).strip()
        if view.language == "ko":
            match = _MEASURE_KO_RE.match(line)
            if match:
                metric = match.group("metric").strip()
                yield Candidate(f"{doc}에서 {josa(metric, '은/는')} 얼마였나요?", match.group("value"), "numeric", "text")
            continue
        match = _MEASURE_EN_RE.match(line)
        if match and not has_clause_word(match.group("metric")):
            metric = _lower_first(match.group("metric").strip(), context)
            yield Candidate(f"What was the {metric} in {doc}?", match.group("value"), "numeric", "text")
            continue
        share = _SHARE_RE.match(line)
        if share and view.language == "en":
            place = where(view)
            yield Candidate(
                f"What share of {share.group('rest')}, according to {place}?", share.group("value"), "numeric", "text"
            )
            continue
        change = _CHANGE_RE.match(line)
        if change and not has_clause_word(change.group("subj")):
            subj, rest = _lower_first(change.group("subj"), context), change.group("rest").split(",")[0].rstrip()
            question = f"By how much did {subj} {_CHANGE_BASE[change.group('verb')]}{rest} in {doc}?"
            yield Candidate(question, change.group("value"), "numeric", "text")


# --- definitions -------------------------------------------------------------------------

_CLAUSE_WORDS = {
    "this", "that", "these", "those", "it", "its", "they", "them", "their", "there", "here", "we", "our", "you", "your",
    "i", "he", "she", "his", "her", "both", "all", "each", "every", "some", "many", "most", "such", "other", "another",
    "any", "no", "none", "one", "several", "few", "whatever", "whichever", "whoever", "if", "when", "while", "although",
    "though", "because", "since", "as", "so", "but", "or", "nor", "however", "therefore", "thus", "then", "also",
    "despite", "after", "before", "how", "what", "why", "where", "who", "which", "whose", "whom", "more", "less", "only",
    "just", "even", "finally", "first", "similarly", "must", "can", "could", "should", "would", "will", "may", "might",
    "shall", "do", "does", "did", "is", "are", "was", "were", "be", "been", "has", "have", "had", "not", "to", "than",
    "not", "yet", "still", "further", "instead", "otherwise", "once", "unless", "until", "whether", "again",
}
"""Words that never occur in a term: pronouns, determiners, clause openers, auxiliaries and modals."""
_LEADING_ONLY = {"in", "on", "at", "for", "with", "by", "from", "of", "and", "about", "into", "over", "under"}
_GENERIC_HEADS = {"data", "result", "results", "model", "models", "value", "values", "system", "approach", "goal", "key",
                  "way", "thing", "process", "method", "purpose", "problem", "solution", "figure", "table", "section",
                  "chapter", "task", "point", "case", "example", "sample", "choice", "option", "part", "reason", "idea",
                  "following", "answer", "question", "number", "rest", "remainder", "output", "input", "list", "step"}


def has_clause_word(phrase: str) -> bool:
    """True when a phrase holds a pronoun, determiner, clause opener, auxiliary or modal (it is no noun phrase)."""
    return any(w.lower().strip(",;:") in _CLAUSE_WORDS for w in phrase.split())


def real_term(term: str) -> bool:
    """True for a noun phrase that can be asked about: no pronouns, determiners or clause openers,
    at most six words, not a generic head noun on its own, not a repeated phrase."""
    words = term.split()
    if not words or len(words) > 7 or any(not re.fullmatch(r"[\w\-/().']+", w) for w in words):
        return False
    body = words[1:] if words[0].lower() in _ARTICLES else words
    if not body or len(body) > 6 or has_clause_word(" ".join(body)):
        return False
    if body[0].lower() in _LEADING_ONLY or body[-1].lower() in _LEADING_ONLY or body[-1].isdigit():
        return False
    half = len(body) // 2
    if len(body) >= 2 and len(body) % 2 == 0 and [w.lower() for w in body[:half]] == [w.lower() for w in body[half:]]:
        return False
    return not (len(body) <= 2 and body[-1].lower() in _GENERIC_HEADS)


_DEFINITION_RE = re.compile(
    r"^(?P<term>[A-Z][\w\-/' ]{0,60}?)(?:,\s(?P<alias>[A-Z][\w\-]{1,12}),)?\s"
    r"(?P<verb>is|are|refers to|refer to|means|mean|denotes|stands for|is defined as|are defined as|is called|are called)\s"
    r"(?P<pred>.+)$"
)
_PROCESS_RE = re.compile(
    r"^(?P<term>[A-Z][\w\-/' ]{0,60}?)(?:,\s(?P<alias>[A-Z][\w\-]{1,12}),)?\s(?P<aux>is|are)\s"
    r"(?:[a-z]+ly\s)?"
    r"(?P<verb>calculated|computed|measured|assessed|evaluated|recorded|determined|derived|estimated|decided|verified|"
    r"implemented|performed)"
    r"\s(?:from|by|with|through|using|as|in|on|at)\b"
)
_DESIGNED_RE = re.compile(r"^(?P<term>[A-Z][\w\-/' ]{0,60}?)(?:,\s(?P<alias>[A-Z][\w\-]{1,12}),)?\s(?P<aux>is|are)\s"
                          r"(?:[a-z]+ly\s)?(?P<verb>designed|intended|used)\sto\s\w+")
_DEFINING_PRED_RE = re.compile(r"^(?:a|an|the|one of)\s", re.IGNORECASE)
_RANKING_PRED_RE = re.compile(
    r"^(?:a|an|the|one of the)\s(?:\w+\s)?(?:most|least|main|only|single|best|worst|largest|smallest|first|last|"
    r"primary|key|biggest|greatest|same|following|number of|current|latest|next|new)\b", re.IGNORECASE)
_CALLED_RE = re.compile(r"^(?P<definiens>[A-Z].{10,}?)\s(?:is|are)\s(?:called|known as|termed|referred to as)\s"
                        r"(?P<term>(?:(?:a|an|the)\s)?[\w\-]+(?:\s[\w\-]+){0,3})\.$")


def _term_phrase(match: re.Match, context: str) -> str | None:
    term = re.sub(r"\s*[-–—:]+$", "", match.group("term").strip())  # "Manufacturer - is the company ...": the term, not its dash
    if not real_term(term):
        return None
    phrase = _lower_first(term, context)
    return f"{phrase} ({match.group('alias')})" if match.group("alias") else phrase


_ROLE_RE = re.compile(
    r"\b(?:manager|leader|lead|architect|engineer|director|professor|researcher|scientist|specialist|"
    r"consultant|author|head|member|president|student|chair|officer|analyst|developer|designer)\b",
    re.IGNORECASE,
)


def _person(term: str, predicate: str) -> bool:
    """A person's name ("Jasmeet Bhatia is an AI Product Manager ..."): biography, not a term to define."""
    words = term.split()
    named = 2 <= len(words) <= 5 and all(w[:1].isupper() and w[1:].islower() and w.isalpha() for w in words)
    return named and bool(_ROLE_RE.search(" ".join(predicate.split()[:8])))


_STEP_USE_RE = re.compile(r"^(?:A|An|The)\s[\w\-]+(?:\s[\w\-]+){0,3}\s(?:is|are)\sused\sto\s(?:cut|define|mark|draw|locate|"
                          r"position|hold|measure|record|align|attach|fix|secure|check|verify|indicate|identify|find)\b")
_INSTRUMENT_RE = re.compile(r"^(?:The\s)?[\w\-]+(?:\s[\w\-]+){0,2}\s(?:is|are)\s(?:determined|measured|recorded|calculated|"
                            r"computed|obtained)\s(?:using|with|by|by using)\s(?:a|an|the)?\s?[\w\-]+(?:\s[\w\-]+)?\.$")
_VAGUE_TERM_RE = re.compile(r"\b(?:corresponding|respective|aforementioned|said|above|former|latter)\b", re.IGNORECASE)
_BARE_THE_RE = re.compile(r"^The\s[a-z][\w\-]*$")


@rule("generate.definition.trivial_use", "generate", "a sentence the definition rule would ask as a purpose or a 'how "
      "is ... determined' question", "a procedure step's tool or geometry ('A utility knife is used to cut ...', 'The "
      "plane of the ground is used to define the X-Y plane'), an answer that is only an instrument ('The elapsed time is "
      "determined using a stopwatch.') or a term that points back ('the corresponding Vk and Dk coefficients'): "
      "procedure trivia, not asked")
def trivial_use(sentence: str) -> bool:
    """True when the sentence only says which tool a step uses or what a geometric reference defines, or its term
    points back to something the chunk named before."""
    head = " ".join(sentence.split()[:8])
    return bool(_STEP_USE_RE.match(sentence) or _INSTRUMENT_RE.match(sentence) or _VAGUE_TERM_RE.search(head))


def definition_question(sentence: str, context: str, where_phrase: str) -> tuple[str, str] | None:
    """(question, question type) for a sentence that defines a real term ("An airbag is a fabric cushion ...")
    or says how a quantity is obtained ("Chest injury risk is assessed mainly through ..."); None otherwise."""
    called = _CALLED_RE.match(sentence) or re.match(r"^(?P<definiens>.+?),?\sand\s.+?\s(?:is|are)\scalled\s"
                                                     r"(?P<term>(?:the\s)?[\w\-]+(?:\s[\w\-]+){0,3})\.$", sentence)
    if called and real_term(called.group("term")):
        term = called.group("term")
        verb = "are" if _plural(term) else "is"
        return f"According to {where_phrase}, what {verb} {term}?", "definitional"
    if trivial_use(sentence):
        return None
    designed = _DESIGNED_RE.match(sentence)
    if designed and (term := _term_phrase(designed, context)):
        return f"According to {where_phrase}, what is the purpose of {term}?", "factual"
    process = _PROCESS_RE.match(sentence)
    if process and (term := _term_phrase(process, context)):
        return f"How {process.group('aux')} {term} {process.group('verb')}, according to {where_phrase}?", "procedural"
    match = _DEFINITION_RE.match(sentence)
    if not match or not (term := _term_phrase(match, context)) or _person(match.group("term"), match.group("pred")):
        return None
    verb = match.group("verb")
    if verb in ("is", "are"):
        if not _DEFINING_PRED_RE.match(match.group("pred")) or _RANKING_PRED_RE.match(match.group("pred")):
            return None
        if _BARE_THE_RE.match(match.group("term")):
            return None  # "The impactor is a pendulum ...": this document's object, not a term a reader looks up
        return f"According to {where_phrase}, what {verb} {term}?", "definitional"
    if verb.startswith(("is ", "are ")):
        return f"According to {where_phrase}, what {verb.split()[0]} {term}?", "definitional"
    auxiliary = "do" if verb in ("mean", "refer to") else "does"
    return f"According to {where_phrase}, what {auxiliary} {term} mean?", "definitional"


_KO_DEFINITION_RE = re.compile(
    r"^(?P<term>[가-힣A-Za-z0-9][가-힣A-Za-z0-9 \-]{0,20}?)(?:이란|란)\s.+(?:말한다|뜻한다|의미한다|이다)\.$"
)


def _definition_candidates(view: ChunkView) -> Iterator[Candidate]:
    place = where(view)
    if not place:
        return
    for sentence in sentences(view.markdown):
        if view.language == "ko":
            match = _KO_DEFINITION_RE.match(sentence)
            if match:
                term = match.group("term").strip()
                yield Candidate(f"{place}에서 {term}{'이란' if has_final_consonant(term) else '란'} 무엇인가요?",
                                sentence, "definitional", "text")
            continue
        made = definition_question(sentence, view.markdown, place)
        if made and not continues_sentence(sentence, view.markdown) and not pointer_definition(sentence) \
                and not anaphoric_term(sentence, view.markdown) and not glossary_line(sentence):
            yield Candidate(made[0], sentence, made[1], "text")


# --- causal "why" questions -------------------------------------------------------------------

_AUXILIARIES = {"is", "are", "was", "were", "can", "could", "must", "should", "will", "would", "may", "might", "has", "have",
                "had", "does", "do", "did", "cannot"}
_NEGATED = {"cannot": "can't"}
_PRONOUN_SUBJECTS = {
    "it", "this", "that", "these", "those", "they", "there", "we", "he", "she", "i", "you", "which", "who", "one"
}
_DETERMINER_NEEDED = {"next", "last", "first", "second", "previous", "new", "current", "final"}
_NOT_IN_SUBJECT = {"because", "if", "when", "since", "although", "though", "while", "as", "once", "unless", "until", "whereas",
                   "after", "before", "our", "we", "us", "your", "my", "you", "i"}
_QUANTIFIERS = {"more", "many", "most", "some", "several", "few", "all", "both", "each", "other", "such", "no", "any", "less",
                "fewer", "much", "the", "a", "an", "its", "their"}
_NOT_VERBS = {"with", "of", "in", "on", "at", "for", "from", "by", "and", "or", "to", "as", "than", "such", "that", "which"}
_APPOSITIVE_RE = re.compile(r",\s(?:which|who|mounted|packaged|stored|placed|located|fired|used|with)\b[^,]{1,80},\s")


def _verb_base(word: str) -> str | None:
    """The base form of a present (-s) verb, or of a regular past (-ed) verb whose stem is unambiguous."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "'s")):
        return word[:-1]
    if word.endswith("ed") and len(word) > 4:
        stem = word[:-2]
        consonants = "bcdfghjklmnpqrstvwxz"
        if stem[-1] in consonants and stem[-2] in consonants and stem[-1] != stem[-2]:
            return stem
    return None


_DEICTIC_IN_SUBJECT = {"this", "these", "that", "those", "purpose", "scope", "aim", "objective"}


def _subject_ok(subject: list[str]) -> bool:
    if not 1 <= len(subject) <= 7 or subject[0].lower() in _PRONOUN_SUBJECTS or subject[-1].lower() in _QUANTIFIERS:
        return False
    if any(w.lower() in _DEICTIC_IN_SUBJECT for w in subject):
        return False  # "the purpose of this standard": a definition, not a cause, and "this" needs the chunk
    return all(re.fullmatch(r"[\w\-/']+", w) for w in subject) and not any(w.lower() in _NOT_IN_SUBJECT for w in subject)


def _subject_phrase(subject: list[str], context: str) -> str:
    phrase = _lower_first(" ".join(subject), context)
    return f"the {phrase}" if subject[0].lower() in _DETERMINER_NEEDED else phrase


def why_question(clause: str, context: str) -> str | None:
    """A "Why ...?" question (without its final '?') from a declarative effect clause, by subject-auxiliary
    inversion or do-support; None when the clause is not simple enough to invert well."""
    clause = _APPOSITIVE_RE.sub(" ", clause.strip().rstrip(".,;"))
    clause = re.sub(r"\b(?:therefore|also|thus|then|however)\s", "", clause)
    words = clause.split()
    for i, word in enumerate(words[:9]):
        if i == 0:
            continue
        lower, subject, rest = word.lower(), words[:i], " ".join(words[i + 1 :]).split(",")[0].strip()
        if not rest:
            return None
        if lower in _AUXILIARIES:
            if not _subject_ok(subject):
                return None
            return f"Why {_NEGATED.get(lower, lower)} {_subject_phrase(subject, context)} {rest}"
        base = _main_verb_base(words, i, clause)
        if base is None:
            continue  # still inside the subject
        if not _subject_ok(subject) or (lower.endswith("s") and _plural(subject[-1])):
            return None
        auxiliary = "did" if lower.endswith("ed") else "does"
        return f"Why {auxiliary} {_subject_phrase(subject, context)} {base} {rest}"
    return None


_AFTER_VERB = {"the", "a", "an", "on", "in", "at", "between", "to", "from", "with", "for", "into", "over", "under", "its",
               "their", "this", "that", "these", "those", "more", "less", "up", "down", "out", "off", "about", "by",
               "through", "all", "most", "some", "no", "his", "her", "our", "only", "well", "much", "early", "late"}


def _main_verb_base(words: list[str], i: int, clause: str) -> str | None:
    """The base form when ``words[i]`` reads as the clause's main verb (present -s or regular past -ed, followed by
    an article, preposition, adverb or number, and no auxiliary later in the clause), else None."""
    word = words[i]
    lower = word.lower()
    if not word.isalpha() or not word.islower() or lower in _NOT_VERBS or lower.endswith(("ing", "ly")):
        return None
    if any(w.lower() in _AUXILIARIES for w in clause.split(",")[0].split()[i + 1 :]):
        return None  # an auxiliary follows: this word is still part of the subject
    following = words[i + 1].lower().strip(",;") if i + 1 < len(words) else ""
    if not (following in _AFTER_VERB or following.endswith("ly") or following[:1].isdigit() or lower.endswith("ed")):
        return None
    return _verb_base(lower)


_BECAUSE_AFTER_RE = re.compile(r"^(?P<effect>.+?),?\s(?:because|due to)\s(?P<cause>.+)$", re.IGNORECASE)
_BECAUSE_BEFORE_RE = re.compile(r"^(?:Because|Due to)\s(?P<cause>[^,]+),\s(?P<effect>.+)$")
_SO_THAT_RE = re.compile(r"^(?P<effect>.+?)\sso that\s(?P<purpose>.+\b(?:can|could|will|would|may)\b.+)$")
_EXPLAINS_WHY_RE = re.compile(r"^(?P<cause>[A-Z][\w\- ]{1,40}?) explains why (?P<effect>.+)$")


def causal_effect(sentence: str) -> str | None:
    """The effect clause of a sentence that states a reason (because / due to / so that / explains why)."""
    for pattern in (_BECAUSE_BEFORE_RE, _EXPLAINS_WHY_RE, _SO_THAT_RE, _BECAUSE_AFTER_RE):
        match = pattern.match(sentence)
        if match:
            if pattern is _EXPLAINS_WHY_RE and match.group("cause").split()[0].lower() in _PRONOUN_SUBJECTS:
                return None
            effect = match.group("effect")
            if pattern in (_BECAUSE_AFTER_RE, _SO_THAT_RE):
                effect = re.split(r";|,\s(?:and|but|while|whereas)\s", effect)[-1].strip()
            return effect
    return None


def _causal_candidates(view: ChunkView) -> Iterator[Candidate]:
    place = where(view)
    if not place or view.language != "en":
        return
    for sentence in sentences(view.markdown):
        effect = causal_effect(sentence)
        question = why_question(effect, view.markdown) if effect and one_predicate(effect) else None
        if question and len(question.split()) >= 4 and not continues_sentence(sentence, view.markdown):
            yield Candidate(f"{question}, according to {place}?", sentence, "causal", "text")


@rule("generate.prose.continuation", "generate", "a sentence a prose rule (definition, cause) would answer with",
      "the text before it ends without a sentence end ('... in either front outboard seating position, target' / page "
      "break / 'FH2 is the nearest point ...'): it continues a sentence whose condition it would drop, so it is not asked")
def continues_sentence(sentence: str, markdown: str) -> bool:
    """True when the chunk text right before the sentence ends in a word, not a sentence end or a heading."""
    at = markdown.find(sentence[:60])
    before = markdown[:at].rstrip() if at > 0 else ""
    last_line = before.rsplit("\n", 1)[-1]
    prose = len(last_line.split()) >= 8 and not last_line.lstrip().startswith(("#", "|", "-", "*", "•", ">"))
    return prose and bool(re.search(r"[a-z,]$", before))  # a short line ending in a word is a plain-line heading


_OF_THE_RE = re.compile(r"^(?:The|An?)\s[\w\- ]{1,40}?\sof\sthe\s(?P<noun>[a-z][\w\-]{2,})\s(?:is|are)\s")


@rule("generate.definition.anaphoric", "generate", "a definition whose term is a part 'of the X' where X was introduced "
      "just before in its paragraph ('The head consists of an aluminium shell ... The interior of the shell is a cavity')",
      "the term names its whole only through the sentence before it, so the question cannot say which X: not asked")
def anaphoric_term(sentence: str, markdown: str) -> bool:
    """True when the defined term is "the <part> of the <X>" and X was introduced with "a"/"an" earlier in the same
    paragraph: "the shell" is the head's shell only for a reader of the sentence before."""
    found = _OF_THE_RE.match(sentence)
    if not found:
        return False
    for paragraph in markdown.split("\n\n"):
        at = paragraph.find(sentence[:60])
        if at > 0:
            noun = re.escape(found.group("noun"))
            return bool(re.search(rf"\b(?:a|an)\s(?:[\w\-]+\s){{0,3}}{noun}\b", paragraph[:at], re.IGNORECASE))
    return False


@rule("generate.causal.one_predicate", "generate", "the effect clause of a 'why' question",
      "an effect with two coordinated predicates ('The pole is 254 mm in diameter and set off from any mounting surface, "
      "so that ...') does not say which one the cause explains: not asked")
def one_predicate(effect: str) -> bool:
    """True when the effect clause has one predicate (no 'and' + another verb or participle after its verb)."""
    second = re.search(r"\band\s+(?:is\s+|are\s+|was\s+|were\s+|then\s+)?"
                       r"(?:(?!ed\b)[a-z]{2,}(?:ed|en)|set|put|cut|held|kept|made|built|laid|left|bent)\b", effect)
    return not second \
        and "according to" not in effect


# --- procedures --------------------------------------------------------------------------------

_PROCEDURE_RE = re.compile(
    r"(?:steps?|stages?)\s(?:of|for|in)\s(?P<a>[^:.]{3,80})[:.]?$"
    r"|^(?P<b>[A-Z][^:.]{3,80}?)\s(?:is|are)\s(?:summari[sz]ed|listed|described)\s(?:below|as follows)[:.]?$"
)
_STEP_RE = re.compile(r"^\s*(?P<n>\d{1,2})[.)]\s+(?P<text>.{8,300})$")


def _procedure_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc = where(view)
    if not doc or view.language != "en":
        return
    lines = text_lines(view.markdown)
    for i, line in enumerate(lines[:-1]):
        intro = _PROCEDURE_RE.search(_BULLET_RE.sub("", line))
        step = _STEP_RE.match(lines[i + 1])
        if not intro or not step or step.group("n") != "1" or not _complete_item(step.group("text")):
            continue
        what = _lower_first((intro.group("a") or intro.group("b")).strip(), view.markdown)
        if has_clause_word(what.replace("the ", "", 1)) and not what.startswith("the "):
            continue
        yield Candidate(
            f"What is the first step of {what}, according to {doc}?", step.group("text").strip(), "procedural", "text"
        )


def _complete_item(text: str) -> bool:
    return bool(_TERMINAL_RE.search(text.strip())) and text[:1].isupper()


