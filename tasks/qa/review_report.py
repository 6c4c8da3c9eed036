"""review report: one self-contained HTML file in which domain experts review flagged QA pairs
and spot-check a random sample of the auto-approved ones.

``write_review_report(root)`` reads ``qa_pairs``, ``chunks``, ``elements``, ``documents`` and
``headers`` (when present) from ``<root>/tables/`` and writes ``<root>/review/report-<build>.html`` (plus a copy,
``<root>/review/latest.html``). The page opens without any network: CSS, JavaScript, data and
thumbnails are all inline, and a Content-Security-Policy meta tag forbids loading anything else.

What the page shows
    Counts of *all* pairs by flag and status at the top, then the *flagged* pairs (``flags``
    non-empty). Each pair is listed once, under its first flag (the order the flagger wrote
    them); every flag of the pair is shown as a badge together with its reason. The flag filter
    matches any of a pair's flags: selecting a flag shows one section with every pair carrying
    it. After them, a *spot check* section: a random sample of the auto-approved pairs
    (``approved``, no flags, no expert decision yet), ``spot_check_share`` of them but at least
    ``spot_check_min`` (all when there are fewer), drawn deterministically from the build id
    (``spot_check_sample``), so experts can catch what the rules miss. The critic's scores are
    shown on every pair that has them (columns ``critic_*``, read when present).
    Each pair shows its question, answer, reasons, the source chunk (Markdown rendered by
    markdown-it-py with raw HTML off, or raw), the file and slide/page, and a thumbnail:
    a PDF page rendered by PyMuPDF when the source file still exists, otherwise (slides, or a
    missing PDF) a *layout sketch*: an SVG of the unit's element boxes coloured by kind, with
    pictures embedded (downscaled), labelled "layout sketch" so no one takes it for a rendering.
    Then a *Report headers* section (``headers`` table): one card per test report with fields in
    ``review`` (missing or read with low confidence), the others collapsed; each field with its
    value, source and confidence, the report's first slide/page thumbnail, and an input to fill in,
    correct or confirm the value, or mark it "not stated" (null).

Decisions
    Approve / Reject / Edit per pair, or Approve / Reject every pair the current filter shows
    (flag, document, kind = flagged / spot check, ...; edits are kept; one undo), kept in memory
    and in ``localStorage`` under the build id. "Import decisions" merges a decisions file
    exported from this or an older report by QA id (the later ``decided_at`` wins; decisions for
    pairs not in this report are counted and left out). "Export decisions" needs the reviewer's
    name (it refuses with a message until one is entered; the name goes into every decision
    that has none) and downloads ``decisions-<build>.json`` in the ``schemas.review``
    ``DecisionsFile`` format (``ragprep-review-decisions/1``); header values go into its
    ``headers`` list (``HeaderDecision``), and an import restores them too (by report and field).

Security
    The page is rendered by ``tasks.qa.review_page``: Jinja2 with autoescaping puts every
    document-derived string (questions, answers, Markdown, titles, file names, reasons) into the
    markup as text; the chunk's Markdown goes through markdown-it-py with raw HTML off, links and
    images shown as text. The page script's state (pairs' ids and texts, header values) travels as
    JSON inside ``<script type="application/json" id="data">`` with ``<``, ``>``, ``&``, U+2028 and
    U+2029 written as ``\\uXXXX`` escapes, so no text can close the script element; the script builds
    DOM nodes with ``textContent``/``createElement`` only. The CSP lets only that one script run
    (its SHA-256 in ``script-src``) and loads nothing.

The build id is the first 12 hex digits of the SHA-256 of the sorted ``qa_id`` + flags lines:
the same pairs with the same flags give the same build (and the same decisions storage key).
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

from ragprep.settings import QaSettings
from ragprep.storage import Layout, atomic_write_bytes
from ragprep.tables import MissingTablesError, TableStore
from schemas.chunks import ChunkRow
from schemas.documents import DocumentRow
from schemas.elements import ElementRow
from schemas.headers import HeaderField, HeaderRow
from schemas.qa_pairs import FLAG_CODES, QaPairRow
from schemas.review import DECISIONS_FORMAT
from tasks.qa.review import chunk_bases, load_decisions, resolve_decisions
from tasks.qa.review_page import SPOT_CHECK_GROUP, json_for_script, render_report_html

__all__ = [  # json_for_script and render_report_html live in review_page (the page); re-exported here
    "build_id", "build_report_data", "critic_of", "headers_payload", "is_auto_approved", "json_for_script", "layout_sketch_svg",
    "render_pdf_page", "render_report_html", "spot_check_sample", "spot_check_size", "write_review_report",
]

STATUSES = ("approved", "pending", "rejected")
SPOT_CHECK_SHARE: float = QaSettings.model_fields["spot_check_share"].default
SPOT_CHECK_MIN: int = QaSettings.model_fields["spot_check_min"].default
CRITIC_SCORES = ("grounded", "standalone", "well_formed", "useful")
PDF_THUMB_DPI = 40
SLIDE_SIZE_PT = (720.0, 540.0)
PAGE_SIZE_PT = (612.0, 792.0)
SKETCH_PICTURE_MAX_PX = 240
KIND_COLOURS = {
    "title": "#3b6fd6",
    "text": "#8a94a6",
    "table": "#2e9e6a",
    "chart": "#d98a1f",
    "picture": "#9b59b6",
    "smartart": "#c0392b",
    "ocr_page": "#607d8b",
}


def build_id(pairs: Iterable[QaPairRow]) -> str:
    """First 12 hex digits of SHA-256 over the sorted ``qa_id<TAB>flag,flag`` lines."""
    lines = sorted(f"{p.qa_id}\t{','.join(p.flags)}" for p in pairs)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:12]


def is_auto_approved(pair: QaPairRow) -> bool:
    """Approved with no flags and no expert decision: what the spot checks sample."""
    return pair.status == "approved" and not pair.flags and not pair.review_decision


def spot_check_size(population: int, share: float = SPOT_CHECK_SHARE, minimum: int = SPOT_CHECK_MIN) -> int:
    """``share`` of the population (rounded up), at least ``minimum``, at most all of it."""
    wanted = math.ceil(round(share * population, 6))  # round first: 0.1 * 200 is 20.000000000000004
    return min(population, max(wanted, minimum))


def spot_check_sample(
    pairs: Iterable[QaPairRow], build: str, share: float = SPOT_CHECK_SHARE, minimum: int = SPOT_CHECK_MIN
) -> list[QaPairRow]:
    """The auto-approved pairs drawn for a spot check: ranked by SHA-256 of ``build<TAB>qa_id``,
    the first ``spot_check_size`` of them. The same build gives the same sample; a pair that
    stays in the population keeps its rank when others leave it."""
    population = [p for p in pairs if is_auto_approved(p)]
    ranked = sorted(population, key=lambda p: (hashlib.sha256(f"{build}\t{p.qa_id}".encode()).hexdigest(), p.qa_id))
    return ranked[: spot_check_size(len(population), share, minimum)]


def critic_of(pair: QaPairRow) -> dict | None:
    """The critic's verdict on a pair (scores 1-5, usable, reasons), or None when the judge has not run.

    Read with ``getattr`` so that rows without the ``critic_*`` columns work too."""
    scores = {name: getattr(pair, f"critic_{name}", None) for name in CRITIC_SCORES}
    usable = getattr(pair, "critic_usable", None)
    reasons = [str(r) for r in (getattr(pair, "critic_reasons", None) or [])]
    if usable is None and not reasons and all(v is None for v in scores.values()):
        return None
    return {"scores": scores, "usable": usable, "reasons": reasons}


def _resolve_source(source_path: str, root: Path) -> Path | None:
    """The source file if it still exists: as given (absolute or from the working directory),
    else relative to the root."""
    path = Path(source_path)
    for candidate in (path, root / path) if not path.is_absolute() else (path,):
        if candidate.is_file():
            return candidate
    return None


def _inside(root: Path, rel: str) -> Path | None:
    """``root / rel`` if it is an existing file inside ``root`` (image paths are data too)."""
    try:
        target = (root / rel).resolve()
        if target.is_file() and target.is_relative_to(root.resolve()):
            return target
    except (OSError, ValueError):
        pass
    return None


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def render_pdf_page(path: Path, page: int) -> str | None:
    """PNG data URL of a 1-based PDF page at ``PDF_THUMB_DPI``, or None if it cannot be rendered."""
    import pymupdf

    try:
        with pymupdf.open(path) as doc:
            if not 1 <= page <= doc.page_count:
                return None
            return _data_url("image/png", doc[page - 1].get_pixmap(dpi=PDF_THUMB_DPI).tobytes("png"))
    except Exception:  # a damaged or replaced file: fall back to the layout sketch
        return None


def _slide_size(path: Path | None) -> tuple[float, float] | None:
    if path is None or path.suffix.lower() != ".pptx":
        return None
    try:
        from pptx import Presentation

        prs = Presentation(str(path))
        return float(prs.slide_width.pt), float(prs.slide_height.pt)
    except Exception:
        return None


def _picture_data_url(path: Path, max_px: int) -> str | None:
    from PIL import Image

    try:
        with Image.open(path) as img:
            img.thumbnail((max_px, max_px))
            out = io.BytesIO()
            if img.mode in ("RGBA", "LA") or (img.mode == "P" and "transparency" in img.info):
                img.convert("RGBA").save(out, "PNG", optimize=True)
                return _data_url("image/png", out.getvalue())
            img.convert("RGB").save(out, "JPEG", quality=70)
            return _data_url("image/jpeg", out.getvalue())
    except Exception:
        return None


def layout_sketch_svg(
    elements: Sequence[ElementRow], root: Path, unit: str, number: int, size: tuple[float, float] | None = None
) -> str:
    """An SVG of one slide/page's element boxes (points, top-left origin), coloured by kind,
    pictures embedded when their file exists. It carries no document text, only kinds."""
    boxes = [e for e in elements if e.bbox and len(e.bbox) == 4 and e.kind != "notes"]
    default = SLIDE_SIZE_PT if unit == "slide" else PAGE_SIZE_PT
    width, height = size or default
    if boxes:  # boxes beyond the assumed size mean the unit is larger than assumed
        width = max(width, max(e.bbox[2] for e in boxes))
        height = max(height, max(e.bbox[3] for e in boxes))
    label_size = max(12.0, width / 30)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}" font-family="sans-serif">',
        f'<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="#ffffff" stroke="#9aa3b2" stroke-width="2"/>',
    ]
    for element in sorted(boxes, key=lambda e: e.order):
        x0, y0, x1, y1 = (float(v) for v in element.bbox)
        w, h = max(x1 - x0, 1.0), max(y1 - y0, 1.0)
        colour = KIND_COLOURS.get(element.kind, "#8a94a6")
        parts.append(
            f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{colour}" '
            f'fill-opacity="0.18" stroke="{colour}" stroke-width="2"/>'
        )
        picture = _inside(root, element.image_path) if element.image_path else None
        if picture is not None and (url := _picture_data_url(picture, SKETCH_PICTURE_MAX_PX)):
            parts.append(
                f'<image x="{x0:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{h:.1f}" '
                f'preserveAspectRatio="xMidYMid meet" href="{xml_escape(url)}"/>'
            )
        parts.append(
            f'<text x="{x0 + 4:.1f}" y="{y0 + label_size + 2:.1f}" font-size="{label_size:.1f}" '
            f'fill="{colour}" font-weight="bold">{xml_escape(element.kind)}</text>'
        )
    parts.append(
        f'<text x="{width - 8:.0f}" y="{height - 10:.0f}" font-size="{label_size * 1.2:.1f}" fill="#5b6472" '
        f'font-style="italic" text-anchor="end">layout sketch</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class _UnitKey:
    doc_id: str
    unit: str  # slide | page
    number: int

    @property
    def key(self) -> str:
        return f"{self.doc_id}/{self.unit}/{self.number}"


def _unit_of(pair: QaPairRow, chunk: ChunkRow | None) -> _UnitKey | None:
    slide = pair.slide if pair.slide is not None else (chunk.slide if chunk else None)
    if slide is not None:
        return _UnitKey(pair.doc_id, "slide", slide)
    page = pair.page_start if pair.page_start is not None else (chunk.page_start if chunk else None)
    if page is not None:
        return _UnitKey(pair.doc_id, "page", page)
    return None


class _Thumbnails:
    """One thumbnail per (document, unit, number), shared by every pair that points at it."""

    def __init__(self, root: Path, elements: Sequence[ElementRow]) -> None:
        self.root = root
        self.by_unit: dict[tuple[str, str, int], list[ElementRow]] = {}
        for element in elements:
            self.by_unit.setdefault((element.doc_id, element.unit, element.number), []).append(element)
        self.thumbs: dict[str, dict[str, str]] = {}
        self._slide_sizes: dict[str, tuple[float, float] | None] = {}

    def get(self, unit: _UnitKey, source_path: str) -> str:
        if unit.key in self.thumbs:
            return unit.key
        source = _resolve_source(source_path, self.root)
        label = f"{unit.unit} {unit.number}"
        src = None
        if unit.unit == "page" and source is not None and source.suffix.lower() == ".pdf":
            src = render_pdf_page(source, unit.number)
        if src is not None:
            self.thumbs[unit.key] = {"src": src, "kind": "page-render", "caption": f"{label}, rendered at {PDF_THUMB_DPI} dpi"}
            return unit.key
        if unit.unit == "slide" and source_path not in self._slide_sizes:
            self._slide_sizes[source_path] = _slide_size(source)
        size = self._slide_sizes.get(source_path) if unit.unit == "slide" else None
        svg = layout_sketch_svg(self.by_unit.get((unit.doc_id, unit.unit, unit.number), []), self.root, unit.unit, unit.number, size)
        why = "no slide renderer installed" if unit.unit == "slide" else "source file not found"
        self.thumbs[unit.key] = {
            "src": _data_url("image/svg+xml", svg.encode("utf-8")),
            "kind": "layout-sketch",
            "caption": f"{label}: layout sketch of element boxes, not a rendering ({why})",
        }
        return unit.key


def _counts(pairs: Sequence[QaPairRow]) -> dict:
    by_status = Counter(p.status for p in pairs)
    by_flag: dict[str, Counter] = {}
    for pair in pairs:
        for flag in dict.fromkeys(pair.flags) or ["(none)"]:
            by_flag.setdefault(flag, Counter())[pair.status] += 1
    order = [f for f in FLAG_CODES if f in by_flag] + sorted(f for f in by_flag if f not in FLAG_CODES and f != "(none)")
    if "(none)" in by_flag:
        order.append("(none)")
    statuses = list(STATUSES) + sorted(s for s in by_status if s not in STATUSES)
    return {
        "total": len(pairs),
        "flagged": sum(1 for p in pairs if p.flags),
        "statuses": statuses,
        "by_status": {s: by_status.get(s, 0) for s in statuses},
        "by_flag": [{"flag": f, "total": sum(by_flag[f].values()), **{s: by_flag[f].get(s, 0) for s in statuses}} for f in order],
    }


def _chunk_payload(chunk: ChunkRow) -> dict:
    if chunk.markdown_v1:
        markdown, version = chunk.markdown_v1, "Ver.1 (with report header)"
    elif chunk.markdown_v0:
        markdown, version = chunk.markdown_v0, "Ver.0 (corrected)"
    else:
        markdown, version = chunk.markdown, "as extracted"
    return {
        "chunk_id": chunk.chunk_id,
        "title": chunk.title,
        "unit": chunk.unit,
        "slide": chunk.slide,
        "page_start": chunk.page_start,
        "page_end": chunk.page_end,
        "heading_path": list(chunk.heading_path),
        "markdown": markdown,
        "markdown_version": version,
    }


def _pair_order(pair: QaPairRow) -> tuple:
    return (pair.source_path, pair.slide or 0, pair.page_start or 0, pair.qa_id)


def _first_unit(doc_id: str, document: DocumentRow | None) -> _UnitKey:
    """A report's first slide (its first page for a PDF): where its header is."""
    return _UnitKey(doc_id, "page" if document is not None and document.format == "pdf" else "slide", 1)


