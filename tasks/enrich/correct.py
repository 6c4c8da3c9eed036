"""correct: per slide, the extracted Markdown (text, tables, OCR text, image descriptions)
rewritten as clean Markdown. Numbers are sacred: a correction that contains a number
absent from its input is discarded, the slide keeps its uncorrected Markdown, and the
chunk is flagged. So is a correction that adds markup or instruction-like text
(``suspicious_content``, ``ragprep.untrusted``)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path

from ragprep.engines.generator import Generator
from ragprep.markdown import row_cells
from ragprep.prompts import PromptTemplate
from ragprep.text import numbers_in
from ragprep.untrusted import added_suspicious
from schemas.chunks import ChunkRow
from tasks.stage import run_items


def invented_numbers(source: str, corrected: str) -> list[str]:
    """Numbers in ``corrected`` that are absent from ``source``, sorted."""
    allowed = numbers_in(source)
    return sorted(n for n in numbers_in(corrected) if n not in allowed)


async def correct_chunk(chunk: ChunkRow, generator: Generator, prompt: PromptTemplate) -> ChunkRow:
    """The chunk with ``markdown_v0`` set: the correction of a slide, or the uncorrected Markdown when flagged or not a slide."""
    if chunk.unit != "slide":
        return chunk.model_copy(update={"markdown_v0": chunk.markdown, "correction": "not_applicable", "correction_flags": []})
    generation = await generator.generate(
        "correct_slide",
        prompt,
        {"slide_number": chunk.slide, "document": Path(chunk.source_path).name, "slide_markdown": chunk.markdown},
        heuristic=lambda: correct_markdown(chunk.markdown),
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
        if suspicious := added_suspicious(corrected, chunk.markdown):  # model output is untrusted
            flags.append(f"suspicious_content: {suspicious}")
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
    """Correct the chunks concurrently, calling ``on_done`` with each result; the results in input order."""
    return await run_items(chunks, lambda c: correct_chunk(c, generator, prompt), on_done)


# -- offline rule: whitespace, bullet and table clean-up (no word or number changes) --------------


_BULLET_RE = re.compile(r"^(\s*)(?:[•▪●◦‣➢➤►▸■□✓✔–—]\s*|[-*]\s+)(?=\S)")
"""A bullet glyph (spacing optional), or a Markdown '-'/'*' bullet (a space must follow:
'**bold**' and '-5 mm' are not bullets)."""
_SPACES_RE = re.compile(r"(?<=\S)[ \t]{2,}")
_HYPHEN_BREAK_RE = re.compile(r"([a-z])-\n([a-z])")


def _clean_table_block(lines: list[str]) -> list[str]:
    rows = [row_cells(line) for line in lines]
    width = max(len(r) for r in rows)
    out = []
    for i, row in enumerate(rows):
        if i == 1 and all(set(c) <= set("-: ") for c in row):
            out.append("|" + "|".join(["---"] * width) + "|")
            continue
        row = row + [""] * (width - len(row))
        out.append("| " + " | ".join(" ".join(c.split()) for c in row) + " |")
    return out


def correct_markdown(markdown: str) -> str:
    """Normalise a slide's Markdown without changing its words or numbers.

    Unicode NFC and no-break spaces; bullet glyphs (•, ▪, ➢, ...) become Markdown
    bullets keeping their indentation; runs of spaces inside a line collapse; words
    hyphenated across a line break are joined; tables get one cell count per row;
    repeated identical lines next to each other (duplicated text boxes) are dropped;
    no more than one blank line in a row.
    """
    text = unicodedata.normalize("NFC", markdown).replace("\u00a0", " ").replace("\u200b", "")
    text = _HYPHEN_BREAK_RE.sub(r"\1\2", text)
    lines = text.split("\n")
    out: list[str] = []
    table: list[str] = []

    def flush_table() -> None:
        if table:
            out.extend(_clean_table_block(table))
            table.clear()

    for raw in lines:
        line = raw.rstrip()
        if line.lstrip().startswith("|") and line.rstrip().endswith("|"):
            table.append(line)
            continue
        flush_table()
        if not line.lstrip().startswith(">") and not line.lstrip().startswith("!["):
            match = _BULLET_RE.match(line)
            if match and not line.lstrip().startswith("---"):
                line = match.group(1) + "- " + line[match.end():]
            indent = len(line) - len(line.lstrip())
            line = line[:indent] + _SPACES_RE.sub(" ", line[indent:])
        if line and out and line == out[-1] and not line.startswith("#"):
            continue
        if not line and out and not out[-1]:
            continue
        out.append(line)
    flush_table()
    return "\n".join(out).strip() + "\n" if out else ""
