"""Words for lexical matching: the one tokenizer of BM25 in ragprep (hard negatives and the search index).

Lower-cased words of two or more characters; a Korean word is also kept without a trailing
particle (조사), so ``충돌시험에서`` matches ``충돌시험`` and ``에어백은`` matches ``에어백``. No
morphological analyser is needed (none can be downloaded here): the particle list covers the
common case endings, longest first, and a stem must keep at least two syllables.
"""

from __future__ import annotations

import re

_TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")
_HANGUL_RE = re.compile(r"[\uac00-\ud7a3]")
PARTICLES = ("에서는", "으로는", "에서", "으로", "에게", "까지", "부터", "은", "는", "이", "가", "을", "를", "의", "에", "로", "와", "과",
             "도", "만")
"""Korean particles stripped from the end of a word, longest first."""

TOKENIZER_ID = "ragprep-words-ko-particles-1"
"""Names this rule in index manifests: an index whose BM25 was built by another rule must be rebuilt."""


def tokens(text: str) -> list[str]:
    """BM25 tokens: lower-cased words of 2+ characters; Korean words also without a trailing particle."""
    out = []
    for word in _TOKEN_RE.findall(text.lower()):
        out.append(word)
        if _HANGUL_RE.search(word):
            for particle in PARTICLES:
                if word.endswith(particle) and len(word) - len(particle) >= 2:
                    out.append(word[: -len(particle)])
                    break
    return out


_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")


def numbers_in(text: str) -> set[str]:
    """Numbers as written, thousands separators ignored ("1,000" == "1000")."""
    return {m.group().replace(",", "") for m in _NUMBER_RE.finditer(text)}
