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
    heads = [m for m in _HEADING_RE.finditer(md) if m.start() > 0]
    if not heads:
        return [view]
    cuts = [(0, None)] + [(m.start(), m.group(1)) for m in heads]
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
