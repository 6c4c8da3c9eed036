"""Extraction speed of ragprep against a raw-text baseline and two peers, as ratios.

Run from the repository root::

    .venv/bin/python bench/extract.py              # 3 repetitions, OCR-on timed once
    .venv/bin/python bench/extract.py --quick      # 1 repetition, no OCR-on (smoke)

For every PDF and PPTX of the corpus it times, in one run and interleaved:

* raw baseline: PyMuPDF ``page.get_text()`` on every page (PDF); python-pptx walking every
  shape, groups included, reading text frames and tables (PPTX);
* ragprep: ``extract`` + ``build_chunks``, OCR off, and OCR on (fresh empty root, so no OCR
  cache, per run);
* peers: ``pymupdf4llm.to_markdown(path, use_ocr=False)`` and unstructured's
  ``partition(filename=path, strategy="fast")``.

The machine is shared and noisy, so the output is ratios between tools measured in the
same run (medians over repetitions), never absolute seconds.  It also prints what each tool
keeps (tables, charts, speaker notes, pictures).  The exit status is 0 whatever the
ratios are (a benchmark reports, it does not gate); it is 1 only when ragprep itself fails.
Results also go to bench/results/extract.json.  See bench/README.md.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import multiprocessing
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import util as importlib_util
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import extract_tools  # noqa: E402  (bench/ helpers, found through sys.path)
from bench_common import DEFAULT_CORPUS, read_corpus, result_header, results_json, write_result  # noqa: E402

DEFAULT_JSON = results_json("extract")
AIM_SPEEDUP = 3.0
AIM_TEXT = "extraction without OCR at least 3x faster than both peers while keeping tables, charts, notes and pictures"
UNIT = {"pdf": "pages", "pptx": "slides"}
LABEL = {
    "baseline": {"pdf": "raw PyMuPDF get_text", "pptx": "raw python-pptx walk"},
    "ragprep": "ragprep (OCR off)",
    "ragprep_ocr": "ragprep (OCR on)",
    "pymupdf4llm": "pymupdf4llm",
    "unstructured": "unstructured fast",
}
PEERS = ("pymupdf4llm", "unstructured")
KEEP_COLUMNS = ("tables", "charts", "notes", "pictures")


# --------------------------------------------------------------------------- data


@dataclass
class Doc:
    path: Path
    fmt: str
    units: int = 0
    """Pages/slides, as the raw baseline counts them."""


@dataclass
class FileRuns:
    seconds: list = field(default_factory=list)
    """Wall seconds per repetition; None where the run failed."""
    cpu: list = field(default_factory=list)
    """CPU seconds per repetition (all threads, and child processes such as Tesseract)."""
    errors: list = field(default_factory=list)
    first: dict | None = None
    """Full outcome of the first repetition (counts, text)."""


@dataclass
class ToolState:
    name: str
    available: bool = True
    reason: str | None = None
    versions: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)  # file name -> FileRuns
    proc: object = None
    conn: object = None

    def file(self, name: str) -> FileRuns:
        return self.runs.setdefault(name, FileRuns())


# --------------------------------------------------------------------------- workers


class Workers:
    """One process per tool, spoken to one request at a time."""

    def __init__(self, timeout_s: float) -> None:
        self.ctx = multiprocessing.get_context("spawn")
        self.timeout_s = timeout_s
        self.tools: dict[str, ToolState] = {}

    def start(self, name: str) -> ToolState:
        state = ToolState(name)
        self.tools[name] = state
        if name == "unstructured" and importlib_util.find_spec("unstructured") is None:
            state.available = False
            state.reason = "not installed (no module named 'unstructured'; pip install -r bench/requirements.txt)"
            return state
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=extract_tools.worker_main, args=(name, child), daemon=True, name=f"bench-{name}")
        proc.start()
        child.close()
        state.proc, state.conn = proc, parent
        if not parent.poll(300):
            self._kill(state, "did not start within 300 s")
            return state
        try:
            hello = parent.recv()
        except EOFError:
            self._kill(state, f"worker died while importing (exit code {proc.exitcode})")
            return state
        state.versions = hello.get("versions", {})
        if not hello.get("ready"):
            state.available = False
            state.reason = f"not installed ({hello.get('error')})"
            self._kill(state, state.reason)
        return state

    def _kill(self, state: ToolState, reason: str) -> None:
        state.available = False
        state.reason = state.reason or reason
        if state.proc is not None and state.proc.is_alive():
            state.proc.terminate()
            state.proc.join(5)
        state.proc = state.conn = None

    def call(self, name: str, request: dict) -> dict:
        state = self.tools[name]
        if not state.available or state.conn is None:
            return {"ok": False, "error": state.reason or "unavailable"}
        state.conn.send(request)
        if not state.conn.poll(self.timeout_s):
            self._kill(state, f"killed: no answer within {self.timeout_s:.0f} s")
            return {"ok": False, "error": f"timeout after {self.timeout_s:.0f} s"}
        try:
            return state.conn.recv()
        except EOFError:
            code = state.proc.exitcode if state.proc is not None else None
            self._kill(state, f"worker crashed (exit code {code})")
            return {"ok": False, "error": f"worker crashed (exit code {code})"}

    def stop(self) -> None:
        for state in self.tools.values():
            if state.conn is not None:
                try:
                    state.conn.send({"op": "stop"})
                except (BrokenPipeError, OSError):
                    pass
            if state.proc is not None:
                state.proc.join(10)
                if state.proc.is_alive():
                    state.proc.terminate()


# --------------------------------------------------------------------------- corpus


def discover(corpus: Path) -> list[Doc]:
    docs = [Doc(p, p.suffix.lower()[1:]) for p in sorted(corpus.iterdir()) if p.suffix.lower() in (".pdf", ".pptx")]
    return docs


def read_manifest(corpus: Path) -> dict[str, dict[str, int]]:
    """Per file, what MANIFEST.tsv says is in it (tables, charts, pictures, notes)."""
    path = corpus / "MANIFEST.tsv"
    if not path.exists():
        return {}
    facts: dict[str, dict[str, int]] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t") if lines else []
    for line in lines[1:]:
        row = dict(zip(header, line.split("\t")))
        values: dict[str, int] = {}
        for part in row.get("notes", "").replace(";", " ").split():
            key, _, value = part.partition("=")
            if value.isdigit():
                values[key] = int(value)
        keep = {
            "tables": values.get("tables", values.get("tables(pymupdf)")),
            "charts": values.get("charts"),
            "notes": values.get("notes_slides"),
            "pictures": values.get("pictures", values.get("images")),
        }
        facts[row.get("file", "")] = {k: v for k, v in keep.items() if v is not None}
    return facts


def smallest(docs: list[Doc], fmt: str) -> Doc | None:
    of_fmt = [d for d in docs if d.fmt == fmt]
    return min(of_fmt, key=lambda d: d.path.stat().st_size) if of_fmt else None


# --------------------------------------------------------------------------- stats


def throughput(state: ToolState, docs: list[Doc], rep: int, clock: str = "seconds") -> float | None:
    """Units per wall second (``clock="seconds"``) or per CPU second (``"cpu"``) over ``docs``
    in repetition ``rep``; None if any run is missing."""
    units = seconds = 0.0
    for doc in docs:
        runs = state.runs.get(doc.path.name)
        values = getattr(runs, clock) if runs is not None else []
        if rep >= len(values) or values[rep] is None:
            return None
        units += doc.units
        seconds += values[rep]
    return units / seconds if seconds > 0 else None


def median_cores(state: ToolState, docs: list[Doc]) -> float | None:
    """Median over repetitions of CPU seconds / wall seconds: how many cores the tool kept busy."""
    values = []
    for rep in range(n_reps(state)):
        wall, cpu = throughput(state, docs, rep), throughput(state, docs, rep, "cpu")
        if wall and cpu:
            values.append(wall / cpu)
    return statistics.median(values) if values else None


def n_reps(state: ToolState) -> int:
    return max((len(r.seconds) for r in state.runs.values()), default=0)


def ok_docs(state: ToolState, docs: list[Doc]) -> list[Doc]:
    """Files on which every repetition of the tool succeeded."""
    good = []
    for doc in docs:
        runs = state.runs.get(doc.path.name)
        if runs and runs.seconds and all(s is not None for s in runs.seconds):
            good.append(doc)
    return good


def median_throughput(state: ToolState, docs: list[Doc]) -> float | None:
    values = [v for r in range(n_reps(state)) if (v := throughput(state, docs, r)) is not None]
    return statistics.median(values) if values else None


def median_ratio(a: ToolState, b: ToolState, docs: list[Doc], clock: str = "seconds") -> float | None:
    """Median over paired repetitions of throughput(a) / throughput(b) on the same files."""
    values = []
    for rep in range(min(n_reps(a), n_reps(b))):
        ta, tb = throughput(a, docs, rep, clock), throughput(b, docs, rep, clock)
        if ta and tb:
            values.append(ta / tb)
    return statistics.median(values) if values else None


def fmt_num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


def fmt_x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    out = []
    for n, row in enumerate([header] + rows):
        cells = [str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i]) for i, c in enumerate(row)]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


# --------------------------------------------------------------------------- run


def record(state: ToolState, doc: Doc, answer: dict, keep_first: bool) -> None:
    runs = state.file(doc.path.name)
    ok = bool(answer.get("ok"))
    runs.seconds.append(answer.get("seconds") if ok else None)
    runs.cpu.append(answer.get("cpu_seconds") if ok else None)
    runs.errors.append(None if ok else answer.get("error") or "failed")
    if keep_first and runs.first is None:
        runs.first = answer


def probe_unstructured(workers: Workers, docs: list[Doc], mode: str, log) -> dict:
    """Run unstructured as installed on every file once (untimed) and decide how to time it."""
    info: dict = {"mode": mode, "probe": {}, "standin": None}
    if mode == "standin":
        info["standin"] = workers.call("unstructured", {"op": "standin"}).get("note")
        return info
    for doc in docs:
        answer = workers.call("unstructured", {"op": "run", "path": str(doc.path), "fmt": doc.fmt})
        info["probe"][doc.path.name] = "ok" if answer.get("ok") else answer.get("error")
        if not workers.tools["unstructured"].available:
            return info
    failed = {name: err for name, err in info["probe"].items() if err != "ok"}
    log(f"  unstructured as installed: {len(docs) - len(failed)}/{len(docs)} files gave elements")
    if failed and mode == "auto":
        info["standin"] = workers.call("unstructured", {"op": "standin"}).get("note")
        log("  unstructured: switching to the offline stand-in for the timed runs")
    return info


def run_bench(args, docs: list[Doc], log) -> tuple[dict[str, ToolState], dict, float]:
    """Start the workers, time everything; returns (tools, run facts, wall seconds)."""
    workers = Workers(args.timeout_s)
    started = time.perf_counter()
    budget_note = None
    try:
        for name in extract_tools.TOOLS:
            if name in args.skip:
                workers.tools[name] = ToolState(name, available=False, reason="skipped (--skip)")
                continue
            log(f"starting {name} ...")
            state = workers.start(name)
            if not state.available:
                log(f"  {name}: {state.reason}")
        tools = workers.tools
        # The raw baseline fixes the unit counts (pages, slides) for every tool.
        for doc in docs:
            answer = workers.call("baseline", {"op": "run", "path": str(doc.path), "fmt": doc.fmt})
            if not answer.get("ok"):
                raise SystemExit(f"baseline cannot read {doc.path.name}: {answer.get('error')}")
            doc.units = answer["units_seen"]
        unstructured_info: dict = {}
        if "unstructured" in tools and tools["unstructured"].available:
            log("probing unstructured offline behaviour ...")
            unstructured_info = probe_unstructured(workers, docs, args.unstructured, log)
        # Warm-up (untimed): imports, model loads, first-use caches, on the smallest file per format.
        log("warming up ...")
        for fmt in ("pdf", "pptx"):
            doc = smallest(docs, fmt)
            if doc is None:
                continue
            for name in tools:
                if tools[name].available:
                    workers.call(name, {"op": "run", "path": str(doc.path), "fmt": fmt})
        # Tools that could not start are left out; one that dies later records failures.
        order = [n for n in ("baseline", "ragprep", "pymupdf4llm", "unstructured") if n in tools and tools[n].available]

        def repetition(rep: int) -> float:
            t0 = time.perf_counter()
            rotated = order[rep % len(order):] + order[: rep % len(order)]
            for doc in docs:
                for name in rotated:
                    answer = workers.call(name, {"op": "run", "path": str(doc.path), "fmt": doc.fmt, "want_text": rep == 0})
                    record(tools[name], doc, answer, keep_first=True)
            took = time.perf_counter() - t0
            log(f"repetition {rep + 1}/{args.repeat} done in {took:.0f} s")
            return took

        # Repetition 1, then OCR on, then further repetitions while the time budget allows.
        rep_seconds = [repetition(0)]
        ocr_state = ToolState("ragprep_ocr")
        ocr_state.versions = tools["ragprep"].versions if "ragprep" in tools else {}
        reason = ocr_unavailable_reason() if args.ocr_repeat else "skipped (--quick or --ocr-repeat 0)"
        if reason:
            ocr_state.available, ocr_state.reason = False, reason
        else:
            for rep in range(args.ocr_repeat):
                t0 = time.perf_counter()
                for doc in docs:
                    answer = workers.call("ragprep", {"op": "run", "path": str(doc.path), "fmt": doc.fmt, "ocr": True})
                    record(ocr_state, doc, answer, keep_first=True)
                log(f"OCR-on repetition {rep + 1}/{args.ocr_repeat} done in {time.perf_counter() - t0:.0f} s")
        for rep in range(1, args.repeat):
            elapsed = time.perf_counter() - started
            if elapsed + max(rep_seconds) > args.budget_s:
                budget_note = (
                    f"stopped after {rep} of {args.repeat} repetitions: another would end past --budget-s {args.budget_s:.0f} "
                    f"(elapsed {elapsed:.0f} s, one repetition {max(rep_seconds):.0f} s)"
                )
                log(budget_note)
                break
            rep_seconds.append(repetition(rep))
        tools["ragprep_ocr"] = ocr_state
    finally:
        workers.stop()
    run_info = {"unstructured": unstructured_info, "budget_note": budget_note, "repetitions": len(rep_seconds)}
    return workers.tools, run_info, time.perf_counter() - started


def ocr_unavailable_reason() -> str | None:
    from ragprep.engines.ocr import TesseractOcr
    from ragprep.settings import Settings

    settings = Settings(root=Path(tempfile.gettempdir()))
    reason = TesseractOcr(settings.ocr.languages, settings.ocr.min_confidence, None).unavailable_reason()
    return f"skipped: {reason}" if reason else None


# --------------------------------------------------------------------------- report


def keep_counts(state: ToolState, docs: list[Doc], ragprep: ToolState | None) -> dict | None:
    totals = {k: 0 for k in KEEP_COLUMNS} | {"chars": 0, "units_seen": 0, "notes_opt_in": 0}
    seen_any = False
    for doc in docs:
        runs = state.runs.get(doc.path.name)
        first = runs.first if runs else None
        if not first or not first.get("ok"):
            continue
        seen_any = True
        counts = first.get("counts") or {}
        for key in ("tables", "charts", "pictures"):
            totals[key] += counts.get(key, 0)
        totals["notes_opt_in"] += counts.get("notes_opt_in", 0)
        totals["chars"] += first.get("chars", 0)
        totals["units_seen"] += first.get("units_seen") or 0
        if state.name == "ragprep":
            totals["notes"] += counts.get("notes", 0)
        elif state.name != "baseline" and ragprep is not None:
            # A note counts as kept when its opening words appear in the tool's output.
            rp = ragprep.runs.get(doc.path.name)
            snippets = (rp.first or {}).get("notes_snippets", []) if rp else []
            text = first.get("text") or ""
            totals["notes"] += sum(1 for s in snippets if s and s in text)
    return totals if seen_any else None


def summarise(tools: dict[str, ToolState], docs: list[Doc], manifest: dict, fmt: str) -> dict:
    docs = [d for d in docs if d.fmt == fmt]
    base, rag = tools.get("baseline"), tools.get("ragprep")
    out: dict = {
        "files": [d.path.name for d in docs],
        "file_units": {d.path.name: d.units for d in docs},
        "units": sum(d.units for d in docs),
        "unit": UNIT[fmt],
        "tools": {},
    }
    for name in ("baseline", "ragprep", "ragprep_ocr", "pymupdf4llm", "unstructured"):
        state = tools.get(name)
        if state is None:
            continue
        entry: dict = {"reason": state.reason}
        good = ok_docs(state, docs)
        entry["files_ok"] = len(good)
        entry["failed"] = {
            d.path.name: sorted({e for e in state.runs[d.path.name].errors if e})
            for d in docs
            if d.path.name in state.runs and d not in good
        }
        entry["units_per_s"] = median_throughput(state, good) if good else None
        entry["reps"] = n_reps(state)
        entry["cores"] = median_cores(state, good) if good else None
        entry["vs_raw"] = median_ratio(state, base, good) if base and good and name != "baseline" else (1.0 if good else None)
        if name in PEERS and rag is not None and good:
            common = [d for d in good if d in ok_docs(rag, docs)]
            entry["ragprep_speedup"] = median_ratio(rag, state, common) if common else None
            entry["ragprep_speedup_cpu"] = median_ratio(rag, state, common, "cpu") if common else None
            entry["ragprep_cores"] = median_cores(rag, common) if common else None
            entry["speedup_files"] = len(common)
        entry["per_file_units_per_s"] = {}
        for d in docs:
            runs = state.runs.get(d.path.name)
            secs = [s for s in (runs.seconds if runs else []) if s is not None]
            entry["per_file_units_per_s"][d.path.name] = d.units / statistics.median(secs) if secs else None
        entry["keeps"] = keep_counts(state, docs, rag)
        out["tools"][name] = entry
    wanted = {k: sum(manifest.get(d.path.name, {}).get(k, 0) for d in docs) for k in KEEP_COLUMNS}
    out["manifest"] = wanted if manifest else None
    return out


def label(name: str, fmt: str, standin: bool) -> str:
    text = LABEL[name][fmt] if isinstance(LABEL[name], dict) else LABEL[name]
    return text + ("*" if name == "unstructured" and standin else "")


def report(summary: dict, fmt: str, standin: bool, print_) -> list[str]:
    unit = UNIT[fmt]
    tools = summary["tools"]
    n_files = len(summary["files"])
    print_(f"\n=== {fmt.upper()}: {n_files} files, {summary['units']} {unit} ===")
    rows = []
    for name, entry in tools.items():
        if not entry["units_per_s"]:
            why = entry.get("reason") or "; ".join(sorted({e for errs in entry["failed"].values() for e in errs})) or "no run"
            rows.append([label(name, fmt, standin), "-", "-", "-", "-", "-", "-", (why.splitlines() or [""])[0][:100]])
            continue
        partial = "" if entry["files_ok"] == n_files else f"{entry['files_ok']}/{n_files} files"
        speed = fmt_x(entry.get("ragprep_speedup")) if name in PEERS else ""
        speed_cpu = fmt_x(entry.get("ragprep_speedup_cpu")) if name in PEERS else ""
        cores = f"{entry['cores']:.1f}" if entry.get("cores") else "-"
        rows.append(
            [label(name, fmt, standin), fmt_num(entry["units_per_s"]), fmt_num(entry["vs_raw"]), cores, speed, speed_cpu, str(entry["reps"]), partial]
        )
    print_(table(rows, ["tool", f"{unit}/s", "x raw", "cores", "ragprep speed-up", "(CPU time)", "reps", "note"]))
    # Per file.
    names = [n for n in tools if any(tools[n]["per_file_units_per_s"].values())]
    rows = []
    for fname in summary["files"]:
        row = [fname, str(summary["file_units"][fname])]
        for n in names:
            row.append(fmt_num(tools[n]["per_file_units_per_s"].get(fname)))
        rows.append(row)
    short = {"baseline": "raw", "ragprep": "ragprep", "ragprep_ocr": "ragprep+OCR", "pymupdf4llm": "pymupdf4llm", "unstructured": "unstructured"}
    print_(f"\nper file, {unit}/s (median):")
    print_(table(rows, ["file", unit] + [short[n] for n in names]))
    # What each keeps.
    print_(f"\nwhat each keeps ({fmt}, all files, first repetition):")
    rows = []
    if summary.get("manifest"):
        m = summary["manifest"]
        rows.append(["in the files (MANIFEST.tsv)"] + [str(m.get(k, "-")) if (fmt == "pptx" or k in ("tables", "pictures")) else "-" for k in KEEP_COLUMNS] + ["", ""])
    for name in ("ragprep", "pymupdf4llm", "unstructured", "baseline"):
        entry = tools.get(name)
        keeps = entry.get("keeps") if entry else None
        if not keeps:
            continue
        if name == "baseline":
            rows.append([label(name, fmt, standin), "-", "-", "-", "-", str(keeps["chars"]), str(keeps["units_seen"])])
            continue
        cells = []
        for k in KEEP_COLUMNS:
            value = str(keeps[k])
            if fmt == "pdf" and k in ("charts", "notes"):
                value = "-"
            if k == "notes" and name == "unstructured" and fmt == "pptx":
                value += f" ({keeps['notes_opt_in']} opt-in)"
            cells.append(value)
        rows.append([label(name, fmt, standin)] + cells + [str(keeps["chars"]), str(keeps["units_seen"] or "-")])
    print_(table(rows, ["tool", "tables", "charts", "notes", "pictures", "text chars", f"{unit} seen"]))
    # Aims.
    lines = []
    rag = tools.get("ragprep", {})
    for peer in PEERS:
        entry = tools.get(peer)
        if not entry or entry.get("ragprep_speedup") is None:
            why = (entry or {}).get("reason") or "failed on every file"
            lines.append(f"aim {AIM_SPEEDUP:g}x vs {peer} ({fmt}): n/a ({why})")
            continue
        speedup = entry["ragprep_speedup"]
        scope = "" if entry["speedup_files"] == n_files else f" on {entry['speedup_files']}/{n_files} files"
        verdict = "MET" if speedup >= AIM_SPEEDUP else "NOT MET"
        extra = ""
        if entry.get("ragprep_speedup_cpu") and entry.get("cores") and entry.get("ragprep_cores"):
            extra = (
                f" (CPU time {entry['ragprep_speedup_cpu']:.1f}x; cores busy: {peer} {entry['cores']:.1f}, "
                f"ragprep {entry['ragprep_cores']:.1f})"
            )
        lines.append(f"aim {AIM_SPEEDUP:g}x vs {peer} ({fmt}): {speedup:.1f}x {verdict}{scope}{extra}")
    keeps_rag = (rag or {}).get("keeps")
    if not keeps_rag:
        lines.append(f"keeps ({fmt}): n/a (ragprep produced nothing)")
        print_("")
        for line in lines:
            print_(line)
        return lines
    columns = ("tables", "pictures") if fmt == "pdf" else KEEP_COLUMNS
    verdicts = []
    for k in columns:
        best_peer = max(((tools.get(p) or {}).get("keeps") or {}).get(k, 0) for p in PEERS)
        verdicts.append(f"{k} {keeps_rag.get(k, 0)} vs peers' best {best_peer}")
    all_kept = all(keeps_rag.get(k, 0) >= max(((tools.get(p) or {}).get("keeps") or {}).get(k, 0) for p in PEERS) for k in columns)
    lines.append(f"keeps ({fmt}): {'YES' if all_kept else 'NO'} ({'; '.join(verdicts)})")
    print_("")
    for line in lines:
        print_(line)
    return lines


def versions_line(tools: dict[str, ToolState]) -> str:
    merged: dict[str, str] = {}
    for state in tools.values():
        merged.update(state.versions)
    return ", ".join(f"{k} {v}" for k, v in sorted(merged.items()))


def profile_ragprep(docs: list[Doc], top: int, out_dir: Path, print_) -> dict:
    """cProfile of ragprep (OCR off) per format, after one warm run; top functions by own time."""
    from ragprep.settings import Settings
    from ragprep.storage import Layout
    from tasks.ingest.chunking import build_chunks
    from tasks.ingest.extract import ExtractContext, extract

    def run_all(files: list[Doc]) -> None:
        for doc in files:
            with tempfile.TemporaryDirectory(prefix="ragprep-prof-") as tmp:
                settings = Settings(root=Path(tmp), ocr={"enabled": False})
                ctx = ExtractContext(doc_id="bench", source_path=str(doc.path), settings=settings, layout=Layout(settings.root), ocr=None)
                result = extract(doc.path, ctx)
                build_chunks("bench", str(doc.path), result.format, result.elements, result.outline, result.n_units, settings)

    found = {}
    for fmt in ("pdf", "pptx"):
        files = [d for d in docs if d.fmt == fmt]
        if not files:
            continue
        run_all(files)
        profiler = cProfile.Profile()
        profiler.enable()
        run_all(files)
        profiler.disable()
        buffer = io.StringIO()
        stats = pstats.Stats(profiler, stream=buffer)
        stats.sort_stats("tottime").print_stats(top)
        stats.sort_stats("cumulative").print_stats(top * 2)
        text = buffer.getvalue()
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"profile_ragprep_{fmt}.txt").write_text(text, encoding="utf-8")
        print_(f"\n--- cProfile, ragprep OCR off, {fmt} (own time, top {top}; full: bench/results/profile_ragprep_{fmt}.txt)")
        stats = pstats.Stats(profiler)
        entries = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
        total = sum(v[2] for v in stats.stats.values())
        found[fmt] = []
        for (filename, line, func), (cc, nc, tt, ct, _) in entries:
            where = f"{Path(filename).name}:{line}({func})" if line else func
            print_(f"  {tt:7.2f}s own {ct:7.2f}s cum {nc:8d} calls  {where}")
            found[fmt].append({"function": where, "own_s": tt, "cum_s": ct, "calls": nc})
        print_(f"  (total profiled own time {total:.2f} s)")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="folder of PDFs and PPTX (default: ../shared/corpus)")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions per tool and file (median is reported)")
    parser.add_argument("--ocr-repeat", type=int, default=1, help="repetitions of ragprep with OCR on (slow; 0 skips)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 repetition, no OCR-on timing")
    parser.add_argument(
        "--unstructured",
        choices=("auto", "installed", "standin"),
        default="auto",
        help="auto: run unstructured as installed, and if it fails offline (no spaCy model) time it with the "
        "offline stand-in; installed: never substitute (failing files are reported as failing); "
        "standin: always use the stand-in",
    )
    parser.add_argument("--skip", action="append", default=[], choices=("pymupdf4llm", "unstructured"), help="leave a peer out")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=570,
        help="wall-clock budget: repetitions after the first (and the OCR-on pass) stop when the next would end past it",
    )
    parser.add_argument("--timeout-s", type=float, default=600, help="per tool call; a tool that takes longer is stopped")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the results")
    parser.add_argument("--profile", action="store_true", help="also cProfile ragprep (OCR off) per format and print the top costs")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat, args.ocr_repeat = 1, 0
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    loaded = read_corpus(args.corpus, discover, "no .pdf or .pptx files in {}")
    if loaded is None:
        return 2
    corpus, docs = loaded
    ragprep_env = sorted(k for k in os.environ if k.startswith("RAGPREP_"))

    tools, run_info, wall = run_bench(args, docs, log)
    u_info = run_info["unstructured"]
    manifest = read_manifest(corpus)
    standin = bool(u_info.get("standin"))

    lines_out: list[str] = []

    def print_(text: str = "") -> None:
        print(text)
        lines_out.append(text)

    print_(f"ragprep extraction benchmark: {len(docs)} files in {args.corpus}")
    print_(f"aim: {AIM_TEXT}")
    print_(
        f"ratios measured in one run on {platform.node() or 'this machine'} ({os.cpu_count()} CPUs); "
        f"{run_info['repetitions']} repetition(s), OCR-on {args.ocr_repeat if tools['ragprep_ocr'].runs else 0}; units/s are medians; "
        "'x raw' = tool units/s / raw baseline units/s; 'ragprep speed-up' = ragprep (OCR off) units/s / peer units/s "
        "(wall clock; the aim is judged on it); '(CPU time)' = the same per CPU second; 'cores' = CPU s / wall s"
    )
    print_(f"versions: {versions_line(tools)}")
    if run_info["budget_note"]:
        print_(f"note: {run_info['budget_note']}")
    if ragprep_env:
        print_(f"note: RAGPREP_* environment variables are set and apply to ragprep here: {', '.join(ragprep_env)}")
    summaries = {}
    aims: list[str] = []
    for fmt in ("pdf", "pptx"):
        if any(d.fmt == fmt for d in docs):
            summaries[fmt] = summarise(tools, docs, manifest, fmt)
            aims += report(summaries[fmt], fmt, standin, print_)

    print_("\nnotes:")
    for name in ("pymupdf4llm", "unstructured"):
        state = tools.get(name)
        if state is not None and not state.runs:
            print_(f"- {name}: {state.reason}")
    if tools.get("pymupdf4llm") and tools["pymupdf4llm"].runs:
        print_("- pymupdf4llm: to_markdown(path, use_ocr=False) in its default layout mode (PyMuPDF's ONNX layout model); "
           "it writes no pictures unless write_images/embed_images, has no chart or notes concept, and lays a PPTX out "
           "as pages (slide boundaries lost: see 'slides seen')")
    if tools.get("unstructured") and tools["unstructured"].runs:
        probe = u_info.get("probe", {})
        failed = {k: v for k, v in probe.items() if v != "ok"}
        if probe:
            kinds: dict[str, int] = {}
            for err in failed.values():
                kinds[err] = kinds.get(err, 0) + 1
            detail = "; ".join(f"{n}x {e if len(e) <= 160 else e[:157] + '...'}" for e, n in kinds.items())
            print_(f"- unstructured as installed: {len(probe) - len(failed)}/{len(probe)} files gave elements"
                   + (f"; failed: {detail}" if failed else ""))
        if standin:
            print_(f"- unstructured*: timed with an {u_info['standin']}")
        elif failed:
            print_("- unstructured: timed as installed; files where it failed are left out of its speed and counted as failing")
        print_("- unstructured: partition(filename, strategy='fast'); the fast strategy infers no PDF tables and emits "
               "no pictures; PPTX charts and pictures are skipped; slide notes only with include_slide_notes=True "
               "('opt-in' column)")
    if tools.get("ragprep_ocr") and not tools["ragprep_ocr"].runs:
        print_(f"- ragprep OCR on: {tools['ragprep_ocr'].reason}")
    elif tools.get("ragprep_ocr"):
        ocr_ok = {"pdf": 0, "pptx": 0}
        for doc in docs:
            runs = tools["ragprep_ocr"].runs.get(doc.path.name)
            if runs and runs.first and runs.first.get("ok"):
                ocr_ok[doc.fmt] += (runs.first.get("counts") or {}).get("ocr_ok", 0)
        print_(
            "- ragprep OCR on: fresh empty root (no OCR cache) per file and repetition; elements with OCR text: "
            f"{ocr_ok['pdf']} (pdf pages/pictures), {ocr_ok['pptx']} (pptx pictures)"
        )
    print_("- notes kept = ragprep's speaker-notes passages whose opening words appear in the tool's output")
    print_(f"\nbench wall time: {wall:.0f} s")

    profile = profile_ragprep(docs, 12, args.json.parent, print_) if args.profile else None

    ragprep_failures = {}
    for name in ("ragprep", "ragprep_ocr"):
        state = tools.get(name)
        if state is None:
            continue
        if name == "ragprep" and not state.available and not state.runs:
            ragprep_failures[name] = {"*": state.reason}
        for fname, runs in state.runs.items():
            errors = sorted({e for e in runs.errors if e})
            if errors:
                ragprep_failures.setdefault(name, {})[fname] = errors
    if ragprep_failures:
        print_(f"\nRAGPREP FAILED: {json.dumps(ragprep_failures, ensure_ascii=False)}")

    result = {
        **result_header(args.corpus, args),
        "versions": {name: state.versions for name, state in tools.items()},
        "aim": AIM_TEXT,
        "aim_lines": aims,
        "units": {d.path.name: d.units for d in docs},
        "unstructured": u_info,
        "budget_note": run_info["budget_note"],
        "formats": summaries,
        "seconds": {
            name: {f: runs.seconds for f, runs in state.runs.items()} for name, state in tools.items()
        },
        "cpu_seconds": {
            name: {f: runs.cpu for f, runs in state.runs.items()} for name, state in tools.items()
        },
        "profile": profile,
        "ragprep_failures": ragprep_failures,
        "wall_s": wall,
        "printed": lines_out,
    }
    write_result(args.json, result)
    return 1 if ragprep_failures else 0


if __name__ == "__main__":
    sys.exit(main())
