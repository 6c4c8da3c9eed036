"""A chunk seen section by section: each fact is asked under the heading it stands under.

A chunk often holds more than one section (a PDF chapter with sub-headings, a page that starts one section and
opens the next). Naming the chunk's own title for every fact files facts under the wrong heading ("according to
the Photography section" for a fact of "Measurements and observations"). ``section_views`` cuts the chunk at
its headings; each part is a ``ChunkView`` whose section is that part's heading when it is a real one (not a
running head, a reference list or a broken fragment); a part under a heading that is no handle keeps the
document's name alone.
"""

from __future__ import annotations

import re
from dataclasses import replace

from tasks.qa.handles import clean_name, is_running_head
from tasks.qa.registry import rule
from tasks.qa.rules.text import ChunkView, is_skipped_heading, real_title, strip_numbering

_HEADING_RE = re.compile(r"(?m)^#{1,6}\s+(.+?)\s*$")
_CAPTION_RE = re.compile(r"^(?:Figure|Fig\.|Table|Chart|Photo|Annex|Appendix|그림|표)\s*[\dA-Z]", re.IGNORECASE)
_PSEUDO_HEADING_RE = re.compile(
    r"(?m)(?:^|(?<=\n\n))(?:\*\*(?P<bold>[^*\n]{3,80})\*\*|(?P<caps>[A-Z][A-Z0-9&/,()' -]{3,70}[A-Z)])|"
    r"(?P<title>[A-Z][a-z]+(?:[ -](?:[A-Z][\w-]*|of|and|for|the|to|in|on|with|a|an|or)){1,6})|"
    r"(?P<sentence>[A-Z][a-z]+(?:,? [a-z][a-z\-]*){2,9}))[ \t]*\n\n(?=[^\n]{60,})")
"""A line standing alone as a heading without Markdown: bold (**Test Speed**), ALL CAPS (TESTING), Title Case of two
to seven words (Curb Weight Measurement) or sentence case of three to ten lower-case words ("Dummy kinematics, contact
locations, and kinematic assessments"), with no end punctuation and a prose paragraph of 60+ characters after it."""


def inner_headings(markdown: str, plain: bool = True) -> list[tuple[int, str]]:
    """(offset, heading) of every heading inside a chunk after its first line: Markdown headings, and (``plain``)
    lines that act as headings without Markdown (``_PSEUDO_HEADING_RE``); figure and table captions are no headings."""
    found = [(m.start(), m.group(1)) for m in _HEADING_RE.finditer(markdown) if m.start() > 0]
    for m in _PSEUDO_HEADING_RE.finditer(markdown) if plain else ():
        text = (m.group("bold") or m.group("caps") or m.group("title") or m.group("sentence")).strip()
        if m.start() > 0 and not _CAPTION_RE.match(text) and len(text.split()) <= 10 and not text.endswith((".", ":", ",")):
            found.append((m.start(), text))
    return sorted(found)


_TITLED_ANNEX_RE = re.compile(
    r"^(?:Annex|Appendix)\s+\d+[A-Z]?(?:\s*[-–—]\s*Appendix\s+\d+[A-Z]?)?\s*[-–—:.]?\s+(?!Appendix\b)[A-Z][a-z]+(?:\s+\S+)*?\s+[A-Za-z(]\S*")
"""An annex or appendix heading with its title ("Annex 6 Description of trolley, seat, anchorages ..."): a section, not a
caption; the bare "Annex 9 – Appendix 1" a page prints on top is a running head."""


@rule("generate.section.titled_annex", "generate", "a chunk heading 'Annex N <title>' / 'Annex N - Appendix M <title>'",
      "a titled annex heading is the chunk's own section (not a caption that takes the previous chunk's last heading, "
      "which in a regulation is often a figure label such as 'AIRBAG')")
def is_caption(heading: str) -> bool:
    """A figure, table or chart caption ("Figure 3 MGA Roof Crush Test System"): no section name. A titled annex or
    appendix heading is a section (``_TITLED_ANNEX_RE``)."""
    text = heading.strip(" #*")
    return bool(_CAPTION_RE.match(text)) and not _TITLED_ANNEX_RE.match(text)
MIN_PART_CHARS = 80
"""A part shorter than this (a heading followed by one line) is merged into the part before it."""


def _section_name(heading: str, view: ChunkView) -> str:
    name = clean_name(strip_numbering(heading.strip(" #*")))
    if (
        not real_title(name)
        or is_running_head(name, set(view.handle.running_heads))
        or len(name.split()) < 2 and not name[:1].isupper()
    ):
        return ""
    return name


def _members(items, text: str) -> list:
    """The tables/charts/pictures whose Markdown (first table row or OCR line) stands in ``text``."""
    out = []
    for item in items:
        body = item[-1] or ""
        first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
        if first and first in text:
            out.append(item)
    return out


@rule("generate.section.split", "generate", "a chunk with headings inside it",
      "each heading's part is asked under that heading (or under the document alone when the heading is no handle)")
def section_views(view: ChunkView) -> list[ChunkView]:
    """The chunk cut at its inner headings, one view per part (the whole view when it has none)."""
    md = view.markdown
    heads = inner_headings(md, plain=view.handle.section_kind != "slide")  # a slide's short lines are its bullets
    if not heads:
        return [view]
    cuts = [(0, None)] + heads
    parts = []
    for (start, heading), (end, _) in zip(cuts, cuts[1:] + [(len(md), None)]):
        text = md[start:end]
        if parts and len(text.strip()) < MIN_PART_CHARS:
            parts[-1] = (parts[-1][0], parts[-1][1] + text)
            continue
        parts.append((heading, text))
    views = []
    for heading, text in parts:
        if heading is not None and is_skipped_heading(strip_numbering(heading)):
            continue  # a reference list or contents inside the chunk: no questions
        section = view.handle.section if heading is None else _section_name(heading, view)
        body = text if heading is None else f"# {heading}\n\n{text.split(chr(10), 1)[1] if chr(10) in text else ''}"
        views.append(replace(
            view, markdown=body, handle=replace(view.handle, section=section),
            tables=_members(view.tables, text), charts=_members(view.charts, text), pictures=_members(view.pictures, text),
            heading_path=[*view.heading_path, heading] if heading else list(view.heading_path),
        ))
    return views or [view]


_ITEM_START_RE = re.compile(r"^\s*\(?(?:[a-z]|\d{1,2}|[ivx]{1,4})\)\s+\S")


@rule("generate.section.orphan_items", "generate", "a chunk whose text starts with a list item ('(1) The sum of the "
      "front, middle and rear abdominal forces ...')",
      "the list's lead-in and its paragraph number stand in an earlier chunk, so the heading the chunk carries (often a "
      "phase-in date paragraph, 'S7.2.1 Vehicles manufactured on or after ...') is not the items' owner: a limit, "
      "condition or value of such an item is not asked under the section heading")
def orphan_items(markdown: str) -> bool:
    """True when the chunk's first block after its heading lines is a lettered or numbered item."""
    for block in re.split(r"\n\s*\n", markdown):
        block = block.strip()
        if block and not block.startswith("#"):
            return bool(_ITEM_START_RE.match(block))
    return False
