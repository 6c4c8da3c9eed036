"""correct: per slide, the extracted Markdown (text, tables, OCR text, image descriptions)
rewritten as clean Markdown. Numbers are sacred: a correction that contains a number
absent from its input is discarded, the slide keeps its uncorrected Markdown, and the
chunk is flagged."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ragprep.prompts import PromptTemplate
from ragprep.providers import heuristic
from ragprep.providers.generator import Generator
from schemas.chunks import ChunkRow

_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")


def numbers_in(text: str) -> set[str]:
    """Numbers as written, thousands separators ignored ("1,000" == "1000")."""
    return {m.group().replace(",", "") for m in _NUMBER_RE.finditer(text)}


def invented_numbers(source: str, corrected: str) -> list[str]:
    allowed = numbers_in(source)
    return sorted(n for n in numbers_in(corrected) if n not in allowed)


async def correct_chunk(chunk: ChunkRow, generator: Generator, prompt: PromptTemplate) -> ChunkRow:
    if chunk.unit != "slide":
        return chunk.model_copy(update={"markdown_v0": chunk.markdown, "correction": "not_applicable", "correction_flags": []})
    generation = await generator.generate(
        "correct_slide",
        prompt,
        {"slide_number": chunk.slide, "document": Path(chunk.source_path).name, "slide_markdown": chunk.markdown},
        heuristic=lambda: heuristic.correct_markdown(chunk.markdown),
    )
    provenance = {
        "correct_provider": generation.provider,
        "correct_model": generation.model,
        "correct_prompt": generation.prompt_ref,
    }
    corrected = generation.text.strip()
    flags: list[str] = []
    if generation.flag:
        flags.append(generation.flag)
    elif not corrected:
        flags.append("empty_output")
    else:
        invented = invented_numbers(chunk.markdown, corrected)
        if invented:
            flags.append(f"numbers_not_in_source: {', '.join(invented[:10])}")
    if flags:
        return chunk.model_copy(
            update={"markdown_v0": chunk.markdown, "correction": "flagged", "correction_flags": flags, **provenance}
        )
    status = "unchanged" if corrected == chunk.markdown.strip() else "corrected"
    return chunk.model_copy(
        update={"markdown_v0": corrected, "correction": status, "correction_flags": [], **provenance}
    )


async def correct_chunks(
    chunks: Sequence[ChunkRow],
    generator: Generator,
    prompt: PromptTemplate,
    on_done: Callable[[ChunkRow], None] | None = None,
) -> list[ChunkRow]:
    async def run(chunk: ChunkRow) -> ChunkRow:
        result = await correct_chunk(chunk, generator, prompt)
        if on_done:
            on_done(result)
        return result

    return list(await asyncio.gather(*(run(c) for c in chunks)))