def _review_reason(field: HeaderField, review: Sequence[str]) -> str | None:
    if field.name not in review:
        return None
    return "missing" if field.value is None else "low confidence"


def headers_payload(headers: Sequence[HeaderRow], documents: dict[str, DocumentRow], thumbs: _Thumbnails) -> list[dict]:
    """One entry per test report for the "Report headers" section: its fields (value, source, confidence,
    whether and why an expert should look at it) and its first unit's thumbnail; reports with fields in
    ``review`` first, then by file name."""
    out = []
    for row in headers:
        document = documents.get(row.doc_id)
        first = _first_unit(row.doc_id, document)
        out.append({
            "doc_id": row.doc_id,
            "file_name": document.file_name if document else Path(row.source_path).name,
            "path": row.source_path,
            "review": list(row.review),
            "missing": list(row.missing),
            "needs_review": bool(row.review),
            "flag": row.flag,
            "provider": row.provider,
            "model": row.model,
            "fields": [{**f.model_dump(mode="json"), "review": _review_reason(f, row.review)} for f in row.fields],
            "unit": first.unit,
            "thumb": thumbs.get(first, row.source_path),
        })
    return sorted(out, key=lambda h: (not h["needs_review"], h["file_name"], h["doc_id"]))


def build_report_data(root: Path, *, spot_check_share: float = SPOT_CHECK_SHARE, spot_check_min: int = SPOT_CHECK_MIN) -> dict:
    """Everything the page shows, as plain JSON-able data: the flagged pairs, the spot-check
    sample of auto-approved pairs (``spot_check_sample``), the counts of all pairs, and the test reports'
    header fields (``headers_payload``; empty without a ``headers`` table)."""
    store = TableStore(Layout(root))
    if not store.exists("qa_pairs"):
        raise MissingTablesError(f"{store.path('qa_pairs')}: no qa_pairs table; run `ragprep qa --root {root}` first")
    pairs: list[QaPairRow] = store.read("qa_pairs")
    chunks = {c.chunk_id: c for c in store.read("chunks", optional=True)}
    documents = {d.doc_id: d for d in store.read("documents", optional=True)}
    build = build_id(pairs)
    flagged = sorted((p for p in pairs if p.flags), key=_pair_order)
    spot = sorted(spot_check_sample(pairs, build, spot_check_share, spot_check_min), key=_pair_order)
    shown = [*flagged, *spot]
    headers: list[HeaderRow] = store.read("headers", optional=True)
    wanted_units = {(p.doc_id, u) for p in shown for u in ("slide", "page")}
    first_units = {(u.doc_id, u.unit, u.number) for u in (_first_unit(h.doc_id, documents.get(h.doc_id)) for h in headers)}
    elements = [e for e in store.read("elements", optional=True)
                if (e.doc_id, e.unit) in wanted_units or (e.doc_id, e.unit, e.number) in first_units]
    thumbs = _Thumbnails(root, elements)

    def file_name(pair: QaPairRow) -> str:
        doc = documents.get(pair.doc_id)
        return doc.file_name if doc else Path(pair.source_path).name

    out_pairs, out_chunks, docs = [], {}, {}
    for pair in shown:
        chunk = chunks.get(pair.chunk_id)
        if chunk is not None and chunk.chunk_id not in out_chunks:
            out_chunks[chunk.chunk_id] = _chunk_payload(chunk)
        unit = _unit_of(pair, chunk)
        record = pair.model_dump(mode="json")
        record.update(
            file_name=file_name(pair),
            group=pair.flags[0] if pair.flags else SPOT_CHECK_GROUP,
            spot_check=not pair.flags,
            critic=critic_of(pair),
            thumb=thumbs.get(unit, pair.source_path) if unit else None,
            chunk_found=chunk is not None,
        )
        out_pairs.append(record)
        entry = docs.setdefault(pair.doc_id, {"doc_id": pair.doc_id, "file_name": record["file_name"], "path": pair.source_path,
                                              "n_flagged": 0, "n_spot_check": 0})
        entry["n_spot_check" if record["spot_check"] else "n_flagged"] += 1
    present = {f for p in flagged for f in p.flags}
    flag_order = [f for f in FLAG_CODES if f in present] + sorted(present - set(FLAG_CODES))
    return {
        "format": DECISIONS_FORMAT,
        "build": build,
        "generated_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "counts": _counts(pairs),
        "flag_order": flag_order,
        "spot_check": {
            "auto_approved": sum(1 for p in pairs if is_auto_approved(p)),
            "sampled": len(spot),
            "share": spot_check_share,
            "min": spot_check_min,
        },
        "documents": sorted(docs.values(), key=lambda d: (d["file_name"], d["doc_id"])),
        "pairs": out_pairs,
        "chunks": out_chunks,
        "headers": headers_payload(headers, documents, thumbs),
        "orphaned": orphaned_payload(pairs, list(chunks.values()), documents, root),
        "thumbs": thumbs.thumbs,
    }


