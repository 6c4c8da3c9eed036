"""How faithfully ragprep reads real PDFs: structure and text health, against raw PyMuPDF and pymupdf4llm.

Run from the repository root::

    .venv/bin/python bench/fidelity.py                 # every PDF of ../shared/corpus, 6 sampled pages for pymupdf4llm
    .venv/bin/python bench/fidelity.py --sample 0      # pymupdf4llm on every page (slow: about 1 s a page)
    .venv/bin/python bench/fidelity.py --only fmvss    # documents whose name contains "fmvss"

Per document and in total, for ragprep (extract + chunk, OCR off), raw PyMuPDF ``page.get_text()`` and
``pymupdf4llm.to_markdown(use_ocr=False)``:

* ``heads``: running-head/foot lines left in the output.  The reference set is built here, independently of
  ragprep: lines among the two top- or bottom-most of a page whose text (digits folded) repeats at the same
  height on at least 20 % of the pages (2 at least) and has a 3-letter word; page numbers alone are not counted (they cannot be found in running text); a line of the output counts when it is a running line or holds one of 25+ characters.  ragprep is
  counted in its chunks (whole document); the peers on the sampled pages, and ragprep too on those pages
  (``heads@s``) so the columns compare.
* ``bad_titles``: chunk titles (ragprep) or Markdown headings (pymupdf4llm) that are a running head or a
  placeholder bookmark ("책갈피", "Bookmark", "Untitled").
* ``sections``: chunks whose numbered-section labels (S5.1.2, 5.2.1, § 571.209, Annex 3, 제3조 at the start of a
  paragraph, table-of-contents lines aside) all lie under the deepest label of the same kind in the chunk's heading
  path (equal or descendant), or, with no label of their kind there, inside a § or annex the path names;
  chunks without such a label are not counted (a bare "5." counts as a label in the heading path only).  pymupdf4llm: its text cut at its headings, the path being the
  heading stack.
* ``dict``: share of English words (2+ letters) that are in pyspellchecker's dictionary; ``hangul_long``: share
  of Hangul syllables in runs of 13 or more (Korean words are rarely that long: a sign of lost word spaces).
* ``tables`` / ``header``: tables found and those whose first row looks like a header (every cell filled, none
  a number); ``cont``: table pairs continued across a page break (a table ending in the bottom quarter of a page
  and one starting in the top quarter of the next with as many columns) and how many of them ragprep joined.
* tagged PDFs (a structure tree): ``order`` = reading-order similarity, NID as opendataloader-bench defines it
  (1 - indel distance / total length, rapidfuzz), of each tool's text against the text of the structure tree's
  marked content in tree order, on the first ``--struct-pages`` pages; ``head_sim`` = the same over the heading
  texts (H, H1-H6, Title) joined in order.
* ``time``: seconds for ragprep and pymupdf4llm, and ragprep's time as a multiple of raw PyMuPDF's.

Needs pdfplumber (structure tree) and pymupdf4llm (the ``bench`` extra); a missing one skips its columns.
Results also go to bench/results/fidelity.json.  The exit status is 0 whatever the figures are.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench_common import DEFAULT_CORPUS, REPO_ROOT, put_on_path, result_header, results_json, write_result

put_on_path(REPO_ROOT)

import pymupdf  # noqa: E402

PLACEHOLDERS = re.compile(r"^\s*(책갈피|bookmark|untitled|제목\s*없음)\s*\d*\s*$", re.IGNORECASE)
LABEL_RE = re.compile(
    r"^(?:#+\s*)?(?:\*\*|_)?\s*(?:"
    r"(?P<para>§)\s*(?P<pnum>\d+\.\d+[a-z]?)"
    r"|(?P<annex>annex|appendix|부록|별지)\s+(?P<anum>\d+|[A-Z]\b)"
    r"|(?P<s>S)(?P<snum>\d+(?:\.\d+)*)(?=[.\s(]|$)"
    r"|제\s*(?P<jo>\d+)\s*조"
    r"|(?P<num>\d+(?:\.\d+)+)\.?(?=\s+\S)"
    r")",
    re.IGNORECASE | re.MULTILINE,
)
CAPTION_RE = re.compile(r"^\s*(fig\.|figure|table|chart|그림|표|도)\s*#", re.IGNORECASE)
TOC_RE = re.compile(r"(?:\.\s?){4,}\s*\d+\s*$")
TOC_HEAD_RE = re.compile(r"^#+ .*\s\d{1,3}$")
"""A heading line ending in a page number: a table-of-contents entry (or a running head)."""
HEADING_TYPES = {"H", "H1", "H2", "H3", "H4", "H5", "H6", "Title"}


def section_label(text: str, heading: bool = False) -> tuple[str, tuple[str, ...]] | None:
    """(kind, parts) of a numbered-section label at the start of ``text``, or None; a bare "5." counts only in a
    ``heading`` (a heading path entry), since in running text it is a list item."""
    m = LABEL_RE.match(text.strip())
    if m and re.match(r"\s*[a-z]", text.strip()[m.end() :].lstrip(".")):
        return None  # "5.2.1 and a force ...": a cross-reference a line break put first
    if not m:
        top = re.match(r"^(?:#+\s*)?(?:\*\*)?\s*(\d{1,2})\.?\s+\S", text.strip()) if heading else None
        return ("num", (top.group(1),)) if top else None
    if m.group("para"):
        return "§", (m.group("pnum"),)
    if m.group("annex"):
        return "annex", (m.group("anum").upper(),)
    if m.group("s"):
        return "S", tuple(m.group("snum").split("."))
    if m.group("jo"):
        return "jo", (m.group("jo"),)
    return "num", tuple(m.group("num").split("."))


HOLDERS = {"§": 0, "annex": 1, "chapter": 1}
"""Kinds that hold numbered paragraphs of other kinds (a whole annex may be one chunk)."""


def under(label: tuple[str, tuple[str, ...]], path_labels: list[tuple[str, tuple[str, ...]]]) -> bool:
    """Whether ``label`` is equal to or below the deepest path label of the same kind; with none of its kind, whether
    the path names a section of a holding kind (§, annex) that it lies in as a whole."""
    same = [p for p in path_labels if p[0] == label[0]]
    if not same:
        return label[0] not in HOLDERS and any(p[0] in HOLDERS for p in path_labels)
    deepest = same[-1][1]
    return label[1][: len(deepest)] == deepest


def paragraphs(markdown: str) -> list[str]:
    """Paragraph starts of a Markdown text (blank-line separated, every heading line its own)."""
    out = []
    for block in re.split(r"\n\s*\n", markdown):
        for line in block.split("\n"):
            if line.startswith("#"):
                out.append(line)
        first = block.strip().split("\n", 1)[0]
        if first and not first.startswith("#"):
            out.append(first)
    return out


def segment_agrees(path: list[str], body: str) -> bool | None:
    """Whether every numbered label starting a paragraph of ``body`` lies under ``path``; None without labels."""
    labels = [lab for lab in (section_label(p) for p in paragraphs(body) if not TOC_RE.search(p) and not TOC_HEAD_RE.match(p)) if lab]
    if not labels:
        return None
    path_labels = [lab for lab in (section_label(p, heading=True) for p in path) if lab]
    return all(under(lab, path_labels) for lab in labels)


def fold(text: str) -> str:
    """Whitespace collapsed, digits folded: the key of a running line."""
    return re.sub(r"\d+", "#", " ".join(text.split())).lower()


def running_lines(doc: pymupdf.Document) -> set[str]:
    """Texts of lines repeated at the page edges (the bench's own reference, see the module docstring)."""
    seen: dict[tuple[str, int], set[int]] = {}
    texts: dict[tuple[str, int], set[str]] = {}
    for page in doc:
        lines = []
        for block in page.get_text("dict").get("blocks", []):
            for line in block.get("lines", []):
                text = " ".join("".join(s["text"] for s in line["spans"]).split())
                if len(text) >= 2:
                    lines.append((line["bbox"][1], line["bbox"][3], text))
        if not lines:
            continue
        tops = sorted({round(y0) for y0, _, _ in lines})[:2]
        bottoms = sorted({round(y1) for _, y1, _ in lines})[-2:]
        for y0, y1, text in lines:
            if round(y0) in tops or round(y1) in bottoms:
                key = (fold(text), round((y0 + y1) / 8))
                seen.setdefault(key, set()).add(page.number)
                texts.setdefault(key, set()).add(text)
    need = max(2, 0.2 * doc.page_count)
    heads = set()
    for key, pages in seen.items():
        if len(pages) >= need and re.search(r"[^\W\d_]{3}", key[0]) and not CAPTION_RE.match(key[0]):
            heads |= {t for t in texts[key] if len(t) >= 6}
    return heads


def count_heads(text: str, heads: set[str]) -> int:
    """Lines (or paragraphs) of ``text`` that are a running line, or hold one of 25+ characters ("Euro NCAP" in
    running text is a mention, "Nat'l Highway Traffic Safety Admin., DOT" inside a paragraph is a head)."""
    found = 0
    for line in re.split(r"\n", text):
        flat = " ".join(line.replace("#", " ").replace("*", " ").split())
        if not flat:
            continue
        found += sum(1 for h in heads if flat == h or (len(h) >= 25 and h in flat))
    return found


def is_bad_title(title: str, heads: set[str]) -> bool:
    flat = " ".join(title.replace("#", " ").replace("*", " ").split())
    return bool(PLACEHOLDERS.match(flat)) or any(h in flat for h in heads if len(h) >= 8)


_DICT = None


def dictionary_share(text: str) -> float | None:
    global _DICT
    if _DICT is None:
        from spellchecker import SpellChecker

        _DICT = SpellChecker().word_frequency.dictionary
    words = [w.lower() for w in re.findall(r"[A-Za-z]{2,}", text)]
    if len(words) < 50:
        return None
    return sum(1 for w in words if w in _DICT) / len(words)


def hangul_long_share(text: str) -> float | None:
    runs = re.findall(r"[가-힣]+", text)
    total = sum(len(r) for r in runs)
    if total < 50:
        return None
    return sum(len(r) for r in runs if len(r) >= 13) / total


def header_like(markdown: str) -> bool:
    first = next((ln for ln in markdown.split("\n") if ln.startswith("|")), "")
    cells = [c.strip() for c in first.strip().strip("|").split("|")]
    return bool(cells) and all(c and not re.fullmatch(r"[-+−.,%\d\s()]+", c) for c in cells)


def md_tables(markdown: str) -> list[str]:
    return [m.group(0) for m in re.finditer(r"(?:^\|.*\|\s*$\n?)+", markdown, re.MULTILINE)]


def strip_md(text: str) -> str:
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)
    text = re.sub(r"^#+\s*|\*\*|__|^\s*\|?\s*:?-{3,}.*$|\|", " ", text, flags=re.MULTILINE)
    return " ".join(text.split())


