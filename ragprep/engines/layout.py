"""Layout backends: PDF pages -> typed regions (title, text, list, table, figure, ...).

One protocol, two backends:

- ``pymupdf-layout`` (default, offline): the layout model that ships inside the
  ``pymupdf-layout`` wheel (PyMuPDF 2.0 ``Page.get_layout()``), about 0.25 s per page on
  two cores. Region text comes from the page's text layer (words whose centre falls in
  the region); page headers and footers are dropped; consecutive list items of one
  column are merged into one list region. A page with images or drawings on which the
  model finds no region (a scan) becomes one full-page figure region, so its OCR text is
  still a quote. The model runs on onnxruntime and is loaded when the first page is laid
  out, not by ``import pymupdf`` (``ragprep/engines/layout_model.py``); onnxruntime is
  pinned below 1.29, whose Linux wheels carry Microsoft's telemetry uploader
  (``ragprep/offline.py``). Its sessions are remade once per process with onnxruntime's
  thread spinning off (:func:`passive_layout_sessions`): calls are serialised under
  ``PDF_LOCK`` while the pipeline's other threads embed and OCR, and spinning pool threads
  burnt about 40% more CPU for the same regions (``bench/layout.py``).
- ``mineru``: MinerU's ``pipeline`` backend, run as the ``mineru`` command, read back
  from its ``*_content_list.json``. Used only when asked for; when the command or its
  models are missing it raises ``LayoutBackendUnavailable`` naming what is missing —
  never a silent fallback to another backend.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pymupdf

from ragprep.engines.layout_model import load_layout_model
from ragprep.engines.pdf import PDF_LOCK, join_lines, page_words
from ragprep.errors import RagprepError

BBox = tuple[float, float, float, float]


class LayoutBackendUnavailable(RagprepError, RuntimeError):
    """The requested layout backend cannot run here; the message names what is missing and the fix."""


@dataclass(frozen=True)
class Region:
    bbox: BBox
    type: str
    """A ``schemas.quotes.QuoteType``: title, text, list, caption, footnote, equation, table, figure, chart, picture."""
    text: str = ""


@dataclass
class PageLayout:
    page_id: int
    """0-based page index."""
    size: tuple[float, float]
    regions: list[Region] = field(default_factory=list)


class LayoutBackend(Protocol):
    name: str

    def check(self) -> None:
        """Raise ``LayoutBackendUnavailable`` when the backend cannot run here."""

    def pages(self, path: Path, skip: frozenset[int] = frozenset()) -> Iterator[PageLayout]:
        """The regions of every page of one PDF, in reading order; the 0-based pages in ``skip`` (over a memory
        limit) are never read and come back without regions."""


PYMUPDF_CLASSES = {
    "title": "title",
    "section-header": "title",
    "text": "text",
    "list-item": "list",
    "caption": "caption",
    "footnote": "footnote",
    "formula": "equation",
    "table": "table",
    "picture": "figure",
}
"""PyMuPDF layout classes -> quote types; page-header and page-footer are not content."""
DROPPED_CLASSES = {"page-header", "page-footer"}


def _centre_in(word: tuple, box: BBox) -> bool:
    cx, cy = (word[0] + word[2]) / 2, (word[1] + word[3]) / 2
    return box[0] - 1 <= cx <= box[2] + 1 and box[1] - 1 <= cy <= box[3] + 1


def _words_text(words: list[tuple]) -> str:
    """Words (PyMuPDF ``words`` tuples) joined line by line in their reading order."""
    lines: dict[tuple[int, int], list[tuple]] = {}
    for w in sorted(words, key=lambda w: (w[5], w[6], w[7])):
        lines.setdefault((w[5], w[6]), []).append(w)
    return join_lines([" ".join(w[4] for w in line) for line in lines.values()])


def _merge_lists(regions: list[Region]) -> list[Region]:
    """Consecutive list items of one column become one list region."""
    out: list[Region] = []
    for region in regions:
        previous = out[-1] if out else None
        if (
            previous is not None
            and region.type == "list"
            and previous.type == "list"
            and abs(region.bbox[0] - previous.bbox[0]) < 12
            and region.bbox[1] - previous.bbox[3] < 14
        ):
            box = (min(previous.bbox[0], region.bbox[0]), previous.bbox[1],
                   max(previous.bbox[2], region.bbox[2]), max(previous.bbox[3], region.bbox[3]))
            out[-1] = Region(box, "list", f"{previous.text}\n{region.text}".strip())
        else:
            out.append(region)
    return out


_SESSIONS_PASSIVE = False


def _sessions_in(obj: object, depth: int = 3) -> Iterator[tuple[object, str, object]]:
    """(holder, attribute, session) of every onnxruntime session reachable through ``obj``'s attributes."""
    import onnxruntime as ort

    for name, value in list(getattr(obj, "__dict__", {}).items()):
        if isinstance(value, ort.InferenceSession):
            yield obj, name, value
        elif depth and hasattr(value, "__dict__") and not isinstance(value, type):
            yield from _sessions_in(value, depth - 1)


