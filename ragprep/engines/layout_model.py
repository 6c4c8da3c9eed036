"""The pymupdf-layout model, loaded when a page is first laid out instead of by ``import pymupdf``.

PyMuPDF 2 runs ``import pymupdf.layout`` inside ``pymupdf/__init__.py`` (in a ``try/except ImportError``). That
import builds the layout model (onnxruntime sessions) and stores it as ``pymupdf._get_layout``, which only
``Page.get_layout()`` uses; ``pymupdf/__init__.py`` then imports pymupdf4llm (only ``Document.to_markdown`` and its
siblings use it), which imports onnxruntime and its own helpers: ``import pymupdf`` took 0.8 CPU s, 0.13 without
them. Most ragprep processes that import PyMuPDF never lay out a page: ``ingest`` reads text and finds tables with
``find_tables(use_layout=False)``, the evaluation baselines and the review report read text or render pages.

:func:`defer_layout_model` (run by ``import ragprep``, so before any ragprep module imports PyMuPDF) puts a finder
first on ``sys.meta_path`` that answers ``ImportError`` for ``pymupdf.layout`` only while ``pymupdf`` itself is
being initialised; PyMuPDF catches it and starts without the model. It makes ``pymupdf4llm`` a lazy module
(``importlib.util.LazyLoader``) at that moment: its body runs at its first use, when ``pymupdf.layout`` imports
normally, so pymupdf4llm keeps its default layout mode; the process-wide MuPDF settings its import makes are made
at the same point (:func:`apply_pymupdf4llm_settings`), so text is read the same. Every other import, and any later
``import pymupdf.layout`` or ``importlib.util.find_spec("pymupdf.layout")``, goes through unchanged: the package
is still found, so ``find_tables`` prints no recommendation to install it.

:func:`load_layout_model` (called by the layout backend before it lays out a page) imports ``pymupdf.layout`` and
activates it: the same model, built the same way, so the same regions. Where PyMuPDF was imported before
``ragprep`` (the model then loaded eagerly), it finds the model already active and does nothing.
"""

from __future__ import annotations

import importlib
import sys
import threading
from importlib.abc import MetaPathFinder
from importlib.machinery import PathFinder
from importlib.util import LazyLoader

LAYOUT_MODULE = "pymupdf.layout"
LLM_MODULE = "pymupdf4llm"
"""PyMuPDF 2 also imports pymupdf4llm (for ``Document.to_markdown``), whose body imports ``pymupdf.layout``: it is
made lazy rather than refused, so that it loads, in its default layout mode, when first used."""
_LOAD_LOCK = threading.Lock()


def _initialising(name: str) -> bool:
    """Whether the module ``name`` is in ``sys.modules`` and its body is still running (importlib's own marker)."""
    module = sys.modules.get(name)
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


class DeferLayoutModel(MetaPathFinder):
    """While ``pymupdf/__init__.py`` runs: refuses ``pymupdf.layout`` and makes ``pymupdf4llm`` lazy. Finds nothing
    (defers to the next finder) for every other import, and for these two once PyMuPDF is initialised."""

    def find_spec(self, fullname, path=None, target=None):
        """Raise ``ModuleNotFoundError`` for ``pymupdf.layout`` and give a lazy spec for ``pymupdf4llm`` during
        PyMuPDF's own import; None for anything else."""
        if fullname not in (LAYOUT_MODULE, LLM_MODULE) or not _initialising("pymupdf"):
            return None
        if fullname == LAYOUT_MODULE:
            raise ModuleNotFoundError(f"{LAYOUT_MODULE} is loaded when a page is laid out (ragprep.engines.layout_model)",
                                      name=fullname)
        spec = PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _LazyPyMuPdf4Llm(spec.loader)  # its body runs at its first use, PyMuPDF initialised
        return spec


class _LazyPyMuPdf4Llm(LazyLoader):
    """pymupdf4llm as a lazy module whose import still makes, at once, its process-wide settings of MuPDF."""

    def exec_module(self, module):
        """Make pymupdf4llm's import-time MuPDF settings now, then defer its body to its first use."""
        apply_pymupdf4llm_settings()
        super().exec_module(module)


def apply_pymupdf4llm_settings() -> None:
    """What importing pymupdf4llm 2.0 sets for the whole process (its ``helpers`` modules and ``batch_converter``):
    quad corrections off (character boxes are the glyphs' font boxes; every PDF text read in the process sees
    this), MuPDF's error and warning display off. Made where PyMuPDF imports pymupdf4llm, so every ragprep process
    reads PDFs exactly as it did when pymupdf4llm loaded there (``tests/test_cli_startup.py`` compares)."""
    tools = sys.modules["pymupdf"].TOOLS
    tools.unset_quad_corrections(True)
    tools.mupdf_display_errors(False)
    tools.mupdf_display_warnings(False)


def defer_layout_model() -> None:
    """Install the finder once per process (a no-op when it is installed, or when PyMuPDF is imported already)."""
    if "pymupdf" in sys.modules or any(isinstance(f, DeferLayoutModel) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, DeferLayoutModel())


def layout_model_loaded() -> bool:
    """Whether this process has the layout model (``pymupdf.layout`` imported)."""
    return LAYOUT_MODULE in sys.modules


def load_layout_model() -> None:
    """Import and activate the pymupdf-layout model once per process; after this ``Page.get_layout()`` works.

    Raises ``ImportError`` when the ``pymupdf-layout`` wheel is not installed (the layout backend's ``check``
    reports that on one line)."""
    pymupdf = importlib.import_module("pymupdf")
    if callable(getattr(pymupdf, "_get_layout", None)):
        return
    with _LOAD_LOCK:
        layout = importlib.import_module(LAYOUT_MODULE)  # its body activates the model
        layout.activate()  # a no-op when active; activates again where pymupdf4llm.use_layout(False) switched it off