def nid(a: str, b: str) -> float | None:
    from rapidfuzz.distance import Indel

    if not a or not b:
        return None
    return Indel.normalized_similarity(a, b)


# ---------------------------------------------------------------- the structure tree reference


def struct_reference(path: Path, n_pages: int) -> tuple[dict[int, str], dict[int, list[str]]] | None:
    """Per page: text of the marked content in structure-tree order, and heading texts; None if untagged."""
    try:
        import pdfplumber
    except ImportError:
        return None
    texts: dict[int, str] = {}
    heads: dict[int, list[str]] = {}
    with pdfplumber.open(path) as pdf:
        for page in pdf.pages[:n_pages]:
            try:
                tree = page.structure_tree
            except Exception:  # a page whose tree pdfplumber cannot read is left out of the comparison
                continue
            if not tree:
                continue
            words: dict[int, list[str]] = {}
            for w in page.extract_words(extra_attrs=["mcid"]):
                if w.get("mcid") is not None:
                    words.setdefault(w["mcid"], []).append(w["text"])
            order: list[str] = []
            page_heads: list[str] = []

            def walk(node: dict, order=order, page_heads=page_heads, words=words) -> None:
                own = " ".join(" ".join(words.get(m, [])) for m in node.get("mcids") or [])
                if own:
                    order.append(own)
                before = len(order)
                for child in node.get("children", []):
                    walk(child)
                if node.get("type") in HEADING_TYPES:
                    page_heads.append(" ".join([own] + order[before:]).strip())

            for node in tree:
                walk(node)
            texts[page.page_number] = " ".join(order)
            heads[page.page_number] = [h for h in page_heads if h]
    return (texts, heads) if texts else None


