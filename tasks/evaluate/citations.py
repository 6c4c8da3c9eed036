"""MMDocRAG quote selection: read the quotes an answer cites.

Each question comes with candidate quotes labelled ``text1..textN`` and ``image1..imageM``.
An answer cites text quotes as ``[n]`` (``[3]`` is ``text3``) and image quotes as Markdown
images ``![](imageN)``. Scoring the cited labels is in :mod:`tasks.evaluate.scoring`, reading
prediction and gold files in :mod:`tasks.evaluate.files`.

Citation pitfalls, and what :func:`extract_citations` decides for each (all matching is
case-insensitive, labels come out lower-case):

1. **Numbers that are not quote numbers.** ``[0]`` is never a quote (numbering starts at 1).
   With ``n_text`` given, ``[n]`` counts only for ``1 <= n <= n_text``; without it, only for
   ``n <= 99`` (``MAX_UNBOUNDED_QUOTE_NUMBER``; MMDocRAG sets hold at most 20 quotes), so a
   year such as ``[2020]`` is dropped either way. The same bounds apply to image numbers with
   ``n_image``. Dropped numbers are listed in ``Citations.ignored``.
2. **Brackets that are not citation lists.** A bracket group counts only when *every* item in
   it parses as a quote reference; ``[12.5]``, ``[see 3]``, ``[2020, p. 4]``, ``[]`` cite nothing.
3. **Lists.** Items separated by commas or semicolons each count: ``[1, 3]`` is text1 and
   text3; ``[image1, text2]`` mixes modalities. Known limit: a decimal comma ``[12,5]`` reads
   as the list 12, 5 (12 is then dropped if out of range, 5 kept).
4. **Ranges.** ``[1-3]`` (hyphen, en or em dash) expands to 1, 2, 3 only when both ends are
   valid numbers and start <= end; otherwise the whole range is dropped (``[1-2020]``,
   ``[3-1]``), since a half-valid range is more likely a span of years or pages.
   ``[image1-3]`` and ``[image1-image3]`` expand too; mixing kinds (``[text1-image3]``) does not
   expand (its two ends still count as bare labels, rule 10).
5. **Adjacent groups.** ``[1][2]`` is two citations, text1 and text2.
6. **Images cited the wrong way.** ``[image1]``, ``[Image 1]``, ``(image1)``, ``(Image 1)`` and a
   link without the ``!`` (``[see](image1)``) all count as image1: models do this. Bare numbers
   in parentheses never count: ``(1)`` is far more often an enumeration than a citation.
7. **Multi-digit labels.** ``![](image12)`` is image12, never image1; digits are read greedily
   and a label must end at a non-alphanumeric character.
8. **Markdown that is not a citation.** A link ``[text](url)`` cites nothing (``[3](http://x)``
   included): its brackets are link text. A footnote ``[^1]`` cites nothing. Anything inside
   an image ``![...](...)`` is not read again: ``![see [3]](image2)`` cites image2 only, and an
   image whose target is not a label (``![](chart.png)``) cites nothing. The image target must
   be the label itself (``<image2>`` and a ``"title"`` allowed; ``image2.png`` is not a label).
9. **Code spans are not special.** ``[2]`` inside backticks counts like any other ``[2]``.
10. **Bare labels.** A label written as one word, ``text3`` or ``image2`` (ASCII letters/digits
    must not touch it, so ``image2에서`` counts but ``image2a`` and ``my_text3`` do not), counts:
    these tokens only exist because the prompt used them, so a model writing "as text3 says"
    is citing text3. With a space (``text 3``, ``Image 2``) it counts only inside brackets or
    parentheses, since "image 2" in prose may be the document's own figure numbering.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_UNBOUNDED_QUOTE_NUMBER = 99

# A normalized quote label: group 1 the kind, group 2 the number.
LABEL_RE = re.compile(r"^(text|image)([1-9][0-9]*)$")

# A Markdown image; its alt text may hold one level of nested brackets.
_IMAGE_MD_RE = re.compile(r"!\[(?:[^\[\]]|\[[^\[\]]*\])*\]\((?P<target>[^()]*)\)")
# A Markdown inline link (no space between "]" and "(").
_LINK_MD_RE = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\((?P<target>[^()]*)\)")
_IMAGE_TARGET_RE = re.compile(
    r"\s*<?\s*image\s*(?P<n>\d+)\s*>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*", re.IGNORECASE
)
_BRACKET_GROUP_RE = re.compile(r"\[(?P<body>[^\[\]]*)\]")
_PAREN_GROUP_RE = re.compile(r"\((?P<body>[^()]*)\)")
_ITEM_RE = re.compile(
    r"(?:(?P<k1>text|image)\s*)?(?P<a>\d+)(?:\s*[-\u2013\u2014]\s*(?:(?P<k2>text|image)\s*)?(?P<b>\d+))?",
    re.IGNORECASE,
)
_BARE_LABEL_RE = re.compile(r"(?<![A-Za-z0-9_])(?P<k>text|image)(?P<n>\d+)(?![A-Za-z0-9_])", re.IGNORECASE)


def label_sort_key(label: str) -> tuple[int, int]:
    """text labels before image labels, each by number (text2 < text10)."""
    m = LABEL_RE.match(label)
    if m is None:
        raise ValueError(f"not a quote label: {label!r} (expected textN or imageN, N >= 1)")
    return (0 if m.group(1) == "text" else 1, int(m.group(2)))


def normalize_label(label: str) -> str:
    """``" Image3 "`` -> ``"image3"``; ValueError for a string that is not a label, TypeError for a non-string."""
    if not isinstance(label, str):
        raise TypeError(f"not a quote label: {label!r} (expected a string)")
    norm = label.strip().lower()
    label_sort_key(norm)
    return norm


@dataclass(frozen=True)
class Citations:
    """Quote labels an answer cites, per modality, sorted by number.

    ``ignored`` holds the quote-like references dropped as out of range (``"2020"``, ``"0"``,
    ``"image9"``, ``"1-2020"``), as written but lower-cased, in order of appearance.
    """

    text: tuple[str, ...] = ()
    image: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    @property
    def labels(self) -> frozenset[str]:
        """All cited labels, text and image."""
        return frozenset(self.text) | frozenset(self.image)


class _Collector:
    """Labels found so far in one answer, and the references dropped as out of range."""

    def __init__(self, n_text: int | None, n_image: int | None) -> None:
        self.bounds = {
            "text": MAX_UNBOUNDED_QUOTE_NUMBER if n_text is None else n_text,
            "image": MAX_UNBOUNDED_QUOTE_NUMBER if n_image is None else n_image,
        }
        self.found: set[tuple[str, int]] = set()
        self.ignored: list[tuple[int, str]] = []  # (offset in the answer, as written)

    def valid(self, kind: str, n: int) -> bool:
        return 1 <= n <= self.bounds[kind]

    def add(self, kind: str, n: int, as_written: str, pos: int) -> None:
        if self.valid(kind, n):
            self.found.add((kind, n))
        else:
            self.ignored.append((pos, as_written))

    def add_group(self, body: str, pos: int, *, require_kind: bool) -> None:
        """A bracket or parenthesis body: all items parse, or the group cites nothing."""
        pieces = [p.strip() for p in re.split(r"[,;]", body)]
        pieces = [p for p in pieces if p]
        if not pieces:
            return
        parsed: list[tuple[str, int, int | None, str]] = []
        for piece in pieces:
            m = _ITEM_RE.fullmatch(piece)
            if m is None:
                return
            k1, k2 = m.group("k1"), m.group("k2")
            if require_kind and k1 is None:
                return
            if k2 is not None and (k1 is None or k1.lower() != k2.lower()):
                return
            kind = (k1 or "text").lower()
            b = m.group("b")
            parsed.append((kind, int(m.group("a")), None if b is None else int(b), piece))
        for kind, a, b, piece in parsed:
            if b is None:
                self.add(kind, a, piece, pos)
            elif a <= b and self.valid(kind, a) and self.valid(kind, b):
                self.found.update((kind, n) for n in range(a, b + 1))
            else:
                self.ignored.append((pos, piece))

    def result(self) -> Citations:
        ordered = sorted(self.found, key=lambda kn: (kn[0] != "text", kn[1]))
        return Citations(
            text=tuple(f"text{n}" for k, n in ordered if k == "text"),
            image=tuple(f"image{n}" for k, n in ordered if k == "image"),
            # in order of appearance; "[image9]" is seen as a group and as a bare label: once
            ignored=tuple(dict.fromkeys(written.lower() for _, written in sorted(self.ignored))),
        )


def extract_citations(answer: str, n_text: int | None = None, n_image: int | None = None) -> Citations:
    """The text and image quotes ``answer`` cites (see the module docstring for every rule).

    ``n_text`` / ``n_image`` are the sizes of the candidate sets; numbers beyond them are ignored.
    """
    for name, bound in (("n_text", n_text), ("n_image", n_image)):
        if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool) or bound < 0):
            raise ValueError(f"{name} must be a non-negative int or None, got {bound!r}")
    found = _Collector(n_text, n_image)

    def blank(match: re.Match[str]) -> str:
        return " " * len(match.group(0))

    def image_md(match: re.Match[str]) -> str:
        target = _IMAGE_TARGET_RE.fullmatch(match.group("target"))
        if target is not None:
            found.add("image", int(target.group("n")), f"image{target.group('n')}", match.start())
        return blank(match)

    def link_md(match: re.Match[str]) -> str:
        target = _IMAGE_TARGET_RE.fullmatch(match.group("target"))
        if target is not None:  # an image cited as a link, the "!" forgotten
            found.add("image", int(target.group("n")), f"image{target.group('n')}", match.start())
        return blank(match)

    rest = _IMAGE_MD_RE.sub(image_md, answer)
    rest = _LINK_MD_RE.sub(link_md, rest)
    for m in _BRACKET_GROUP_RE.finditer(rest):
        found.add_group(m.group("body"), m.start(), require_kind=False)
    for m in _PAREN_GROUP_RE.finditer(rest):
        found.add_group(m.group("body"), m.start(), require_kind=True)
    for m in _BARE_LABEL_RE.finditer(rest):
        found.add(m.group("k").lower(), int(m.group("n")), m.group(0).lower(), m.start())
    return found.result()
