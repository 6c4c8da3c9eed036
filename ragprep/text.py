"""Words for lexical matching: the one tokenizer of BM25 in ragprep (hard negatives and the search index).

Lower-cased words of two or more characters; a Korean word is also kept without a trailing
particle (조사), so ``충돌시험에서`` matches ``충돌시험`` and ``에어백은`` matches ``에어백``, and a
Korean word adds its content morphemes from a morphological analysis (``pecab``, the mecab-ko-dic analyser
that ``kss`` ships: nouns, roots, verb and adjective stems, numbers and foreign words; ``탄소중립위원회`` ->
``탄소``, ``중립``, ``위원회``; ``제외되는`` -> ``제외``): Korean PDFs often lose their spaces
(``2023년11월10일이수진의원이``), and a compound in the question must still meet its parts in the text.
Letter-spaced Korean headings (``문 의 처``, ``검  토  보  고``: single syllables one or two spaces apart) are
read as one word first. The particle list covers the common case endings, longest first, and a stem must keep
at least two syllables.

A question scores each of its words once: a Korean word's forms share one word's weight (``Bm25Ranker.scores``
averages them), so a long compound (``탄소중립위원회의``: five forms) no longer outweighs a short specific noun (``인천``:
one) five to one.

The morphemes replaced syllable bigrams (``ragprep-words-ko-particles-bigrams-spaced-3``), whose bigrams across
particles and endings (``에서``, ``나요``, ``인가``) matched unrelated text: on the 40 Korean questions of
``tests/data/queries.jsonl`` BM25 answer@1 went 0.85 -> 0.93 over the same passages (English unchanged).
"""

from __future__ import annotations

import functools
import re
import threading
import warnings

_TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")
HANGUL_RE = re.compile(r"[\uac00-\ud7a3]")
"""One Hangul syllable (the one pattern every module that tells Korean text apart uses)."""
_SPACED_RE = re.compile(r"(?<![\w])[\uac00-\ud7a3](?: {1,2}[\uac00-\ud7a3](?![\w]))+")
"""Two or more single Hangul syllables, one or two spaces apart: a letter-spaced heading."""
_SPACED_CELL_RE = re.compile(r"(?<=\|) *([\uac00-\ud7a3]{1,2}(?: [\uac00-\ud7a3]{1,2})+) *(?=\|)")
"""A Markdown table cell of Hangul pieces of one or two syllables, single spaces apart: a header wrapped in a narrow
column ("총인 원" for 총인원); joined when it has at most ``SPACED_CELL_SYLLABLES`` syllables."""
SPACED_CELL_SYLLABLES = 6
PARTICLES = ("에서는", "으로는", "에서", "으로", "에게", "까지", "부터", "은", "는", "이", "가", "을", "를", "의", "에", "로", "와", "과",
             "도", "만")
"""Korean particles stripped from the end of a word, longest first."""

TOKENIZER_ID = "ragprep-words-ko-particles-morphemes-spaced-cells-5"
"""Names this rule in index manifests: an index whose BM25 was built by another rule must be rebuilt."""


def word_tokens(text: str) -> list[str]:
    """The first rule (``ragprep-words-ko-particles-1``): lower-cased words of 2+ characters, Korean words also
    without a trailing particle; no bigrams. Kept for sets built with it (the refmatch evaluation set's distractors)."""
    out = []
    for word in _TOKEN_RE.findall(text.lower()):
        out.append(word)
        if HANGUL_RE.search(word):
            out += _without_particle(word)
    return out


def _without_particle(word: str) -> list[str]:
    """A Korean word without its trailing particle (the first of ``PARTICLES`` that leaves 2+ characters), or []."""
    for particle in PARTICLES:
        if word.endswith(particle) and len(word) - len(particle) >= 2:
            return [word[: -len(particle)]]
    return []


