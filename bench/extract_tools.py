"""The tools bench/extract.py times, each run in its own worker process.

Every tool lives in a separate process (multiprocessing, spawn) so that one tool's
imports cannot change another's behaviour (importing pymupdf4llm, for one, activates
PyMuPDF's layout module process-wide) and a crash in a peer cannot take the bench down.
The parent sends one request at a time; the worker times only the tool call itself (wall
clock and CPU time, the latter to see how many cores a tool keeps busy) and counts what came
out after the clock stopped.
"""

from __future__ import annotations

import re
import resource
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

TOOLS = ("baseline", "ragprep", "pymupdf4llm", "unstructured")

_TABLE_RULE_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _cpu_now() -> float:
    """CPU seconds of this process (all its threads) plus its finished child processes (Tesseract)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class Clock:
    """Wall and CPU time of a block: ``with Clock() as clock: ...``, then ``clock.wall``, ``clock.cpu``."""

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), _cpu_now()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = _cpu_now() - self._cpu


def visible_chars(text: str) -> int:
    return sum(1 for ch in text if not ch.isspace())


def normalise(text: str) -> str:
    """Lower-cased, whitespace-collapsed text, for 'is this passage in that output' checks."""
    return " ".join(text.split()).lower()


def markdown_table_count(markdown: str) -> int:
    """Markdown tables = header separator rows such as ``|---|:---:|``."""
    return sum(1 for line in markdown.splitlines() if "---" in line and "|" in line and _TABLE_RULE_RE.match(line))


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


@dataclass
class Outcome:
    """What one run of one tool on one file produced."""

    ok: bool
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    """CPU time of the call; above ``seconds`` when the tool used several cores."""
    units_seen: int | None = None
    """Pages/slides the tool itself reports (pymupdf4llm lays PPTX out into fewer pages)."""
    n_elements: int = 0
    chars: int = 0
    counts: dict = field(default_factory=dict)
    text: str | None = None
    """Normalised output text, only when asked for (keep checks)."""
    notes_snippets: list = field(default_factory=list)
    error: str | None = None
    note: str | None = None


# --------------------------------------------------------------------------- baseline


def _baseline(path: Path, fmt: str, want_text: bool) -> Outcome:
    if fmt == "pdf":
        import pymupdf

        with Clock() as clock:
            doc = pymupdf.open(path)
            texts = [page.get_text() for page in doc]
            units = doc.page_count
            doc.close()
    else:
        from pptx import Presentation
        from pptx.enum.shapes import MSO_SHAPE_TYPE

        def walk(shapes, out):
            for shape in shapes:
                if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
                    walk(shape.shapes, out)
                elif getattr(shape, "has_table", False) and shape.has_table:
                    for row in shape.table.rows:
                        for cell in row.cells:
                            out.append(cell.text)
                elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                    out.append(shape.text_frame.text)

        with Clock() as clock:
            presentation = Presentation(str(path))
            texts: list[str] = []
            units = 0
            for slide in presentation.slides:
                units += 1
                walk(slide.shapes, texts)
    joined = "\n".join(texts)
    return Outcome(
        ok=True,
        seconds=clock.wall,
        cpu_seconds=clock.cpu,
        units_seen=units,
        n_elements=len(texts),
        chars=visible_chars(joined),
        text=normalise(joined) if want_text else None,
    )


# --------------------------------------------------------------------------- ragprep


def _ragprep(path: Path, fmt: str, want_text: bool, ocr: bool) -> Outcome:
    from ragprep.engines.ocr import make_ocr_engine
    from ragprep.settings import Settings
    from ragprep.storage import Layout
    from tasks.ingest.chunking import build_chunks
    from tasks.ingest.extract import ExtractContext, extract

    # A fresh, empty root per run: no stored images and no OCR cache carried over.
    with tempfile.TemporaryDirectory(prefix="ragprep-bench-") as tmp:
        settings = Settings(root=Path(tmp), ocr={"enabled": ocr})
        layout = Layout(settings.root)
        with Clock() as clock:
            ctx = ExtractContext(
                doc_id="bench", source_path=str(path), settings=settings, layout=layout, ocr=make_ocr_engine(settings, layout)
            )
            doc = extract(path, ctx)
            chunks = build_chunks("bench", str(path), doc.format, doc.elements, doc.outline, doc.n_units, settings)
    kinds = Counter(row.kind for row in doc.elements)
    ocr_ok = sum(1 for row in doc.elements if row.ocr_status == "ok")
    text = "\n".join(row.text or "" for row in doc.elements)
    counts = {
        "tables": kinds.get("table", 0),
        "charts": kinds.get("chart", 0),
        "notes": kinds.get("notes", 0),
        "pictures": kinds.get("picture", 0),
        "smartart": kinds.get("smartart", 0),
        "ocr_pages": kinds.get("ocr_page", 0),
        "ocr_ok": ocr_ok,
        "chunks": len(chunks),
        "warnings": len(doc.warnings),
    }
    snippets = [normalise(row.text)[:60] for row in doc.elements if row.kind == "notes" and row.text.strip()]
    return Outcome(
        ok=True,
        seconds=clock.wall,
        cpu_seconds=clock.cpu,
        units_seen=doc.n_units,
        n_elements=len(doc.elements),
        chars=visible_chars(text),
        counts=counts,
        text=normalise(text) if want_text else None,
        notes_snippets=snippets if want_text else [],
    )


# --------------------------------------------------------------------------- pymupdf4llm


def _pymupdf4llm(path: Path, fmt: str, want_text: bool) -> Outcome:
    import pymupdf
    import pymupdf4llm

    with Clock() as clock:
        # use_ocr=False: pymupdf4llm otherwise runs Tesseract by itself on image-heavy pages.
        markdown = pymupdf4llm.to_markdown(str(path), use_ocr=False)
    with pymupdf.open(path) as doc:
        pages = doc.page_count
    counts = {
        "tables": markdown_table_count(markdown),
        "charts": 0,
        "notes": 0,  # filled in by the parent from the text (notes passages found)
        "pictures": markdown.count("!["),
    }
    return Outcome(
        ok=bool(markdown.strip()),
        seconds=clock.wall,
        cpu_seconds=clock.cpu,
        units_seen=pages,
        n_elements=len([block for block in markdown.split("\n\n") if block.strip()]),
        chars=visible_chars(markdown),
        counts=counts,
        text=normalise(markdown) if want_text else None,
        error=None if markdown.strip() else "empty Markdown",
    )


# --------------------------------------------------------------------------- unstructured


class _Unstructured:
    def __init__(self) -> None:
        import logging

        import unstructured_offline

        unstructured_offline.silence_network_side_effects()
        from unstructured.partition.auto import partition  # noqa: F401  (import cost outside timings)

        logging.getLogger("unstructured").setLevel(logging.ERROR)
        self.standin = False

    def use_standin(self) -> str:
        import unstructured_offline

        unstructured_offline.install_standin()
        self.standin = True
        return unstructured_offline.STANDIN_DESCRIPTION

    def run(self, path: Path, fmt: str, want_text: bool) -> Outcome:
        from unstructured.partition.auto import partition

        with Clock() as clock:
            elements = partition(filename=str(path), strategy="fast")
        content = [el for el in elements if el.category != "PageBreak"]
        categories = Counter(el.category for el in content)
        text = "\n".join(el.text or "" for el in content)
        counts = {
            "tables": categories.get("Table", 0),
            "charts": 0,
            "notes": 0,
            "pictures": categories.get("Image", 0) + categories.get("Picture", 0) + categories.get("Figure", 0),
            "categories": dict(categories),
        }
        if want_text and fmt == "pptx":
            # Slide notes are off by default; count what the opt-in would add (untimed).
            with_notes = partition(filename=str(path), strategy="fast", include_slide_notes=True)
            counts["notes_opt_in"] = len(with_notes) - len(elements)
        ok = bool(content)
        return Outcome(
            ok=ok,
            seconds=clock.wall,
            cpu_seconds=clock.cpu,
            units_seen=sum(1 for el in elements if el.category == "PageBreak") + 1 if fmt == "pptx" else None,
            n_elements=len(content),
            chars=visible_chars(text),
            counts=counts,
            text=normalise(text) if want_text else None,
            error=None if ok else "0 elements returned, no exception",
        )


# --------------------------------------------------------------------------- worker


def versions(tool: str) -> dict:
    names = {
        "baseline": ["pymupdf", "python-pptx"],
        "ragprep": ["ragprep", "pymupdf", "python-pptx"],
        "pymupdf4llm": ["pymupdf4llm", "pymupdf", "pymupdf-layout"],
        "unstructured": ["unstructured", "unstructured-inference", "pdfminer.six", "spacy"],
    }[tool]
    return {name: _version(name) for name in names}


def worker_main(tool: str, conn) -> None:
    """Serve requests until told to stop: {'op': 'run'|'standin'|'stop', ...}."""
    state: dict = {}
    try:
        if tool == "unstructured":
            state["u"] = _Unstructured()
        conn.send({"ready": True, "versions": versions(tool)})
    except Exception as exc:  # the tool cannot even be imported
        conn.send({"ready": False, "error": f"{type(exc).__name__}: {exc}", "versions": versions(tool)})
        return
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        op = request.get("op")
        if op == "stop":
            return
        if op == "standin":
            conn.send({"note": state["u"].use_standin()})
            continue
        path, fmt, want_text = Path(request["path"]), request["fmt"], bool(request.get("want_text"))
        try:
            if tool == "baseline":
                outcome = _baseline(path, fmt, want_text)
            elif tool == "ragprep":
                outcome = _ragprep(path, fmt, want_text, bool(request.get("ocr")))
            elif tool == "pymupdf4llm":
                outcome = _pymupdf4llm(path, fmt, want_text)
            else:
                outcome = state["u"].run(path, fmt, want_text)
        except Exception as exc:
            last = traceback.extract_tb(exc.__traceback__)[-1]
            where = f" at {Path(last.filename).name}:{last.lineno}"
            outcome = Outcome(ok=False, error=f"{type(exc).__name__}: {str(exc)[:300]}{where}")
        conn.send(outcome.__dict__)