# ---------------------------------------------------------------- the three readers


@dataclass
class Reading:
    """What one tool made of one document."""

    page_text: dict[int, str] = field(default_factory=dict)
    """Text per page (1-based) on the pages it read."""
    segments: list[tuple[list[str], str]] = field(default_factory=list)
    """(heading path, body) per chunk or heading-delimited part."""
    titles: list[str] = field(default_factory=list)
    headings: dict[int, list[str]] = field(default_factory=dict)
    tables: list[str] = field(default_factory=list)
    joined_tables: int = 0
    table_boxes: list[tuple[int, tuple, int]] = field(default_factory=list)
    """(page, bbox, columns) per table (ragprep only)."""
    all_text: str = ""
    seconds: float = 0.0


def read_ragprep(path: Path) -> Reading:
    from ragprep.settings import Settings
    from ragprep.storage import Layout
    from tasks.ingest.chunking import build_chunks
    from tasks.ingest.extract import ExtractContext, extract

    out = Reading()
    with tempfile.TemporaryDirectory(prefix="ragprep-fidelity-") as tmp:
        settings = Settings(root=Path(tmp), ocr={"enabled": False})
        start = time.perf_counter()
        ctx = ExtractContext(doc_id="bench", source_path=str(path), settings=settings, layout=Layout(settings.root), ocr=None)
        result = extract(path, ctx)
        chunks = build_chunks("bench", str(path), result.format, result.elements, result.outline, result.n_units, settings)
        out.seconds = time.perf_counter() - start
    for element in sorted(result.elements, key=lambda e: (e.number, e.order)):
        if element.kind in ("picture", "ocr_page"):
            continue
        out.page_text[element.number] = out.page_text.get(element.number, "") + "\n\n" + element.text
        meta = json.loads(element.meta or "{}")
        if element.kind == "title":
            out.headings.setdefault(element.number, []).append(element.text)
        if element.kind == "table":
            out.tables.append(element.text)
            out.joined_tables += 1 if meta.get("continued_pages") else 0
            out.table_boxes.append((element.number, tuple(element.bbox or ()), meta.get("cols", 0)))
    for chunk in chunks:
        body = chunk.markdown.split("\n", 1)[1] if "\n" in chunk.markdown else ""
        out.segments.append((list(chunk.heading_path), body))
        out.titles.append(chunk.title)
    out.all_text = "\n\n".join(c.markdown for c in chunks)
    return out


