"""headers: per test report, the configured header fields from its first slides and
file name; stored in ``headers`` and prepended to each of its chunks (``markdown_v1``).

A value is kept only if it occurs in what the model was shown (slides or file name):
a field not found stays empty and is reported in ``missing``, never invented.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from pydantic import RootModel

from ragprep.prompts import PromptTemplate
from ragprep.providers import heuristic
from ragprep.providers.generator import Generator
from schemas.chunks import ChunkRow
from schemas.documents import DocumentRow
from schemas.headers import HeaderField, HeaderRow


class HeaderReply(RootModel[dict[str, str | None]]):
    """What a model must return: field name -> stated value or null."""


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def header_block(fields: Sequence[HeaderField]) -> str:
    """The small block prepended to each chunk: one ``Field: value`` line per found field."""
    lines = [f"{f.name}: {f.value}" for f in fields if f.value]
    return "\n".join(lines)


def _first_units(chunks: Sequence[ChunkRow], n: int) -> list[tuple[int, str]]:
    units = []
    for chunk in chunks:
        number = chunk.slide if chunk.slide is not None else chunk.page_start
        if number is not None and number <= n:
            units.append((number, chunk.markdown_v0 or chunk.markdown))
    return sorted(units)


async def extract_header_row(
    document: DocumentRow, chunks: Sequence[ChunkRow], fields: Sequence[str], n_slides: int, generator: Generator, prompt: PromptTemplate
) -> HeaderRow:
    slides = _first_units(chunks, n_slides)
    found: dict[str, dict] = {}  # filled by the heuristic rules: values with where each was read

    def rules() -> dict[str, str | None]:
        found.update(heuristic.extract_header(fields, slides, document.file_name))
        return {name: entry["value"] for name, entry in found.items()}

    generation = await generator.generate(
        "extract_header",
        prompt,
        {"fields": list(fields), "file_name": document.file_name, "slides": [{"number": n, "markdown": md} for n, md in slides]},
        heuristic=rules,
        output_model=HeaderReply,
    )
    sources = found if generation.provider == "heuristic" else {}
    shown = _squash(" ".join(md for _, md in slides) + " " + document.file_name)
    reply = generation.data or {}
    values: list[HeaderField] = []
    dropped: list[str] = []
    for name in fields:
        value = reply.get(name)
        value = value.strip() if isinstance(value, str) and value.strip() else None
        if value is not None and _squash(value) not in shown and generation.provider != "heuristic":
            dropped.append(name)
            value = None
        source = sources.get(name, {}).get("source") if sources else ("model" if value else None)
        values.append(HeaderField(name=name, value=value, source=source if value else None))
    flag = generation.flag
    if dropped:
        flag = (flag + "; " if flag else "") + f"values_not_in_source: {', '.join(dropped)}"
    return HeaderRow(
        doc_id=document.doc_id,
        source_path=document.path,
        fields=values,
        missing=[f.name for f in values if f.value is None],
        header_block=header_block(values),
        provider=generation.provider,
        model=generation.model,
        prompt=generation.prompt_ref,
        prompt_sha256=generation.prompt_sha256,
        flag=flag,
    )


async def extract_headers(
    documents: Sequence[DocumentRow],
    chunks: Sequence[ChunkRow],
    fields: Sequence[str],
    n_slides: int,
    generator: Generator,
    prompt: PromptTemplate,
) -> list[HeaderRow]:
    reports = [d for d in documents if d.doc_type == "test_report" and d.status != "failed"]
    by_doc: dict[str, list[ChunkRow]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    return list(
        await asyncio.gather(
            *(extract_header_row(d, by_doc.get(d.doc_id, []), fields, n_slides, generator, prompt) for d in reports)
        )
    )


def apply_headers(chunks: Sequence[ChunkRow], headers: Sequence[HeaderRow]) -> list[ChunkRow]:
    """markdown_v1 = header block + markdown_v0 for reports; = markdown_v0 otherwise."""
    blocks = {h.doc_id: h.header_block for h in headers if h.header_block}
    out = []
    for chunk in chunks:
        v0 = chunk.markdown_v0 if chunk.markdown_v0 is not None else chunk.markdown
        block = blocks.get(chunk.doc_id)
        v1 = f"{block}\n\n---\n\n{v0}" if block else v0
        out.append(chunk.model_copy(update={"markdown_v0": v0, "markdown_v1": v1}))
    return out
