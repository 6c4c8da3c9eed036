"""qa: question-answer pairs per chunk, flagged, with expert decisions applied.

Pairs per chunk follow its information content (``tasks.qa.budget``: one per fact it holds, else one per
``qa.tokens_per_pair`` tokens, capped by ``qa.max_per_chunk``), mix question types, and include questions only a chunk's table,
chart or picture can answer. Questions name what users know a document by (the report's
test name and stage from ``headers``, else the document's real title, else the chunk's
heading), never its file name. A chunk the heuristic rules ask nothing of gets the coverage rules' questions
(``tasks.qa.rules.coverage``: procedure steps and set-up statements by default; also a protocol's test conditions and
values stated without a modal with ``qa.coverage_rules``). A chunk whose generation fails is recorded in
``qa_failures`` and retried on the next run; the run goes on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from ragprep.engines.generator import Generator
from ragprep.ids import stable_id
from ragprep.prompts import PromptTemplate
from ragprep.settings import Settings
from schemas.chunks import ChunkRow
from schemas.documents import DocumentRow
from schemas.elements import ElementRow
from schemas.headers import HeaderRow
from schemas.qa_pairs import QaFailureRow, QaPairRow
from tasks.ingest.ownership import owned_chunk_ids
from tasks.qa import budget, handles, pages, rules
from tasks.qa.doc_kind import document_kind
from tasks.qa.flags import ambiguous_gold_flags, duplicate_flags, language_of, pair_flags
from tasks.qa.review import apply_review, chunk_bases
from tasks.qa.rules.coverage import COVERAGE_SOURCES, DEFAULT_COVERAGE_SOURCES, coverage_candidates
from tasks.stage import run_items

PROVENANCE = {"chunk_id", "doc_id", "source_path", "slide", "page_start", "page_end"}
"""The chunk's fields every QA pair carries as its provenance."""

QUESTION_TYPES = ("factual", "numeric", "comparative", "procedural", "causal", "definitional")
MODALITIES = ("text", "table", "chart", "image")
MIN_HEADER_CONFIDENCE = 0.6
"""Header values read with less confidence (a guess from the file name) never become a question's handle."""


class GeneratedPair(BaseModel):
    question: str
    answer: str
    question_type: str = "factual"
    target_modality: str = "text"
    rule: str = ""
    """The heuristic generator's rule that made the pair (``tasks.qa.rules.source_rule``); a model leaves it empty."""
    evidence_element_id: SkipJsonSchema[str | None] = None
    """The table, chart or picture a rule read the pair from; not asked of a model (it sees no element ids)."""


class GeneratedPairs(BaseModel):
    pairs: list[GeneratedPair] = Field(default_factory=list)


def _header_value(header: HeaderRow | None, name: str) -> str:
    for item in header.fields if header else []:
        confident = item.source != "file name" and (getattr(item, "confidence", None) or 1.0) >= MIN_HEADER_CONFIDENCE
        if item.name == name and item.value and confident:
            return item.value.strip()
    return ""


_TITLE_STOPWORDS = frozenset("the and for with from into over under about a an of in on to at by or its their".split())


def _title_supported(title: str, text: str) -> bool:
    """A document's stored title is trusted when most (60%) of its content words occur, as words, in the
    document (a deck's core-properties title is often left over from the template it was copied from)."""
    words = [w for w in re.findall(r"[^\W_]+", title.lower()) if len(w) > 1 and w not in _TITLE_STOPWORDS]
    body = set(re.findall(r"[^\W_]+", text.lower()))
    return not words or sum(w in body for w in words) >= 0.6 * len(words)


def _good_title(title: str, file_name: str, heads: set[str]) -> str:
    """The title repaired (glyphs, a doubled heading) when it is a real handle: not a placeholder, not a running head."""
    title = handles.undouble(handles.clean_name(title))
    if (not rules.real_title(title, file_name) or handles.placeholder(title) or handles.section_heading(title)
            or handles.is_running_head(title, heads)):
        return ""
    return title


def _document_title(document: DocumentRow | None, chunks: Sequence[ChunkRow]) -> str:
    file_name = document.file_name if document else (Path(chunks[0].source_path).name if chunks else "")
    text = "\n".join(c.markdown for c in chunks)
    heads = handles.running_heads([(c.title, c.part_index) for c in chunks])
    title = _good_title((document.title or "").strip() if document else "", file_name, heads)
    if title and _title_supported(title, text):
        return title
    title = ""
    for chunk in chunks:  # the title slide, or the first chapter of a book (front matter and covers passed over)
        raw = chunk.heading_path[0] if chunk.heading_path else chunk.title
        heading = rules.strip_numbering(raw)
        if rules.is_skipped_heading(heading):
            continue
        on_title_page = (chunk.slide == 1 or chunk.page_start == 1) and not handles.section_heading(raw)
        title = _good_title(heading, file_name, heads) if on_title_page else ""  # never a later slide's heading
        if not title and chunk.slide == 1:  # a title slide headed "Report": its subtitle line names the deck
            title = handles.title_slide_subtitle(chunk.markdown)
            title = title if rules.real_title(title, file_name) and not handles.is_running_head(title, heads) else ""
        break
    return title