def read_raw(doc: pymupdf.Document) -> Reading:
    out = Reading()
    start = time.perf_counter()
    for page in doc:
        out.page_text[page.number + 1] = page.get_text()
    out.seconds = time.perf_counter() - start
    out.all_text = "\n".join(out.page_text.values())
    return out


def read_4llm(path: Path, pages: list[int]) -> Reading | None:
    try:
        import pymupdf4llm
    except ImportError:
        return None
    out = Reading()
    start = time.perf_counter()
    parts = pymupdf4llm.to_markdown(str(path), pages=[p - 1 for p in pages], page_chunks=True, use_ocr=False, show_progress=False)
    out.seconds = time.perf_counter() - start
    stack: list[tuple[int, str]] = []
    body: list[str] = []
    for number, part in zip(pages, parts):
        text = part["text"]
        out.page_text[number] = text
        out.tables += md_tables(text)
        for line in text.split("\n"):
            m = re.match(r"^(#+)\s+(.*)", line)
            if not m:
                body.append(line)
                continue
            out.segments.append(([t for _, t in stack], "\n".join(body)))
            body = [line]
            level, title = len(m.group(1)), strip_md(m.group(2))
            stack = [s for s in stack if s[0] < level] + [(level, title)]
            out.titles.append(title)
            out.headings.setdefault(number, []).append(title)
    out.segments.append(([t for _, t in stack], "\n".join(body)))
    out.all_text = "\n\n".join(out.page_text.values())
    return out


