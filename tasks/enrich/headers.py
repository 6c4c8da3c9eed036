"""headers: per test report, the configured header fields from its first slides and
file name; stored in ``headers`` and prepended to each of its chunks (``markdown_v1``).

A value is kept only if it occurs in what the model was shown (slides or file name):
a field not found stays empty and is reported in ``missing``, never invented.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import RootModel

from ragprep.engines.generator import Generator
from ragprep.markdown import KEY_VALUE_RE
from ragprep.prompts import PromptTemplate
from schemas.chunks import ChunkRow
from schemas.documents import DocumentRow
from schemas.headers import HeaderField, HeaderRow
from tasks.stage import run_items


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
    """A document's header fields from its first ``n_slides`` units; a model's value not found there is dropped and flagged."""
    slides = _first_units(chunks, n_slides)
    found: dict[str, dict] = {}  # filled by the heuristic rules: values with where each was read

    def offline_rule() -> dict[str, str | None]:
        found.update(extract_header(fields, slides, document.file_name))
        return {name: entry["value"] for name, entry in found.items()}

    generation = await generator.generate(
        "extract_header",
        prompt,
        {"fields": list(fields), "file_name": document.file_name, "slides": [{"number": n, "markdown": md} for n, md in slides]},
        heuristic=offline_rule,
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
    """One header row per test report that did not fail, extracted concurrently."""
    reports = [d for d in documents if d.doc_type == "test_report" and d.status != "failed"]
    by_doc: dict[str, list[ChunkRow]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    return await run_items(reports, lambda d: extract_header_row(d, by_doc.get(d.doc_id, []), fields, n_slides, generator, prompt))


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


# -- offline rule: key-value lines, two-column table rows, file-name tokens -----------------------

FIELD_SYNONYMS: dict[str, tuple[str, ...]] = {
    "test name": ("test name", "test", "test no", "test no.", "test id", "test number", "시험명", "시험 명", "시험 번호", "테스트명"),
    "region": ("region", "market", "지역", "시장"),
    "stage": ("stage", "state", "phase", "development stage", "단계", "개발 단계", "개발단계"),
    "purpose": ("purpose", "objective", "goal", "aim", "목적", "시험 목적", "시험목적"),
}
REGION_TOKENS = {
    "eu": "EU", "europe": "EU", "us": "US", "usa": "US", "na": "NA", "kr": "KR", "korea": "KR", "cn": "CN",
    "china": "CN", "jp": "JP", "japan": "JP", "in": "IN", "india": "IN", "global": "Global",
}
STAGE_TOKENS = {"p1": "P1", "p2": "P2", "proto": "Prototype", "dv": "DV", "pv": "PV", "sop": "SOP", "pilot": "Pilot"}


def _synonyms(field: str) -> tuple[str, ...]:
    return FIELD_SYNONYMS.get(field.lower(), (field.lower(),))


def _normalise_key(key: str) -> str:
    return " ".join(key.replace("*", "").strip().lower().split())


def extract_header(fields: Sequence[str], slides: Sequence[tuple[int, str]], file_name: str) -> dict[str, dict]:
    """Header field values with their source; a field not found has value None.

    Rules, in order: ``Key: value`` lines and two-column table rows on the first slides
    (field names and their synonyms, English and Korean); then, for Region and Stage
    only, a token in the file name (``..._EU_...``, ``..._P2_...``). Nothing else: a
    field the document does not state stays empty.
    """
    found: dict[str, dict] = {f: {"value": None, "source": None} for f in fields}
    lookup = {syn: f for f in fields for syn in _synonyms(f)}
    for number, markdown in slides:
        for line in markdown.splitlines():
            pairs: list[tuple[str, str, str]] = []
            if line.strip().startswith("|"):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 2 and cells[0] and cells[1] and set(cells[1]) - set("-: "):
                    pairs.append((cells[0], cells[1], "table"))
            else:
                match = KEY_VALUE_RE.match(line)
                if match:
                    pairs.append((match.group("key"), match.group("value"), "key-value"))
            for key, value, kind in pairs:
                field = lookup.get(_normalise_key(key))
                if field and found[field]["value"] is None:
                    found[field] = {"value": value.strip(), "source": f"slide {number} {kind}"}
    tokens = [t.lower() for t in re.split(r"[^0-9A-Za-z]+", Path(file_name).stem) if t]
    for field in fields:
        if found[field]["value"] is not None:
            continue
        table = REGION_TOKENS if field.lower() == "region" else STAGE_TOKENS if field.lower() in ("stage", "state") else None
        if table:
            hit = next((table[t] for t in tokens if t in table), None)
            if hit:
                found[field] = {"value": hit, "source": "file name"}
    return found