_DATE_KEYS_RE = re.compile(r"^\s*(?:[-*]\s*)?(?:date|meeting date|일시|날짜|회의 일시)\s*[:：]\s*(?P<date>\S.{3,40}?)\s*$",
                           re.IGNORECASE | re.MULTILINE)


def _meeting_date(chunks: Sequence[ChunkRow]) -> str:
    """The date a meeting's notes state (a "Date:" / "일시:" line on its first chunks), or ''."""
    for chunk in chunks[:3]:
        found = _DATE_KEYS_RE.search(chunk.qa_text)
        if found:
            return found.group("date")
    return ""


def _kind(document: DocumentRow | None, source_path: str) -> str:
    doc_type = document.doc_type if document else ""
    if doc_type == "test_report":
        return "report"
    if doc_type == "meeting_note":
        return "meeting"
    return "presentation" if source_path.lower().endswith(".pptx") else "document"


def document_handles(
    chunks: Sequence[ChunkRow], documents: Sequence[DocumentRow] = (), headers: Sequence[HeaderRow] = ()
) -> dict[str, rules.Handle]:
    """Per document: the handle questions name it by (test name and stage, real title, kind); no section yet."""
    by_doc: dict[str, list[ChunkRow]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    docs = {d.doc_id: d for d in documents}
    heads = {h.doc_id: h for h in headers}
    out = {}
    for doc_id, members in by_doc.items():
        members.sort(key=lambda c: (c.slide or 0, c.page_start or 0, c.part_index))
        document, header = docs.get(doc_id), heads.get(doc_id)
        test_name = _header_value(header, "Test Name")
        kind = _kind(document, members[0].source_path)
        title = _document_title(document, members)
        if test_name and handles.load_case_only(test_name):
            test_name = ""  # "ODB 64 kph" alone names no test: the report's own title names it, or nothing does
        if not title and not test_name:
            first = [c.markdown for c in members if (c.page_start or c.slide or 1) <= 2]
            title = handles.identifier([c.title for c in members], first)
            kind = "standard" if title else kind
        out[doc_id] = rules.Handle(
            test_name=test_name, stage=_header_value(header, "Stage") if test_name else "",
            title=title, kind=kind, date=_meeting_date(members) if kind == "meeting" else "",
            running_heads=frozenset(handles.running_heads([(c.title, c.part_index) for c in members])),
            doc_kind=document_kind([c.qa_text for c in members], all(c.unit == "slide" for c in members)),
        )
    return out


def carried_sections(chunks: Sequence[ChunkRow]) -> dict[str, str]:
    """Per chunk, the last heading that stood before it in its document (its own or an inner heading of an earlier
    chunk): a chunk the chunker titled by a figure or table caption ("Figure 3 MGA Roof Crush Test System") stands
    under that section ("TESTING"), not under its caption."""
    from tasks.qa.rules.sections import inner_headings, is_caption

    by_doc: dict[str, list[ChunkRow]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    out: dict[str, str] = {}
    for members in by_doc.values():
        members.sort(key=lambda c: (c.slide or 0, c.page_start or 0, c.chapter_index or 0, c.part_index))
        last = ""
        for chunk in members:
            out[chunk.chunk_id] = last
            own = chunk.heading_path[-1] if chunk.heading_path else chunk.title
            if chunk.slide is None and not is_caption(own):
                last = own
            inner = [h for _, h in inner_headings(chunk.qa_text) if not is_caption(h)]
            last = inner[-1] if inner and chunk.slide is None else last
    return out


def chunk_handle(chunk: ChunkRow, document: rules.Handle | None, carried: str = "") -> rules.Handle:
    """The document's handle with the chunk's own heading (a slide title or the deepest section heading) when it is
    real; a chunk titled by a figure or table caption takes the section it stands in (``carried``) instead."""
    from tasks.qa.rules.sections import is_caption

    base = document or rules.Handle()
    heading = chunk.heading_path[-1] if chunk.heading_path else chunk.title
    heading = handles.clean_name(rules.strip_numbering(carried if carried and is_caption(heading) else heading))
    file_name = Path(chunk.source_path).name
    truncated = heading.endswith(("…", "..."))  # a heading cut by the chunker is no name ("... Applicable unless a vehicle is…")
    usable = (rules.real_title(heading, file_name) and not rules.is_skipped_heading(heading) and not truncated
              and not handles.table_header(heading))
    section = heading if usable and not handles.is_running_head(heading, set(base.running_heads)) else ""
    kind = "slide" if chunk.slide is not None else "section"
    title = base.title
    if base.kind == "standard" and chunk.heading_path:  # an extract that carries a second standard ("§ 571.227 ...")
        own = handles.identifier([], [chunk.heading_path[0]])
        title = own if own and own != base.title else title
    if section and base.kind == "standard" and handles.identifier([], [section]) == title:
        section = ""  # "§ 571.214 Standard No. 214; Side impact protection" is the standard itself, not a section of it
    return rules.Handle(base.test_name, base.stage, title, base.kind, section, kind, base.date, base.running_heads,
                        base.doc_kind)


def pairs_wanted(chunk: ChunkRow, settings: Settings, view: rules.ChunkView | None = None) -> int:
    """Pairs to ask of a chunk, by information content (``tasks.qa.budget``): one per fact it holds, else one per
    ``qa.tokens_per_pair`` tokens; between 1 and ``qa.max_per_chunk``."""
    units = budget.information_units(view) if view is not None else 0
    return budget.pairs_for(units, chunk.token_count, settings.qa.tokens_per_pair, settings.qa.max_per_chunk)


def chunk_view(
    chunk: ChunkRow, elements: dict[str, ElementRow], handle: rules.Handle | None = None, carried: str = ""
) -> rules.ChunkView:
    """What the QA step sees of a chunk: its Markdown (corrected when available), language, handle, tables, charts and
    OCR'd pictures; ``carried``: the section it stands in (``carried_sections``)."""
    members = [elements[e] for e in chunk.element_ids if e in elements]
    markdown = rules.ocr_pages_as_prose(chunk.qa_text)
    return rules.ChunkView(
        title=chunk.title,
        language=language_of(markdown),
        markdown=markdown,
        tables=[(e.element_id, e.text) for e in members if e.kind == "table"],
        charts=[(e.element_id, (json.loads(e.meta).get("title") if e.meta else None) or "", e.text) for e in members if e.kind == "chart"],
        pictures=[(e.element_id, e.ocr_text) for e in members if e.kind == "picture" and e.ocr_text],
        handle=chunk_handle(chunk, handle, carried),
        heading_path=list(chunk.heading_path),
    )


def prompt_variables(view: rules.ChunkView, n: int) -> dict[str, object]:
    """The ``generate_qa`` prompt's variables: exactly the ones the template uses (rendering is strict)."""
    modalities = sorted({m for m, present in (("table", view.tables), ("chart", view.charts), ("image", view.pictures)) if present})
    return {
        "n_pairs": n,
        "handle": rules.doc_phrase(view) or rules.where(view),
        "section": view.handle.section,
        "language": view.language,
        "modalities": modalities,
        "question_types": list(QUESTION_TYPES),
        "chunk_markdown": view.markdown,
    }


async def generate_for_chunk(
    chunk: ChunkRow, view: rules.ChunkView, settings: Settings, generator: Generator, prompt: PromptTemplate,
    chunk_pages: pages.ChunkPages | None = None,
) -> tuple[list[QaPairRow], QaFailureRow | None]:
    """The pending QA pairs generated for one chunk (seen through ``view``), or a failure row when the reply was unusable.
    With ``chunk_pages`` each pair cites the page(s) its answer is on (``tasks.qa.pages``), else its chunk's pages."""
    n = pairs_wanted(chunk, settings, view)
    sources = COVERAGE_SOURCES if settings.qa.coverage_rules else DEFAULT_COVERAGE_SOURCES
    fallback = partial(coverage_candidates, sources=sources)
    generation = await generator.generate(
        "generate_qa",
        prompt,
        prompt_variables(view, n),
        heuristic=lambda: {"pairs": [c.__dict__ for c in rules.generate(view, n) or fallback(view, n)]},
        output_model=GeneratedPairs,
    )
    if generation.data is None:
        return [], QaFailureRow(chunk_id=chunk.chunk_id, source_path=chunk.source_path, reason=generation.flag or "no output")
    evidence_by_modality = {"table": view.tables, "chart": view.charts, "image": view.pictures}
    known = {item[0] for items in evidence_by_modality.values() for item in items}
    rows: list[QaPairRow] = []
    for raw in generation.data["pairs"]:
        pair = GeneratedPair.model_validate(raw)
        qtype = pair.question_type if pair.question_type in QUESTION_TYPES else "factual"
        modality = pair.target_modality if pair.target_modality in MODALITIES else "text"
        named = pair.evidence_element_id if pair.evidence_element_id in known else None  # the rule's own element
        evidence = named or (
            evidence_by_modality[modality][0][0] if modality != "text" and evidence_by_modality[modality] else None
        )
        question, answer = pair.question.strip(), pair.answer.strip()
        cited = pages.cite(chunk_pages, question, answer, named) if chunk_pages else {}
        rows.append(
            QaPairRow(
                qa_id=stable_id("qa", chunk.chunk_id, qtype, question, answer),
                **{**chunk.model_dump(include=PROVENANCE), **cited},
                question=question, answer=answer, generated_question=question, generated_answer=answer,
                question_type=qtype, target_modality=modality, evidence_element_id=evidence,
                language=language_of(question), status="pending", provider=generation.provider,
                generator_rule=(pair.rule or None) if generation.provider == "heuristic" else None,
                model=generation.model, prompt=generation.prompt_ref, prompt_sha256=generation.prompt_sha256,
            )
        )
    return rows, None


def flag_pairs(pairs: Sequence[QaPairRow], chunks: dict[str, ChunkRow], settings: Settings) -> list[QaPairRow]:
    """The pairs with their flags, all pending: the judge stage (``tasks.qa.judge``) approves the ones its critic passes.

    Repeats are judged with the pairs of chunks their document owns (``tasks.ingest.ownership``) first: of two
    documents printing one standard, the copy in the standard's own document is the one kept clean."""
    owned = owned_chunk_ids(list(chunks.values()))
    order = sorted(range(len(pairs)), key=lambda i: pairs[i].chunk_id not in owned)  # stable: owned first
    ranked = [pairs[i] for i in order]
    duplicates = [None] * len(pairs)
    ambiguous = [None] * len(pairs)
    found_duplicates = duplicate_flags([p.question for p in ranked], [p.chunk_id for p in ranked], settings.qa.duplicate_threshold)
    found_ambiguous = ambiguous_gold_flags([(p.question, p.answer) for p in ranked], [p.chunk_id for p in ranked],
                                           [p.chunk_id in owned for p in ranked])
    for position, index in enumerate(order):
        duplicates[index], ambiguous[index] = found_duplicates[position], found_ambiguous[position]
    out = []
    for pair, duplicate, repeated in zip(pairs, duplicates, ambiguous):
        chunk = chunks[pair.chunk_id]
        found = pair_flags(pair.question, pair.answer, chunk.qa_text, settings)
        if repeated:
            found.append(repeated)  # the same pair from another chunk: which chunk is the gold is ambiguous
        elif duplicate:
            found.append(duplicate)
        codes = list(dict.fromkeys(code for code, _ in found))
        reasons = [f"{code}: {reason}" for code, reason in found]
        out.append(pair.model_copy(update={"flags": codes, "flag_reasons": reasons, "status": "pending"}))
    return out


async def generate_pairs(
    chunks: Sequence[ChunkRow],
    elements: Sequence[ElementRow],
    settings: Settings,
    generator: Generator,
    prompt: PromptTemplate,
    on_done: Callable[[object], None] | None = None,
    handles: dict[str, rules.Handle] | None = None,
) -> tuple[list[QaPairRow], list[QaFailureRow]]:
    """QA pairs of every chunk, generated concurrently (duplicates kept once), and a failure row per chunk that failed.

    ``handles`` (from :func:`document_handles`) name each document in its questions; without them a
    chunk is named by its own heading only.
    """
    by_id = {e.element_id: e for e in elements}
    handles = handles if handles is not None else document_handles(chunks)
    carried = carried_sections(chunks)

    async def generate(chunk: ChunkRow):
        try:
            view = chunk_view(chunk, by_id, handles.get(chunk.doc_id), carried.get(chunk.chunk_id, ""))
            return await generate_for_chunk(chunk, view, settings, generator, prompt, pages.chunk_pages(chunk, by_id))
        except Exception as exc:  # one chunk's bug must not abort the run
            return [], QaFailureRow(chunk_id=chunk.chunk_id, source_path=chunk.source_path, reason=f"{type(exc).__name__}: {exc}")

    results = await run_items(chunks, generate, on_done)
    pairs = [p for rows, _ in results for p in rows]
    failures = [f for _, f in results if f is not None]
    unique: dict[str, QaPairRow] = {}
    for pair in pairs:  # the same pair generated twice for a chunk is kept once
        unique.setdefault(pair.qa_id, pair)
    return list(unique.values()), failures


def build_qa_pairs(
    pairs: Sequence[QaPairRow], chunks: Sequence[ChunkRow], settings: Settings, decisions: dict
) -> list[QaPairRow]:
    """Flags, then the experts' decisions (rejected pairs dropped, edits applied; a decision made on a pair that was
    regenerated under a new QA id, e.g. after a report header was filled, carries over to it)."""
    flagged = flag_pairs(pairs, {c.chunk_id: c for c in chunks}, settings)
    return apply_review(flagged, decisions, chunk_bases(chunks))