# ---------------------------------------------------------------- figures


def continued_pairs(reading: Reading, heights: dict[int, float]) -> int:
    """Table pairs that continue across a page break (the reference described in the docstring)."""
    pairs = 0
    boxes = sorted(reading.table_boxes)
    for (p1, b1, c1), (p2, b2, c2) in zip(boxes, boxes[1:]):
        if p2 == p1 + 1 and b1 and b2 and c1 == c2 and b1[3] > 0.75 * heights[p1] and b2[1] < 0.25 * heights[p2]:
            pairs += 1
    return pairs


def figures(reading: Reading, heads: set[str], sample: list[int], ref, heights: dict[int, float], whole: bool) -> dict:
    sampled = "\n\n".join(reading.page_text.get(p, "") for p in sample)
    agree = [a for a in (segment_agrees(path, body) for path, body in reading.segments) if a is not None]
    row = {
        "heads": count_heads(reading.all_text, heads) if whole else None,
        "heads@s": count_heads(sampled, heads),
        "bad_titles": sum(1 for t in reading.titles if is_bad_title(t, heads)),
        "titles": len(reading.titles),
        "sections_ok": sum(agree),
        "sections_n": len(agree),
        "dict": dictionary_share(reading.all_text),
        "hangul_long": hangul_long_share(reading.all_text),
        "tables": len(reading.tables),
        "header": sum(1 for t in reading.tables if header_like(t)),
        "cont": continued_pairs(reading, heights) if reading.table_boxes else None,
        "joined": reading.joined_tables,
        "seconds": reading.seconds,
    }
    if ref is not None:
        ref_text, ref_heads = ref
        pages = sorted(p for p in ref_text if p in reading.page_text)
        row["order"] = nid(
            " ".join(ref_text[p] for p in pages).lower(), strip_md(" ".join(reading.page_text[p] for p in pages)).lower()
        )
        mine = " | ".join(h for p in pages for h in reading.headings.get(p, []))
        theirs = " | ".join(h for p in pages for h in ref_heads.get(p, []))
        row["head_sim"] = nid(" ".join(theirs.split()).lower(), " ".join(strip_md(mine).split()).lower()) if reading.headings else 0.0
    return row


def sample_pages(n_pages: int, k: int) -> list[int]:
    if k <= 0 or k >= n_pages:
        return list(range(1, n_pages + 1))
    step = n_pages / k
    return sorted({int(i * step + step / 2) + 1 for i in range(k)})


def measure(path: Path, args) -> dict:
    doc = pymupdf.open(path)
    heads = running_lines(doc)
    heights = {p.number + 1: p.rect.height for p in doc}
    sample = sample_pages(doc.page_count, args.sample)
    ref = struct_reference(path, args.struct_pages)
    struct_pages = sorted(ref[0]) if ref else []
    peer_pages = sorted(set(sample) | set(struct_pages))
    rows = {"ragprep": figures(read_ragprep(path), heads, sample, ref, heights, True)}
    raw = read_raw(doc)
    rows["pymupdf"] = figures(raw, heads, sample, ref, heights, True)
    if not args.no_4llm:
        llm = read_4llm(path, peer_pages)
        if llm is not None:
            rows["pymupdf4llm"] = figures(llm, heads, sample, ref, heights, False)
    rows["ragprep"]["x_raw"] = rows["ragprep"]["seconds"] / max(raw.seconds, 1e-6)
    doc.close()
    return {"pages": len(heights), "sampled": sample, "heads_ref": sorted(heads), "tagged": ref is not None, "tools": rows}