def passive_layout_sessions() -> int:
    """Remake, once per process, the onnxruntime sessions of the pymupdf-layout model (made when
    :func:`~ragprep.engines.layout_model.load_layout_model` loaded it, or ``import pymupdf`` before ``ragprep``)
    with the same model, providers and options but thread spinning off: intra-op threads then sleep between the
    model's operators instead of spinning, which on a busy machine took CPU from the threads that embed and OCR.
    Returns the number of sessions remade; 0 where the model is not where PyMuPDF 2.0's ``activate`` keeps it (the
    model then runs as loaded). Raises ``ImportError`` when the model cannot be loaded (``load_layout_model``)."""
    global _SESSIONS_PASSIVE
    with PDF_LOCK:
        if _SESSIONS_PASSIVE:
            return 0
        load_layout_model()  # the sessions to remake exist once the model is loaded
        _SESSIONS_PASSIVE = True
        import onnxruntime as ort

        closure = getattr(getattr(pymupdf, "_get_layout", None), "__closure__", None) or ()
        remade: dict[int, object] = {}  # a session held in two places is remade once
        for cell in closure:
            for holder, name, session in list(_sessions_in(cell.cell_contents)):
                if not getattr(session, "_model_path", None):  # made from bytes, or another onnxruntime: kept
                    continue
                if id(session) not in remade:
                    options = session.get_session_options()
                    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
                    remade[id(session)] = ort.InferenceSession(
                        session._model_path, sess_options=options, providers=session.get_providers())
                setattr(holder, name, remade[id(session)])
        return len(remade)


class PyMuPdfLayoutBackend:
    """Regions from the layout model shipped in the ``pymupdf-layout`` wheel."""

    name = "pymupdf-layout"

    def __init__(self, min_image_side_pt: float = 24.0) -> None:
        self.min_image_side_pt = min_image_side_pt

    def check(self) -> None:
        """Raise ``LayoutBackendUnavailable`` unless PyMuPDF has ``Page.get_layout`` (PyMuPDF >= 2.0 with pymupdf-layout)."""
        if not hasattr(pymupdf.Page, "get_layout"):
            raise LayoutBackendUnavailable(
                f"layout backend pymupdf-layout needs PyMuPDF >= 2.0 with pymupdf-layout (found PyMuPDF {pymupdf.VersionBind}); "
                "run `pip install 'pymupdf>=2.0' pymupdf-layout`"
            )
        try:
            passive_layout_sessions()  # loads the model first
        except ImportError as exc:
            raise LayoutBackendUnavailable(
                f"layout backend pymupdf-layout cannot load its model ({exc}); run `pip install pymupdf-layout`"
            ) from exc

    def page_layout(self, page: pymupdf.Page) -> PageLayout:
        """The regions of one page with their text; headers and footers dropped, list items merged, a scan as one figure."""
        with PDF_LOCK:
            load_layout_model()  # once per process; check() loads it first in the pipeline
            page.get_layout()
            boxes = list(page.layout_information or [])
            words = page_words(page)
            size = (round(page.rect.width, 2), round(page.rect.height, 2))
            has_ink = bool(page.get_images()) or bool(page.get_cdrawings())
        regions: list[Region] = []
        for *coords, cls in boxes:
            if cls in DROPPED_CLASSES:
                continue
            box = tuple(round(float(v), 2) for v in coords)
            kind = PYMUPDF_CLASSES.get(cls, "text")
            text = _words_text([w for w in words if _centre_in(w, box)])
            if kind in ("table", "figure"):
                if min(box[2] - box[0], box[3] - box[1]) < self.min_image_side_pt:
                    continue
            elif not text:
                continue
            regions.append(Region(box, kind, text))
        if not regions and has_ink:
            # a scanned page the model finds nothing on: the whole page is one image quote (OCR'd)
            regions.append(Region((0.0, 0.0, *size), "figure", _words_text(words)))
        return PageLayout(page.number, size, _merge_lists(regions))

    def pages(self, path: Path, skip: frozenset[int] = frozenset()) -> Iterator[PageLayout]:
        """The layout of every page of one PDF, in page order (pages in ``skip`` unread, without regions); raise
        when the backend cannot run."""
        self.check()
        with PDF_LOCK:
            doc = pymupdf.open(path)
        try:
            for index in range(doc.page_count):
                page = doc[index]
                if index in skip:
                    yield PageLayout(index, (round(page.rect.width, 2), round(page.rect.height, 2)))
                    continue
                yield self.page_layout(page)
        finally:
            with PDF_LOCK:
                doc.close()


MINERU_TYPES = {"text": "text", "equation": "equation", "image": "figure", "table": "table"}


