"""Quality flags for QA pairs: each a code and a one-line reason; thresholds in settings."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rapidfuzz import fuzz, process, utils

from ragprep.settings import Settings
from ragprep.text import numbers_in
from ragprep.untrusted import suspicious_content
from tasks.qa.segments import unsupported_segment_flag

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_QUESTION_END_RE = re.compile(r"(\?|？|까요|나요|인가|니까|습니까)\s*$")
_GENERIC_RE = re.compile(
    r"\b(this|the|that) (slide|document|page|table|chart|figure|picture|image|section|presentation)\b"
    r"|이 (슬라이드|문서|페이지|표|그림|차트)|본 (문서|슬라이드)",
    re.IGNORECASE,
)
_NAMED_RE = re.compile(r"\"[^\"]{3,}\"|'[^']{3,}'|\b\w+\.(pptx|pdf)\b|[A-Z]{2,}-?\d")


_HANGUL_RUN_RE = re.compile("[\uac00-\ud7a3]+")
_LATIN_RUN_RE = re.compile("[A-Za-z]+")


def language_of(text: str) -> str:
    """``ko`` when Hangul makes up at least 20% of the letters, else ``en`` when there are Latin letters, else ``other``.

    Letters are counted by runs (one regex scan each, not a Python test per character: the QA stage asks this of
    every pair's chunk)."""
    hangul = sum(map(len, _HANGUL_RUN_RE.findall(text)))
    latin = sum(map(len, _LATIN_RUN_RE.findall(text)))
    if hangul and hangul >= 0.2 * (hangul + latin):
        return "ko"
    if latin:
        return "en"
    return "other"


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text)]


_VERDICT_RE = re.compile(r"^\s*(?:yes|no|예|아니요|아니오)\b[\s,:;.!]*", re.IGNORECASE)
_VERDICT_CONNECTIVES = frozenset("vs versus against within below above under over than".split())


def support_share(answer: str, chunk: str) -> float:
    """Share of the answer's words that occur in the chunk (the verdict of a yes/no answer aside:
    "Yes (412.6 <= 700)" is supported by its numbers)."""
    verdict = _VERDICT_RE.match(answer)
    words = _words(_VERDICT_RE.sub("", answer)) or _words(answer)
    if verdict:
        words = [w for w in words if w not in _VERDICT_CONNECTIVES] or words
    if not words:
        return 0.0
    vocabulary = set(_words(chunk))
    return sum(w in vocabulary for w in words) / len(words)


def pair_flags(question: str, answer: str, chunk_markdown: str, settings: Settings) -> list[tuple[str, str]]:
    """Flags of one pair on its own (duplicates are found across pairs separately)."""
    flags: list[tuple[str, str]] = []
    share = support_share(answer, chunk_markdown)
    if share < settings.qa.support_threshold:
        flags.append(("unsupported_answer", f"only {share:.0%} of the answer's words occur in the chunk"))
    missing = sorted(numbers_in(answer) - numbers_in(chunk_markdown))
    if missing:
        flags.append(("number_not_in_chunk", f"answer has numbers absent from the chunk: {', '.join(missing[:5])}"))
    segment = unsupported_segment_flag(answer, chunk_markdown, settings.qa.segment_threshold, bool(flags))
    if segment:
        flags.append(segment)
    if not _QUESTION_END_RE.search(question.strip()):
        flags.append(("not_a_question", "does not end as a question"))
    norm_answer = " ".join(_words(answer))
    if len(norm_answer) >= 3 and f" {norm_answer} " in f" {' '.join(_words(question))} ":
        flags.append(("answer_leak", "the question contains its own answer"))
    if len(question.strip()) < settings.qa.min_question_chars:
        flags.append(("too_short", f"question under {settings.qa.min_question_chars} characters"))
    elif len(question) > settings.qa.max_question_chars:
        flags.append(("too_long", f"question over {settings.qa.max_question_chars} characters"))
    if not answer.strip():
        flags.append(("too_short", "empty answer"))
    elif len(answer) > settings.qa.max_answer_chars:
        flags.append(("too_long", f"answer over {settings.qa.max_answer_chars} characters"))
    chunk_language, question_language = language_of(chunk_markdown), language_of(question)
    if chunk_language != "other" and question_language != chunk_language:
        flags.append(("language_mismatch", f"question is {question_language}, chunk is {chunk_language}"))
    if _GENERIC_RE.search(question) and not _NAMED_RE.search(question):
        flags.append(("generic_question", "refers to 'this slide/document' without naming what it asks about"))
    reasons = [f"{part}: {why}" for part, text in (("question", question), ("answer", answer))
               if (why := suspicious_content(text))]
    if reasons:
        flags.append(("suspicious_content", "; ".join(reasons)))
    return flags


STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is are was were be been what which who whom whose when where why "
    "how does do did according this that these those its it as than into about value".split()
)


DOTTED_NUMBER_RE = re.compile(r"(?<=\d)\.(?=\d)")
"""The dot inside a paragraph number or a decimal, replaced by a letter so the number stays one token."""
QUOTED_RE = re.compile(r"[\"“]([^\"”]{1,80})[\"”]")


def _same_word(a: str, b: str) -> bool:
    """Approximately the same word (a typo, an inflection), but never two words with different numbers in them."""
    return re.findall(r"\d+", a) == re.findall(r"\d+", b) and fuzz.ratio(a, b) >= 85


def _content_difference(a: str, b: str) -> set[str]:
    """Content words in one question and not (even approximately) among the words only the other has: the
    words both share (a long document title) cannot stand in for a differing row label."""
    ta, tb = set(a.split()) - STOPWORDS, set(b.split()) - STOPWORDS
    only_a, only_b = ta - tb, tb - ta
    diff = set()
    for word, other in [(w, only_b) for w in only_a] + [(w, only_a) for w in only_b]:
        if not any(_same_word(word, o) for o in other):
            diff.add(word)
    return diff


def _normalised_pair(question: str, answer: str) -> tuple[str, str]:
    return " ".join(_words(question)), " ".join(_words(answer))


def ambiguous_gold_flags(
    pairs: Sequence[tuple[str, str]], scopes: Sequence[str], owned: Sequence[bool] | None = None
) -> list[tuple[str, str] | None]:
    """For each (question, answer), an ``ambiguous_gold`` flag when the same question and answer (case and
    punctuation aside) were also generated from another chunk: the pair is kept once, the other copies are
    marked, since any of those chunks answers it. ``scopes`` are the chunk ids. The kept copy is the first one whose
    chunk its document owns (``owned``: the chunk lies in the document's own standard, not in the start of the next
    one an extract carries), else the first one."""
    owned = owned if owned is not None else [False] * len(pairs)
    kept: dict[tuple[str, str], tuple[str, bool]] = {}
    for (question, answer), scope, own in zip(pairs, scopes, owned):
        key = _normalised_pair(question, answer)
        if key not in kept or (own and not kept[key][1]):
            kept[key] = (scope, bool(own))
    out: list[tuple[str, str] | None] = []
    for (question, answer), scope in zip(pairs, scopes):
        keeper, own = kept[_normalised_pair(question, answer)]
        if keeper == scope:
            out.append(None)
            continue
        whose = ", whose document the section belongs to" if own else ""
        out.append(("ambiguous_gold", f"the same question and answer were generated from chunk {keeper}{whose}"))
    return out


def duplicate_flags(questions: Sequence[str], scopes: Sequence[str], threshold: float) -> list[tuple[str, str] | None]:
    """For each question, a near_duplicate flag naming the earlier question it repeats.

    Two questions are near-duplicates when their normalised token sets are at least
    ``threshold`` similar (rapidfuzz ``token_set_ratio``, so word order does not matter)
    and neither has a content word the other lacks (so template questions about different
    rows or columns, "... Limit value for HIC15" vs "... Driver value for HIC15", stay
    distinct while rephrasings and near-identical copies are caught). A dotted number is one
    token ("paragraph 7.7.1.7" is not "paragraph 7.7.1", whose digits are the same set), and
    questions quoting different names ("T1 accel" vs "Head accel" in one chart) are distinct. ``scopes`` are the
    chunk ids: the reason says whether the repeat is in the same chunk or elsewhere in
    the corpus. The first occurrence stays clean.
    """
    import numpy as np

    normalised = [utils.default_process(DOTTED_NUMBER_RE.sub("p", q)) for q in questions]
    quoted = [sorted(utils.default_process(m) for m in QUOTED_RE.findall(q)) for q in questions]
    out: list[tuple[str, str] | None] = [None] * len(questions)
    block = 2048  # rows compared at once: memory stays at block x n bytes
    for start in range(0, len(questions), block):
        stop = min(start + block, len(questions))
        scores = process.cdist(
            normalised[start:stop], normalised[:stop], scorer=fuzz.token_set_ratio,
            score_cutoff=threshold, dtype=np.uint8, workers=1,
        )
        for i in range(start, stop):
            row = scores[i - start]
            earlier = [int(j) for j in np.nonzero(row[:i] >= threshold)[0]
                       if quoted[i] == quoted[int(j)] and not _content_difference(normalised[i], normalised[int(j)])]
            if earlier:
                j = earlier[0]
                where = "in the same chunk" if scopes[i] == scopes[j] else "elsewhere in the corpus"
                out[i] = ("near_duplicate", f"{row[j]}% similar to an earlier question {where}: {questions[j][:120]}")
    return out
