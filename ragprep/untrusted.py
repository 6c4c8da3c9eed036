"""Model output is untrusted: the one check for markup and model instructions in any generated text.

Every text a model writes (a slide correction, a picture description, a header value, a QA pair, an answer)
passes :func:`suspicious_content` (QA pairs) or :func:`added_suspicious` (a rewrite of source text: only what
the model *added* counts, so a document that itself shows ``<b>`` is not blamed on the model). Where a
generated text fails, the stage keeps it out of the dataset with the reason and uses the original text.
"""

from __future__ import annotations

import re

_MARKUP_RE = re.compile(
    r"</?[a-z][a-z0-9-]*(?:\s[^<>]*)?/?>"  # an HTML/XML tag: <script>, </b>, <img src=x onerror=...>
    r"|\bjavascript\s*:|\bdata:text/html|\bon[a-z]{3,}\s*=\s*['\"]?\w"  # script URLs, event handlers
    r"|\{\{.*?\}\}|\{%.*?%\}|<%.*?%>"  # template directives
    r"|!\[[^\]]*\]\(\s*https?://",  # a Markdown image that would load from elsewhere
    re.IGNORECASE | re.DOTALL,
)
_INSTRUCTION_RE = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.?!\n]{0,40}\b(?:previous|prior|above|earlier|all|any|your|the)\b"
    r"[^.?!\n]{0,30}\b(?:instructions?|prompts?|rules|directions|guidelines|context)\b"
    r"|\b(?:system|developer) (?:prompt|message|instructions?)\b"
    r"|\byou are (?:now|no longer) (?:a|an|the|in)\b|\bact as (?:a|an) (?:different|unrestricted)\b|\bjailbreak"
    r"|\bas an ai (?:language )?model\b"
    r"|(?:이전|위의|앞의|모든)\s*(?:지시|지침|명령|프롬프트)[^.?!\n]{0,12}(?:무시|잊)",
    re.IGNORECASE,
)


def suspicious_content(text: str) -> str | None:
    """Why ``text`` looks like markup or an instruction to a model rather than document content, or None.

    Such text in a question or answer (an injected slide, a hostile PDF, a model echoing its prompt)
    must not reach a training set unread: the pair is flagged and waits for review."""
    if match := _MARKUP_RE.search(text):
        return f"markup {match.group(0)[:40]!r}"
    if match := _INSTRUCTION_RE.search(text):
        return f"instruction-like text {match.group(0)[:60]!r}"
    return None


def _matches(text: str) -> list[str]:
    return [m.group(0) for regex in (_MARKUP_RE, _INSTRUCTION_RE) for m in regex.finditer(text)]


def added_suspicious(generated: str, source: str) -> str | None:
    """Why ``generated`` (a model's rewrite or description of ``source``) carries markup or instruction-like text
    that ``source`` does not, or None. Matches found in the source as well (case-insensitive) are not counted."""
    folded = source.casefold()
    added = [m for m in _matches(generated) if m.casefold() not in folded]
    if not added:
        return None
    first = added[0]
    kind = "markup" if _MARKUP_RE.fullmatch(first) else "instruction-like text"
    more = f" (+{len(added) - 1} more)" if len(added) > 1 else ""
    return f"{kind} {first[:60]!r} not in the source{more}"