def parse_mineru_content_list(items: list[dict], page_sizes: list[tuple[float, float]]) -> list[PageLayout]:
    """MinerU's ``content_list.json`` (list of blocks with ``type``, ``page_idx``, ``bbox``)
    as page layouts. MinerU 2 writes bboxes in per-mille of the page (0-1000); they are
    scaled to points with the page sizes. ``text_level`` >= 1 marks a title; ``discarded``
    blocks (headers, footers) are dropped."""
    pages = [PageLayout(i, size) for i, size in enumerate(page_sizes)]
    for item in items:
        kind = MINERU_TYPES.get(item.get("type", ""))
        page_idx = item.get("page_idx")
        if kind is None or page_idx is None or not 0 <= page_idx < len(pages):
            continue
        width, height = page_sizes[page_idx]
        x0, y0, x1, y1 = (float(v) for v in item.get("bbox", (0, 0, 1000, 1000)))
        box = (round(x0 * width / 1000, 2), round(y0 * height / 1000, 2), round(x1 * width / 1000, 2), round(y1 * height / 1000, 2))
        if kind == "text" and item.get("text_level"):
            kind = "title"
        if kind == "table":
            text = " ".join(item.get("table_caption", []) + [item.get("table_body", "")]).strip()
        elif kind == "figure":
            text = " ".join(item.get("image_caption", []) + item.get("image_footnote", [])).strip()
        else:
            text = (item.get("text") or "").strip()
        if kind not in ("table", "figure") and not text:
            continue
        pages[page_idx].regions.append(Region(box, kind, text))
    return pages


class MinerUBackend:
    """MinerU's pipeline backend through its ``mineru`` command (MinerU 2.x)."""

    name = "mineru"

    def __init__(self, command: str = "mineru", models_dir: Path | None = None, timeout_s: float = 3600) -> None:
        self.command = command
        self.models_dir = models_dir
        self.timeout_s = timeout_s

    def _configured_models_dir(self) -> Path | None:
        if self.models_dir is not None:
            return self.models_dir
        config = Path(os.environ.get("MINERU_TOOLS_CONFIG_JSON", Path.home() / "mineru.json"))
        if config.exists():
            try:
                dirs = json.loads(config.read_text()).get("models-dir", {})
            except (OSError, ValueError):
                return None
            chosen = dirs.get("pipeline") if isinstance(dirs, dict) else dirs
            return Path(chosen) if chosen else None
        return None

    def check(self) -> None:
        """Raise ``LayoutBackendUnavailable`` naming what is missing: the ``mineru`` command or its pipeline models."""
        missing = []
        if shutil.which(self.command) is None:
            missing.append(f"the `{self.command}` command (install MinerU: pip install 'mineru[core]')")
        models = self._configured_models_dir()
        if models is None:
            missing.append(
                "MinerU's pipeline models (layout, formula, OCR and table models: none configured; download them where a "
                "network is allowed with `mineru-models-download -m pipeline`, copy them here and set "
                "RAGPREP_QUOTES__MINERU_MODELS_DIR or the models-dir of ~/mineru.json)"
            )
        elif not models.is_dir() or not any(models.iterdir()):
            missing.append(f"MinerU's pipeline models: {models} is missing or empty")
        if missing:
            raise LayoutBackendUnavailable(
                "layout_backend=mineru was requested but cannot run: missing " + "; ".join(missing)
                + ". Set RAGPREP_QUOTES__LAYOUT_BACKEND=pymupdf-layout to use the offline default instead."
            )

    def pages(self, path: Path, skip: frozenset[int] = frozenset()) -> Iterator[PageLayout]:
        """Run ``mineru`` on one PDF and read its page layouts back from ``*_content_list.json`` (pages in ``skip``
        without regions); raise when it fails."""
        self.check()
        with PDF_LOCK:
            with pymupdf.open(path) as doc:
                sizes = [(round(p.rect.width, 2), round(p.rect.height, 2)) for p in doc]
        env = dict(os.environ, MINERU_MODEL_SOURCE="local")
        with tempfile.TemporaryDirectory(prefix="ragprep-mineru-") as out:
            completed = subprocess.run(
                [self.command, "-p", str(path), "-o", out, "-b", "pipeline"],
                capture_output=True, text=True, env=env, timeout=self.timeout_s,
            )
            found = sorted(Path(out).rglob("*_content_list.json"))
            if completed.returncode != 0 or not found:
                tail = (completed.stderr or completed.stdout or "").strip().splitlines()[-3:]
                raise RuntimeError(f"{path.name}: mineru failed (exit {completed.returncode}): {' | '.join(tail)}")
            items = json.loads(found[0].read_text(encoding="utf-8"))
        for page in parse_mineru_content_list(items, sizes):
            yield PageLayout(page.page_id, page.size) if page.page_id in skip else page


def layout_backend_for(name: str, models_dir: Path | None = None) -> LayoutBackend:
    """The layout backend named ``name`` (pymupdf-layout or mineru); ValueError for any other."""
    if name == "pymupdf-layout":
        return PyMuPdfLayoutBackend()
    if name == "mineru":
        return MinerUBackend(models_dir=models_dir)
    raise ValueError(f"unknown layout backend {name!r}; choose pymupdf-layout or mineru")