MORPHEME_TAGS = frozenset({"NNG", "NNP", "NR", "XR", "SL", "SN", "SH", "VV", "VA"})
"""The mecab-ko-dic tags kept as tokens: common and proper nouns, numerals, roots, foreign words, numbers, Hanja,
verb and adjective stems (particles, endings, suffixes and question pronouns like ``무엇``, ``언제`` are left out)."""
_ANALYSER_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _analyser():
    from pecab import PeCab

    return PeCab()


@functools.lru_cache(maxsize=200_000)
def morphemes(word: str) -> tuple[str, ...]:
    """The content morphemes (``MORPHEME_TAGS``) of a Korean word, other than the word itself, in order."""
    with _ANALYSER_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pecab's cost sums overflow harmlessly on long runs
        analysed = _analyser().pos(word)
    kept: list[str] = []
    number = False  # pecab gives a number digit by digit (SN): consecutive digits are joined back into one token
    for morpheme, tag in analysed:
        tag = tag.split("+")[0]
        if tag == "SN" and number:
            kept[-1] += morpheme
        elif tag in MORPHEME_TAGS:
            kept.append(morpheme)
        number = tag == "SN"
    return tuple(m for m in kept if m != word)


def _joined_cell(match: re.Match) -> str:
    cell = match.group(0)
    joined = cell.replace(" ", "")
    return f" {joined} " if len(joined) <= SPACED_CELL_SYLLABLES else cell


def word_forms(text: str) -> list[list[str]]:
    """Per word of ``text``, in order, its BM25 tokens: the lower-cased word (2+ characters); a Korean word also
    without a trailing particle, and its content morphemes (``morphemes``). Letter-spaced Korean (a spaced heading, a
    table header cell wrapped in a narrow column) is joined first; the morphemes of the joined word still give its
    parts when it was two words."""
    out = []
    text = _SPACED_CELL_RE.sub(_joined_cell, text)
    text = _SPACED_RE.sub(lambda m: m.group(0).replace(" ", ""), text)
    for word in _TOKEN_RE.findall(text.lower()):
        forms = [word]
        if HANGUL_RE.search(word):
            forms += _without_particle(word)
            forms += morphemes(word)
        out.append(forms)
    return out


def tokens(text: str) -> list[str]:
    """BM25 tokens: every form of every word (``word_forms``), in order."""
    return [form for forms in word_forms(text) for form in forms]


_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")


def numbers_in(text: str) -> set[str]:
    """Numbers as written, thousands separators ignored ("1,000" == "1000")."""
    return {m.group().replace(",", "") for m in _NUMBER_RE.finditer(text)}


def _word_character(text: str, at: int) -> bool:
    """Whether ``text[at]`` exists and is what ``\\w`` matches (a letter, digit or number of any script, or ``_``)."""
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_")


def contains_word(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` with no word character right before or after it: the answer of
    ``re.search(rf"(?<!\\w){re.escape(phrase)}(?!\\w)", text)``, without compiling one pattern per phrase (per-phrase
    patterns crowd the ``re`` module's cache and make every other pattern compile again)."""
    at = text.find(phrase)
    while at >= 0:
        if not _word_character(text, at - 1) and not _word_character(text, at + len(phrase)):
            return True
        at = text.find(phrase, at + 1)
    return False


def verbatim_span(answer: str, markdown: str) -> str:
    """The answer as the chunk writes it (a span over a line break keeps the break), or '' when it is not there: its
    first occurrence whose words are the answer's words apart by any whitespace (as ``re.search`` of the words joined
    by ``\\s+`` finds it, without compiling one pattern per answer)."""
    words = answer.split()
    if not words:
        return ""
    at = markdown.find(words[0])
    while at >= 0:
        end = _words_from(markdown, at + len(words[0]), words[1:])
        if end is not None:
            return markdown[at:end]
        at = markdown.find(words[0], at + 1)
    return ""


def _words_from(text: str, position: int, words: list[str]) -> int | None:
    """Where ``words`` end when they follow ``position`` in ``text``, each after at least one whitespace character."""
    for word in words:
        gap = position
        while gap < len(text) and text[gap].isspace():
            gap += 1
        if gap == position or not text.startswith(word, gap):
            return None
        position = gap + len(word)
    return position
