"""describe: a VLM text for every picture, chart and table (MMDocRAG ``vlm_text``),
stored beside its OCR text, and joined to the slide/chapter Markdown under its picture."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragprep.engines.chat import ImageInput
from ragprep.engines.generator import Generation, Generator
from ragprep.markdown import parse_number, table_rows
from ragprep.prompts import PromptTemplate
from ragprep.tokens import count_tokens
from ragprep.untrusted import added_suspicious
from schemas.chunks import ChunkRow
from schemas.elements import ElementRow
from tasks.stage import run_items

DESCRIBED_KINDS = ("picture", "chart", "table")
IMAGE_MIME = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}
_BLOCK_RE = re.compile(r"\n\n> \*\*Description of [^\n]*\*\*[^\n]*(?:\n> [^\n]*)*", re.MULTILINE)


@dataclass(frozen=True)
class Visual:
    """A picture, chart, table or crop to describe, with what extraction knows of it."""

    kind: str
    unit: str
    number: int
    document: str
    structure: str
    ocr_text: str | None = None
    image: ImageInput | None = None
    width: int | None = None
    height: int | None = None
    facts: dict = field(default_factory=dict)


async def describe_visual(visual: Visual, generator: Generator, prompt: PromptTemplate) -> Generation:
    """One VLM description (or the heuristic's, offline) of a picture, chart, table or crop."""
    variables = {
        "kind": visual.kind,
        "location": f"{visual.unit} {visual.number}",
        "document": visual.document,
        "ocr_text": visual.ocr_text or "",
        "structure": visual.structure,
        "has_image": visual.image is not None,
    }
    return await generator.generate(
        "describe_image",
        prompt,
        variables,
        images=[visual.image] if visual.image else [],
        heuristic=lambda: describe_rule(visual),
    )


def vlm_fields(generation: Generation, source: str = "") -> dict[str, str | None]:
    """The ``vlm_*`` columns (shared by elements and quotes) of one description. Model output is untrusted: a
    description adding markup or instruction-like text absent from ``source`` (what extraction read: OCR text,
    cells) is kept out (``vlm_text`` None) and ``vlm_flag`` says why."""
    text = generation.text.strip() or None
    flag = generation.flag
    if text and (suspicious := added_suspicious(text, source)):
        text, flag = None, (flag + "; " if flag else "") + f"suspicious_content: {suspicious}"
    return {
        "vlm_text": text,
        "vlm_provider": generation.provider,
        "vlm_model": generation.model,
        "vlm_prompt": generation.prompt_ref,
        "vlm_flag": flag,
    }


def image_input(path: Path) -> ImageInput | None:
    """The image file as a model input; None when it is missing or not a PNG, JPEG, GIF or WebP."""
    mime = IMAGE_MIME.get(path.suffix.lower().lstrip("."))
    return ImageInput(path.read_bytes(), mime) if mime and path.exists() else None


async def describe_one(element: ElementRow, root: Path, generator: Generator, prompt: PromptTemplate) -> ElementRow:
    """The element with its ``vlm_*`` columns set from one description (a picture is sent with its image)."""
    facts = json.loads(element.meta) if element.meta else {}
    image = image_input(root / element.image_path) if element.kind == "picture" and element.image_path else None
    structure = "" if element.kind == "picture" else element.text
    visual = Visual(element.kind, element.unit, element.number, Path(element.source_path).name, structure,
                    element.ocr_text, image, element.image_width, element.image_height, facts)
    generation = await describe_visual(visual, generator, prompt)
    return element.model_copy(update=vlm_fields(generation, f"{element.text}\n{element.ocr_text or ''}"))


async def describe_elements(
    elements: Sequence[ElementRow], root: Path, generator: Generator, prompt: PromptTemplate,
    on_done: Callable[[ElementRow], None] | None = None,
) -> list[ElementRow]:
    """All elements, with pictures/charts/tables described (others returned unchanged)."""
    targets = [e for e in elements if e.kind in DESCRIBED_KINDS]
    done = await run_items(targets, lambda e: describe_one(e, root, generator, prompt), on_done)
    described = {e.element_id: e for e in done}
    return [described.get(e.element_id, e) for e in elements]


_ALT_RE = re.compile(r"^!\[(?P<label>.*?)(?: \(\d+x\d+ px\))?\]\(")


def description_block(element: ElementRow) -> str:
    """The element's description as a Markdown quote block headed by its label, provider and model."""
    match = _ALT_RE.match(element.text)
    label = match.group("label") if match else element.kind
    lines = (element.vlm_text or "").splitlines() or [""]
    head = f'> **Description of picture "{label}"** ({element.vlm_provider}, {element.vlm_model})'
    return "\n".join([head] + [f"> {line}" if line else ">" for line in lines])


def attach_descriptions(chunks: Sequence[ChunkRow], elements: Sequence[ElementRow]) -> list[ChunkRow]:
    """Put each picture's description under the picture (and its OCR block) in its chunk.

    Idempotent: blocks from an earlier run are removed first.
    """
    pictures = {e.element_id: e for e in elements if e.kind == "picture" and e.vlm_text and e.image_path}
    out = []
    for chunk in chunks:
        markdown = _BLOCK_RE.sub("", chunk.markdown)
        for element_id in chunk.element_ids:
            element = pictures.get(element_id)
            if element is None:
                continue
            anchor = markdown.find(f"]({element.image_path})")
            if anchor < 0:
                continue
            end = markdown.find("\n\n", anchor)
            # skip the OCR block that follows the picture, if any
            if end >= 0 and markdown.startswith("\n\n> **OCR text of picture", end):
                following = markdown.find("\n\n", end + 2)
                end = following
            insert_at = len(markdown) if end < 0 else end
            markdown = markdown[:insert_at] + "\n\n" + description_block(element) + markdown[insert_at:]
        out.append(chunk.model_copy(update={"markdown": markdown}))
    return out


# -- offline rule: OCR text plus structural facts (never invented content) ------------------------



def describe_rule(visual: Visual) -> str:
    """A factual description of a picture, chart or table, from what extraction knows."""
    kind, text, ocr_text, facts = visual.kind, visual.structure, visual.ocr_text, visual.facts
    width, height = visual.width, visual.height
    where = f"{visual.unit} {visual.number}"
    rows = table_rows(text)
    if kind == "picture" or kind == "figure" or (kind == "table" and not rows and ocr_text and ocr_text.strip()):
        shape = ""
        if width and height:
            orientation = "landscape" if width > height * 1.1 else "portrait" if height > width * 1.1 else "square"
            shape = f" of {width}x{height} px ({orientation})"
        noun = "picture" if kind == "picture" else f"{kind} image"
        if ocr_text and ocr_text.strip():
            lines = [ln.strip() for ln in ocr_text.splitlines() if ln.strip()]
            return (
                f"Heuristic description: {noun}{shape} on {where}. It carries text; OCR reads: "
                + " / ".join(f'"{ln}"' for ln in lines[:12])
                + "."
            )
        return f"Heuristic description: {noun}{shape} on {where}. OCR found no legible text; its visual content is not described by rules."
    if kind == "chart":
        header, body = (rows[0], rows[1:]) if rows else ([], [])
        series = header[1:]
        categories = [r[0] for r in body if r]
        title = facts.get("title")
        parts = [f"Heuristic description: {facts.get('chart_type', 'chart')} chart" + (f' "{title}"' if title else "") + f" on {where}"]
        if series:
            parts.append(f"with {len(series)} series ({', '.join(series)})")
        if categories:
            parts.append(f"over {len(categories)} categories ({categories[0]} to {categories[-1]})")
        sentence = " ".join(parts) + "."
        peaks = []
        for col, name in enumerate(series, start=1):
            values = [(parse_number(r[col]), r[0]) for r in body if col < len(r) and parse_number(r[col]) is not None]
            if values:
                value, category = max(values, key=lambda v: v[0])
                peaks.append(f"{name} peaks at {r_fmt(value)} ({category})")
        return sentence + (" " + "; ".join(peaks) + "." if peaks else "")
    if kind == "table":
        if not rows:
            return f"Heuristic description: empty table on {where}."
        n_rows, n_cols = len(rows), max(len(r) for r in rows)
        header = ", ".join(c for c in rows[0] if c)
        first_col = [r[0] for r in rows[1:] if r and r[0]]
        text_out = f"Heuristic description: table of {n_rows} rows x {n_cols} columns on {where}; header: {header}."
        if first_col:
            text_out += f" Rows: {', '.join(first_col[:12])}" + ("..." if len(first_col) > 12 else "") + "."
        return text_out
    return f"Heuristic description: {kind} on {where} ({count_tokens(text)} tokens of text)."


def r_fmt(value: float) -> str:
    """A number for display: whole numbers without decimals, others in ``g`` format."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
