"""What the bench scripts share: finding and reading the corpus, and where and how results are written.

Imported by the scripts as a sibling module (``python bench/<script>.py`` puts bench/ on sys.path).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
DEFAULT_CORPUS = REPO_ROOT / ".." / "shared" / "corpus"


def put_on_path(folder: Path) -> None:
    """Make ``folder`` importable (first on sys.path) unless it already is."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def results_json(name: str) -> Path:
    """Default place of a bench's results: bench/results/<name>.json."""
    return BENCH_DIR / "results" / f"{name}.json"


def result_header(corpus: Path, args) -> dict:
    """The fields every results file starts with: when, on what corpus, with which arguments, where."""
    return {
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "corpus": str(corpus),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "machine": {"node": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()},
    }


def write_result(path: Path, result: dict) -> None:
    """Write ``result`` as indented JSON to ``path`` (folders created) and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"(results written to {path})")


def read_corpus(path: Path, read: Callable[[Path], list], nothing: str) -> tuple[Path, list] | None:
    """``(folder, read(folder))`` for the resolved corpus folder; None, said on stderr, when the folder
    does not exist or ``read`` finds nothing in it (``nothing`` is the message, ``{}`` the folder)."""
    corpus = path.resolve()
    if not corpus.is_dir():
        print(f"corpus folder not found: {corpus}", file=sys.stderr)
        return None
    found = read(corpus)
    if not found:
        print(nothing.format(corpus), file=sys.stderr)
        return None
    return corpus, found
