"""The pymupdf-layout model (the quotes stage's default layout backend) as pymupdf loads it against ragprep's
remade sessions (onnxruntime thread spinning off, ``passive_layout_sessions``), in one run.

Run from the repository root::

    .venv/bin/python bench/layout.py             # the first 14 pages of three corpus PDFs, 2 rounds
    .venv/bin/python bench/layout.py --quick     # one PDF, 1 round (smoke)

Each side runs in its own process (sides alternate between rounds): one warm-up page, then every page through
``PyMuPdfLayoutBackend.page_layout``, timed by the process's own CPU time (user + system) and wall clock. Printed:
CPU s and wall s per page of each side, the ratios passive / as loaded, and whether both found the same regions on
every page. The machine is shared and noisy: the ratios are the result. Results also go to bench/results/layout.json.
Exit status 0 whatever the ratios, 1 when the regions differ, 2 for a bad corpus path.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench_common import DEFAULT_CORPUS, REPO_ROOT, result_header, results_json, write_result

DEFAULT_JSON = results_json("layout")
PDFS = ("pdf_ko_assembly_review_report.pdf", "pdf_auto_fmvss214_side_impact.pdf", "pdf_scan_multipage_ocr.pdf")
WORKER = """
import hashlib, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import pymupdf
from ragprep.engines import layout
side, pages = sys.argv[2], int(sys.argv[3])
layout._SESSIONS_PASSIVE = side == "as-loaded"  # as loaded: never remade
layout.passive_layout_sessions()
backend, out, n = layout.PyMuPdfLayoutBackend(), [], 0
cpu = wall = 0.0
for path in sys.argv[4:]:
    with pymupdf.open(path) as doc:
        backend.page_layout(doc[0])  # warm-up, not timed
        for i in range(min(pages, doc.page_count)):
            r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            out.append(repr(backend.page_layout(doc[i])))
            r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            cpu += r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
            wall += w1 - w0
            n += 1
print(json.dumps({"pages": n, "cpu": cpu, "wall": wall, "regions": hashlib.sha256("".join(out).encode()).hexdigest()}))
"""


def run_side(side: str, pages: int, paths: list[Path]) -> dict:
    """One side in a fresh process: pages laid out, CPU s, wall s and a digest of every region found."""
    proc = subprocess.run([sys.executable, "-c", WORKER, str(REPO_ROOT), side, str(pages), *map(str, paths)],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    """Lay the pages out on both sides, print per-page costs and ratios, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--pages", type=int, default=14, help="pages per PDF (from the first)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="one PDF, one round")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = parser.parse_args()
    paths = [args.corpus / name for name in (PDFS[:1] if args.quick else PDFS)]
    if missing := [p for p in paths if not p.is_file()]:
        print(f"error: {missing[0]} not found; pass --corpus with the shared corpus folder", file=sys.stderr)
        return 2
    totals = {side: {"pages": 0, "cpu": 0.0, "wall": 0.0, "regions": set()} for side in ("as-loaded", "passive")}
    for number in range(1 if args.quick else args.rounds):
        for side in (("as-loaded", "passive") if number % 2 == 0 else ("passive", "as-loaded")):
            got = run_side(side, args.pages, paths)
            total = totals[side]
            total["pages"] += got["pages"]
            total["cpu"] += got["cpu"]
            total["wall"] += got["wall"]
            total["regions"].add(got["regions"])
    same = totals["as-loaded"]["regions"] == totals["passive"]["regions"] and len(totals["passive"]["regions"]) == 1
    rows = {side: {"pages": t["pages"], "cpu_s_per_page": t["cpu"] / t["pages"], "wall_s_per_page": t["wall"] / t["pages"]}
            for side, t in totals.items()}
    for side, row in rows.items():
        print(f"{side:10s} {row['pages']:4d} pages  {row['cpu_s_per_page']:.3f} CPU s/page  {row['wall_s_per_page']:.3f} wall s/page")
    cpu_ratio = rows["passive"]["cpu_s_per_page"] / rows["as-loaded"]["cpu_s_per_page"]
    wall_ratio = rows["passive"]["wall_s_per_page"] / rows["as-loaded"]["wall_s_per_page"]
    print(f"passive / as loaded: CPU {cpu_ratio:.2f}, wall {wall_ratio:.2f}; same regions on every page: {same}")
    result = result_header(args.corpus, args) | {"sides": rows, "cpu_ratio": cpu_ratio, "wall_ratio": wall_ratio,
                                                 "same_regions": same}
    write_result(args.json, result)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
