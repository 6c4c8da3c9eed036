"""describe: a VLM text for every picture, chart and table (MMDocRAG ``vlm_text``),
stored beside its OCR text, and joined to the slide/chapter Markdown under its picture."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ragprep.prompts import PromptTemplate
from ragprep.providers import heuristic
from ragprep.providers.base import ImageInput
from ragprep.providers.generator import Generation, Generator
from schemas.chunks import ChunkRow
from schemas.elements import ElementRow

DESCRIBED_KINDS = ("picture", "chart", "table")
IMAGE_MIME = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}
_BLOCK_RE = re.compile(r"\n\n> \*\*Description of [^\n]*\*\*[^\n]*(?:\n> [^\n]*)*", re.MULTILINE)


async def describe_visual(
    kind: str,
    unit: str,
    number: int,
    document: str,
    structure: str,
    ocr_text: str | None,
    image: ImageInput | None,
    size: tuple[int | None, int | None],
    facts: dict,
    generator: Generator,
    prompt: PromptTemplate,
) -> Generation:
    """One VLM description (or the heuristic's, offline) of a picture, chart, table or crop."""
    variables = {
        "kind": kind,
        "location": f"{unit} {number}",
        "document": document,
        "ocr_text": ocr_text or "",
        "structure": structure,
        "has_image": image is not None,
    }
    return await generator.generate(
        "describe_image",
        prompt,
        variables,
        images=[image] if image else [],
        heuristic=lambda: heuristic.describe(kind, unit, number, structure, ocr_text, size[0], size[1], facts),
    )


def vlm_fields(generation: Generation) -> dict[str, str | None]:
    """The ``vlm_*`` columns (shared by elements and quotes) of one description."""
    return {
        "vlm_text": generation.text.strip() or None,
        "vlm_provider": generation.provider,
        "vlm_model": generation.model,
        "vlm_prompt": generation.prompt_ref,
        "vlm_flag": generation.flag,
    }


def image_input(path: Path) -> ImageInput | None:
    mime = IMAGE_MIME.get(path.suffix.lower().lstrip("."))
    return ImageInput(path.read_bytes(), mime) if mime and path.exists() else None


async def describe_one(element: ElementRow, root: Path, generator: Generator, prompt: PromptTemplate) -> ElementRow:
    facts = json.loads(element.meta) if element.meta else {}
    image = image_input(root / element.image_path) if element.kind == "picture" and element.image_path else None
    structure = "" if element.kind == "picture" else element.text
    generation = await describe_visual(
        element.kind, element.unit, element.number, Path(element.source_path).name, structure, element.ocr_text,
        image, (element.image_width, element.image_height), facts, generator, prompt,
    )
    return element.model_copy(update=vlm_fields(generation))


async def describe_elements(
    elements: Sequence[ElementRow],
    root: Path,
    generator: Generator,
    prompt: PromptTemplate,
    on_done: Callable[[ElementRow], None] | None = None,
) -> list[ElementRow]:
    """All elements, with pictures/charts/tables described (others returned unchanged)."""

    async def run(element: ElementRow) -> ElementRow:
        if element.kind not in DESCRIBED_KINDS:
            return element
        described = await describe_one(element, root, generator, prompt)
        if on_done:
            on_done(described)
        return described

    return list(await asyncio.gather(*(run(e) for e in elements)))


_ALT_RE = re.compile(r"^!\[(?P<label>.*?)(?: \(\d+x\d+ px\))?\]\(")


def description_block(element: ElementRow) -> str:
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