def fmt(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


COLUMNS = ["heads", "heads@s", "bad_titles", "sections", "dict", "hangul_long", "tables", "header", "cont/joined", "order", "head_sim", "seconds"]


def cells(row: dict) -> list[str]:
    sections = f"{row['sections_ok']}/{row['sections_n']}" if row["sections_n"] else "-"
    cont = f"{row['cont']}/{row['joined']}" if row.get("cont") is not None else "-"
    return [
        fmt(row["heads"]), fmt(row["heads@s"]), f"{row['bad_titles']}/{row['titles']}", sections, fmt(row["dict"], 3),
        fmt(row["hangul_long"], 3), fmt(row["tables"]), fmt(row["header"]), cont, fmt(row.get("order"), 3),
        fmt(row.get("head_sim"), 3), fmt(row["seconds"], 1),
    ]


def print_table(results: dict[str, dict]) -> None:
    header = ["document", "tool", *COLUMNS]
    lines = [header]
    for name, res in results.items():
        for tool, row in res["tools"].items():
            lines.append([name[:38], tool] + cells(row))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)))


def totals(results: dict[str, dict]) -> dict:
    out: dict[str, dict] = {}
    for tool in ("ragprep", "pymupdf", "pymupdf4llm"):
        rows = [r["tools"][tool] for r in results.values() if tool in r["tools"]]
        if not rows:
            continue
        ok, n = sum(r["sections_ok"] for r in rows), sum(r["sections_n"] for r in rows)
        orders = [r["order"] for r in rows if r.get("order") is not None]
        heads_sim = [r["head_sim"] for r in rows if r.get("head_sim") is not None]
        out[tool] = {
            "heads": sum(r["heads"] or 0 for r in rows) if tool != "pymupdf4llm" else None,
            "heads@s": sum(r["heads@s"] for r in rows),
            "bad_titles": f"{sum(r['bad_titles'] for r in rows)}/{sum(r['titles'] for r in rows)}",
            "sections": f"{ok}/{n} = {ok / n:.1%}" if n else "-",
            "dict_mean": statistics.mean([r["dict"] for r in rows if r["dict"] is not None] or [0]),
            "hangul_long_mean": statistics.mean([r["hangul_long"] for r in rows if r["hangul_long"] is not None] or [0]),
            "tables": f"{sum(r['header'] for r in rows)}/{sum(r['tables'] for r in rows)} with header",
            "continued/joined": f"{sum(r.get('cont') or 0 for r in rows)}/{sum(r['joined'] for r in rows)}",
            "order_mean": statistics.mean(orders) if orders else None,
            "head_sim_mean": statistics.mean(heads_sim) if heads_sim else None,
            "seconds": sum(r["seconds"] for r in rows),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--only", default="", help="only documents whose file name contains this")
    parser.add_argument("--sample", type=int, default=6, help="pages per document read by pymupdf4llm and compared per page (0: all)")
    parser.add_argument("--struct-pages", type=int, default=12, help="pages of a tagged PDF compared with its structure tree")
    parser.add_argument("--no-4llm", action="store_true", help="leave pymupdf4llm out (fast)")
    parser.add_argument("--json", type=Path, default=results_json("fidelity"))
    args = parser.parse_args(argv)
    corpus = args.corpus.resolve()
    files = sorted(p for p in corpus.glob("*.pdf") if args.only in p.name)
    if not files:
        print(f"no PDFs in {corpus}", file=sys.stderr)
        return 1
    results = {}
    for path in files:
        print(f"... {path.name}", file=sys.stderr, flush=True)
        results[path.name] = measure(path, args)
    print_table(results)
    print()
    for tool, row in totals(results).items():
        print(tool, json.dumps(row, ensure_ascii=False, default=lambda v: round(v, 3)))
    write_result(args.json, {**result_header(corpus, args), "documents": results, "totals": totals(results)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
