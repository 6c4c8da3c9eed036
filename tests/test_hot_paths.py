"""Hot-path rewrites give the answers of the code they replaced.

Each check compares the new function with the old formulation (kept here as the reference) on seeded random texts
drawn from an alphabet with the hard cases (Unicode whitespace, underscores, digits of other scripts, Hangul,
regex metacharacters), and on hand-picked cases."""

from __future__ import annotations

import random
import re

import pytest

from ragprep.text import contains_word, verbatim_span
from tasks.ingest import chunking
from tasks.qa.flags import language_of
from tasks.qa.rules.provisions import provision_units
from tasks.qa.rules.text import ChunkView, paragraphs, sentences

ALPHABET = list("ab AB_1.9-(|)*+?\\\n\t\u00a0\u2003\u3000\u0663\u00b2xé한국어ё ") + ["ab", "ba", " ab ", "a b", "a\nb"]


def _texts(seed: int, n: int, longest: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, longest))) for _ in range(n)]


def _old_leak(question: str, answer: str) -> bool:
    return bool(re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", question))


def _old_verbatim(answer: str, markdown: str) -> str:
    found = re.search(r"\s+".join(re.escape(w) for w in answer.split()), markdown)
    return found.group(0) if found else ""


def _old_language(text: str) -> str:
    hangul = sum("\uac00" <= ch <= "\ud7a3" for ch in text)
    latin = sum(ch.isascii() and ch.isalpha() for ch in text)
    if hangul and hangul >= 0.2 * (hangul + latin):
        return "ko"
    return "en" if latin else "other"


@pytest.mark.parametrize(("text", "phrase", "expected"), [
    ("what is 12 mm?", "12 mm", True), ("what is 112 mm?", "12 mm", False), ("a_12 mm", "12 mm", False),
    ("x 12 mmé", "12 mm", False), ("", "", True), ("٣12 mm", "12 mm", False), ("(12 mm)", "12 mm", True),
])
def test_contains_word_is_the_regex_with_word_boundaries(text, phrase, expected):
    assert contains_word(text, phrase) is expected is _old_leak(text, phrase)


def test_contains_word_agrees_with_the_regex_on_random_texts():
    texts = _texts(1, 400, 40)
    phrases = _texts(2, 60, 4)
    disagreements = [(t, p) for t in texts for p in phrases if contains_word(t, p) != _old_leak(t, p)]
    assert not disagreements[:5]
    assert sum(contains_word(t, p) for t in texts for p in phrases) > 500  # the sample has matches to disagree on


def test_verbatim_finds_what_the_whitespace_regex_found():
    markdown = "The belt shall\nwithstand 11 100 N ±  200 N.\n\nThe belt shall withstand 9 kN."
    assert verbatim_span("withstand 11 100 N", markdown) == "withstand 11 100 N"
    assert verbatim_span("shall withstand", markdown) == "shall\nwithstand"
    assert verbatim_span("N ± 200 N.", markdown) == "N ±  200 N."
    assert verbatim_span("12 kN", markdown) == "" and verbatim_span("  ", markdown) == ""
    texts = _texts(3, 300, 60)
    answers = _texts(4, 80, 8) + [" ".join(t.split()[:3]) for t in texts[:80]]
    differ = [(a, t) for t in texts for a in answers if verbatim_span(a, t) != _old_verbatim(a, t)]
    assert not differ[:5]
    assert sum(bool(verbatim_span(a, t)) for t in texts for a in answers) > 300


def test_language_of_counts_the_same_letters():
    cases = _texts(5, 500, 50) + ["회의 결과 HIC15", "HIC15 of the driver 12", "1234 ---", "한", ""]
    assert [language_of(t) for t in cases] == [_old_language(t) for t in cases]
    assert {language_of(t) for t in cases} == {"ko", "en", "other"}


def test_cached_paragraphs_and_sentences_hand_out_fresh_lists():
    markdown = "# Title\n\nThe belt shall hold. It shall not slip.\n\n- one item\n- two items\n"
    first = sentences(markdown)
    kept = list(first)
    first.append("changed")
    assert sentences(markdown) == kept and "The belt shall hold." in kept
    paras = paragraphs(markdown)
    kept = list(paras)
    paras.clear()
    assert paragraphs(markdown) == kept and kept[0] == "The belt shall hold. It shall not slip."


def test_remembered_element_token_counts_are_count_tokens():
    texts = _texts(6, 200, 80) + ["## Heading", "| a | b |\n|---|---|", "회의 결과"]
    assert [chunking._element_tokens(t) for t in texts] == [chunking.count_tokens(t) for t in texts]


def test_cached_provision_units_hand_out_fresh_lists():
    view = ChunkView("S5 Requirements", "en", "# S5 Requirements\n\nS5.1 Each belt shall withstand 11 100 N.\n\n"
                     "S5.2 The buckle shall release at 60 N.\n")
    units = provision_units(view)
    kept = list(units)
    units.pop()
    assert provision_units(view) == kept and [u.number for u in kept] == ["S5.1", "S5.2"]
