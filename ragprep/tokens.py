"""Token counting used for chunk budgets and the ``token_count`` column.

ragprep runs offline and cannot fetch a BPE vocabulary, so it counts tokens with a
documented, deterministic rule that tracks subword tokenizers closely enough for
budgeting: every run of Latin letters counts one token per 4 characters (rounded up),
every digit group one token per 3 digits, every Hangul/CJK character half a token
(two syllables per token, rounded up per run), and every other non-space symbol one
token.
"""

from __future__ import annotations

import math
import re

_TOKEN_RE = re.compile(
    r"(?P<latin>[A-Za-zÀ-ɏ]+)"
    r"|(?P<digits>\d+)"
    r"|(?P<cjk>[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af\u3040-\u30ff\u4e00-\u9fff]+)"
    r"|(?P<other>[^\sA-Za-zÀ-ɏ\d\u1100-\u11ff\u3130-\u318f\uac00-\ud7af\u3040-\u30ff\u4e00-\u9fff])"
)


def count_tokens(text: str) -> int:
    """Tokens in ``text`` by the module's rule: Latin letters /4, digits /3, Hangul/CJK /2, any other symbol 1."""
    total = 0
    for match in _TOKEN_RE.finditer(text):
        kind = match.lastgroup
        length = match.end() - match.start()
        if kind == "latin":
            total += math.ceil(length / 4)
        elif kind == "digits":
            total += math.ceil(length / 3)
        elif kind == "cjk":
            total += math.ceil(length / 2)
        else:
            total += 1
    return total


def cut_to_tokens(text: str, budget: int) -> str:
    """The longest prefix of ``text`` holding at most ``budget`` tokens by the module's rule (one pass, no copies
    of the rest): a run that would cross the budget is left out whole."""
    total = 0
    for match in _TOKEN_RE.finditer(text):
        kind = match.lastgroup
        length = match.end() - match.start()
        if kind == "latin":
            cost = math.ceil(length / 4)
        elif kind == "digits":
            cost = math.ceil(length / 3)
        elif kind == "cjk":
            cost = math.ceil(length / 2)
        else:
            cost = 1
        if total + cost > budget:
            return text[: match.start()].rstrip()
        total += cost
    return text