def orphaned_payload(
    pairs: Sequence[QaPairRow], chunks: Sequence[ChunkRow], documents: dict[str, DocumentRow], root: Path
) -> list[dict]:
    """The stored decisions that apply to no current pair (``tasks.qa.review.resolve_decisions``; carried-over ones
    are applied, not listed): what was decided, on which question and answer, by whom."""
    resolution = resolve_decisions(pairs, load_decisions(root), chunk_bases(chunks))
    doc_of = {c.chunk_id: c.doc_id for c in chunks}
    out = []
    for decision in sorted(resolution.orphaned, key=lambda d: (d.applied_at, d.qa_id)):
        document = documents.get(doc_of.get(decision.chunk_id or "", ""))
        out.append({
            "qa_id": decision.qa_id, "decision": decision.decision, "reviewer": decision.reviewer,
            "question": decision.pair_question or decision.question, "answer": decision.pair_answer or decision.answer,
            "file_name": document.file_name if document else None, "chunk_id": decision.chunk_id,
            "applied_at": decision.applied_at.replace(microsecond=0).isoformat(), "source_file": Path(decision.source_file).name,
        })
    return out


def write_review_report(
    root: Path, out: Path | None = None, *, spot_check_share: float = SPOT_CHECK_SHARE, spot_check_min: int = SPOT_CHECK_MIN
) -> Path:
    """Write the review report for the tables under ``root`` and return its path.

    Default ``out``: ``<root>/review/report-<build>.html``; then ``<root>/review/latest.html``
    is overwritten with a copy. An explicit ``out`` is written alone. ``spot_check_share`` and
    ``spot_check_min`` size the spot-check sample (``settings.qa``; defaults 10 %, 20)."""
    root = Path(root)
    data = build_report_data(root, spot_check_share=spot_check_share, spot_check_min=spot_check_min)
    html = render_report_html(data).encode("utf-8")
    if out is None:
        layout = Layout(root)
        out = layout.review_dir / f"report-{data['build']}.html"
        _write(out, html)
        _write(layout.latest_review_report, html)  # a copy, replaced atomically
        return out
    out = Path(out)
    _write(out, html)
    return out


def _write(path: Path, data: bytes) -> None:
    atomic_write_bytes(path, data)
    path.chmod(0o644)  # a temporary file is created 0600; the report is meant to be shared
