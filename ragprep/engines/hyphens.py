"""Words broken by a hyphen at a line end: joined, kept as a hyphenated compound, or left as they are.

A line ending in ``<word>-`` followed by a line starting with a word is one of three things, told apart by the
words of the document itself (``Hyphenation.of_lines``) and an English word list (pyspellchecker's, which ships
with the package; no download):

* a word split by the typesetter (``al-`` / ``cohol``, ``manufac-`` / ``turer``): joined without the hyphen;
* a hyphenated compound that happens to break at its hyphen (``H-`` / ``point``, ``type-`` / ``approval``,
  ``i-`` / ``Size``, ``vehicle-to-`` / ``pole``): the hyphen kept, no space;
* anything else (``20-`` / ``30`` a range, ``-5``, ``DC-`` / ``or AC-buses`` a suspended hyphen, Korean text):
  left as the text layer has it, the hyphen and a space.

The rule, in order: a continuation starting with a digit, or Korean on either side, is left as it is; the
hyphenated form occurring in the document (at least as often as the joined form) makes a compound; a
conjunction after the break ("and", "or", "nor", "to") is a suspended hyphen, left as it is, unless the joined
form is a word ("col-" / "or"); a first part that is one letter, holds a digit or is an acronym makes a
compound; any other continuation in upper case is left as it is; the joined form being a word of the document
or of the word list joins; a chain going on ("left-to-" / "right", "vehicle-" / "to-pole") makes a compound;
both parts being words of 3+ letters ("semi-" / "cylinder") makes a compound; anything else is the
typesetter's split, joined. PyMuPDF's ``TEXT_DEHYPHENATE`` joins every such break without the hyphen (``typeapproval``,
``iSize``, ``2030``), so it is not used.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

HANGUL_RE = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]")
LEFT_RE = re.compile(r"([^\W_]+(?:-[^\W_]+)*)-$")
"""The word (or hyphenated chain) a line ends with, before its final hyphen."""
RIGHT_RE = re.compile(r"[^\W_]+")
TOKEN_RE = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
SUSPENDED = frozenset({"and", "or", "nor", "to"})
"""A break before a conjunction is a suspended hyphen ("inter- and intra-", "DC- or AC-buses", "10- to 20-"): left
as it is, unless the joined form is a word ("col-" / "or") or a chain goes on ("vehicle-" / "to-pole")."""

JOIN, COMPOUND, KEEP = "", "-", "- "
"""What stands between the two parts: nothing (the hyphen dropped), the hyphen, or the hyphen and a space."""


@lru_cache(maxsize=1)
def _wordlist() -> frozenset[str] | dict:
    try:
        from spellchecker import SpellChecker
    except ImportError:  # without the word list only the document's own words decide
        return frozenset()
    return SpellChecker().word_frequency.dictionary


def _acronym_or_number(part: str) -> bool:
    """One letter ("i-Size", "Q-series"), a digit ("1.9-cm", "L1-"), or an acronym ("DC-", "ISOFIX-")."""
    return len(part) == 1 or any(ch.isdigit() for ch in part) or (len(part) >= 2 and part.isupper())


class Hyphenation:
    """Decides how a word broken at a line end is joined, from the words of its document and a word list."""

    def __init__(self, words: Counter | None = None, compounds: Counter | None = None) -> None:
        self.words = words or Counter()
        """Lower-cased words of the document (whole on their line)."""
        self.compounds = compounds or Counter()
        """Lower-cased hyphenated words of the document ("h-point", "type-approval")."""

    @classmethod
    def of_lines(cls, lines: Iterable[str]) -> Hyphenation:
        """The vocabulary of a document's text lines, less the parts of words broken at a line end."""
        words: Counter = Counter()
        compounds: Counter = Counter()
        broken = False
        for line in lines:
            tokens = TOKEN_RE.findall(line)
            if broken and tokens:
                tokens = tokens[1:]  # the continuation of a broken word
            broken = bool(LEFT_RE.search(line.rstrip()))
            if broken and tokens:
                tokens = tokens[:-1]
            for token in tokens:
                (compounds if "-" in token else words)[token.lower()] += 1
        return cls(words, compounds)

    def _known(self, word: str) -> bool:
        return word in self.words or word in _wordlist()

    def separator(self, left: str, right: str) -> str:
        """What joins ``left`` (text ending in ``word-``) to ``right`` (the next line): JOIN, COMPOUND or KEEP."""
        head, tail = LEFT_RE.search(left.rstrip()), RIGHT_RE.match(right.lstrip())
        if not head or not tail:
            return KEEP
        chain, word = head.group(1), tail.group(0)
        part = chain.rsplit("-", 1)[-1]
        if HANGUL_RE.search(part + word) or word[0].isdigit():
            return KEEP  # Korean, a range or a minus ("20- 30", "7264A- 2000")
        compound, joined = f"{part}-{word}".lower(), (part + word).lower()
        if self.compounds[compound] > 0 and self.compounds[compound] >= self.words[joined]:
            return COMPOUND
        known = joined.isalpha() and self._known(joined)
        if word.lower() in SUSPENDED and not known and not right.lstrip()[len(word):].startswith("-"):
            return KEEP
        if _acronym_or_number(part):
            return COMPOUND
        if not word[0].islower():
            return KEEP
        if known:
            return JOIN
        if "-" in chain or right.lstrip()[len(word):].startswith("-"):
            return COMPOUND  # a chain goes on: "vehicle-to-" / "pole", "vehicle-" / "to-pole"
        if len(part) >= 3 and len(word) >= 3 and self._known(part.lower()) and self._known(word.lower()):
            return COMPOUND  # "semi-" / "cylinder", "type-" / "approval"
        return JOIN

    def join(self, left: str, right: str) -> str:
        """``left`` and ``right`` as one text, the line-end hyphen between them resolved (``separator``)."""
        sep = self.separator(left, right)
        left, right = left.rstrip(), right.lstrip()
        return left[:-1] + right if sep == JOIN else left + right if sep == COMPOUND else left + " " + right


DEFAULT = Hyphenation()
"""The rule with the word list alone, for text read without its document."""
