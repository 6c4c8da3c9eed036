"""The review report: one self-contained HTML file over real ingested documents.

A small root is built from two real sample documents (a crash-report deck and a textbook PDF);
``qa_pairs`` is written by hand with pairs pointing at real chunks, one of them (and a copied
chunk) carrying script/markup injection attempts, one auto-approved (the spot-check sample).
A *rebuilt* root (one pair gone, one new: another build id) checks that decisions exported
against the first report still apply, in the page and to the tables. The unit tests read the
HTML; the browser test drives Debian's Chromium through Playwright (skipped only when either is
missing).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
from markupsafe import escape

from ragprep.settings import Settings
from ragprep.storage import Layout, atomic_write_parquet
from ragprep.tables import TableStore
from schemas import read_rows, rows_to_table
from schemas.chunks import CHUNKS_SCHEMA, ChunkRow
from schemas.documents import DOCUMENTS_SCHEMA, DocumentRow
from schemas.qa_pairs import QA_PAIRS_SCHEMA, QaPairRow
from schemas.review import DECISIONS_FORMAT, DecisionsFile
from tasks.enrich.run import run_headers
from tasks.ingest.run import assemble_tables, discover, ingest_document
from tasks.qa.registry import describe
from tasks.qa.review import apply_decisions_file, apply_review, load_decisions
from tasks.qa.review_page import flag_help, render_markdown
from tasks.qa.review_report import (
    build_id,
    build_report_data,
    critic_of,
    json_for_script,
    render_report_html,
    spot_check_sample,
    spot_check_size,
    write_review_report,
)
from tasks.qa.run import run_judge, run_qa
from tests.conftest import ingest_into
from tests.test_headers import EN, _deck, first_column, title_line

REPO = Path(__file__).resolve().parents[1]
DECK = REPO / "sample_docs" / "crash_report_frontal_offset.pptx"
BOOK = REPO / "sample_docs" / "textbook_vehicle_safety.pdf"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

SCRIPT_PAYLOAD = "<script>window.__pwned = 1</script>"
IMG_PAYLOAD = '<img src=x onerror="window.__pwned=2">'
BREAKOUT_PAYLOAD = "</script><script>window.__pwned=3</script>"
INJECTED_MARKDOWN = (
    f"# Injected {SCRIPT_PAYLOAD}\n\n"
    f"Paragraph with {IMG_PAYLOAD} and a line separator \u2028 here.\n\n"
    "| Metric | Value |\n|---|---|\n"
    f"| payload | {IMG_PAYLOAD} |\n\n"
    f"> quoted {SCRIPT_PAYLOAD}\n\n"
    "- item [a link](https://example.invalid/x) and ![pic](https://example.invalid/p.png)\n"
)


def _pair(qa_id: str, chunk: ChunkRow | SimpleNamespace, flags: list[str], reasons: list[str], *, status: str = "pending",
          question: str | None = None, answer: str | None = None) -> QaPairRow:
    question = question or f"What does '{chunk.title}' report?"
    answer = answer or "It reports the measured values."
    return QaPairRow(
        qa_id=qa_id, chunk_id=chunk.chunk_id, doc_id=chunk.doc_id, source_path=chunk.source_path,
        slide=chunk.slide, page_start=chunk.page_start, page_end=chunk.page_end,
        question=question, answer=answer, generated_question=question, generated_answer=answer,
        question_type="factual", target_modality="text", language="en",
        flags=flags, flag_reasons=reasons, status=status,
        provider="heuristic", model="heuristic", prompt="qa@1",
    )


@pytest.fixture(scope="module")
def review_root(tmp_path_factory):
    """A root with real documents/elements/chunks and a hand-written qa_pairs table."""
    root = tmp_path_factory.mktemp("review-root")
    settings = Settings(root=root, ocr={"enabled": False})
    outcomes = [ingest_document(r, settings, None) for r in discover([DECK, BOOK], settings)]
    assemble_tables(outcomes, settings, datetime.now(timezone.utc))
    tables = root / "tables"
    chunks = read_rows(tables / "chunks.parquet", ChunkRow, CHUNKS_SCHEMA)
    slides = {c.slide: c for c in chunks if c.source_path.endswith(".pptx")}
    book = [c for c in chunks if c.source_path.endswith(".pdf")]
    injected = slides[3].model_copy(update={
        "chunk_id": "injectedchunk001", "title": f"Injected title {SCRIPT_PAYLOAD}",
        "markdown": INJECTED_MARKDOWN, "markdown_v1": None, "markdown_v0": None,
    })
    atomic_write_parquet(rows_to_table([*chunks, injected], CHUNKS_SCHEMA), tables / "chunks.parquet")
    pairs = [
        _pair("qa-setup-speed", slides[2], ["number_not_in_chunk"], ["65.0 km/h does not occur in the chunk"],
              question="What was the measured impact speed?", answer="65.0 km/h"),
        _pair("qa-camera-dup", slides[5], ["unsupported_answer", "near_duplicate"],
              ["the answer is not in the slide", "same as qa-setup-speed"]),
        _pair("qa-book-hic", book[-1], ["too_short"], ["answer has 1 word"], question="HIC limit?", answer="700"),
        _pair("qa-book-dup", book[1], ["near_duplicate"], ["same as qa-book-hic"]),
        _pair("qa-clean", book[0], [], [], status="approved"),
        _pair("qa-injected", injected, ["answer_leak"], [f"reason {BREAKOUT_PAYLOAD}"],
              question=f"Injected question {SCRIPT_PAYLOAD}?", answer=f"Injected answer {IMG_PAYLOAD}"),
    ]
    atomic_write_parquet(rows_to_table(pairs, QA_PAIRS_SCHEMA), tables / "qa_pairs.parquet")
    documents = read_rows(tables / "documents.parquet", DocumentRow, DOCUMENTS_SCHEMA)
    return {
        "root": root, "pairs": pairs, "flagged": [p for p in pairs if p.flags], "slides": slides, "book": book,
        "pdf_doc": next(d.doc_id for d in documents if d.format == "pdf"),
        "deck_doc": next(d.doc_id for d in documents if d.format == "pptx"),
    }


@pytest.fixture(scope="module")
def report(review_root):
    path = write_review_report(review_root["root"])
    return path, path.read_text(encoding="utf-8")


REBUILT_QUESTION = "What does this slide show about the camera positions?"


def _rebuilt_pairs(review_root) -> list[QaPairRow]:
    """The pairs after a rebuild: qa-book-dup is gone, qa-new-generic is new (so the build id changes)."""
    kept = [p for p in review_root["pairs"] if p.qa_id != "qa-book-dup"]
    new = _pair("qa-new-generic", review_root["slides"][4], ["generic_question"], ["asks about 'this slide'"],
                question=REBUILT_QUESTION, answer="Four cameras.")
    return [*kept, new]


@pytest.fixture(scope="module")
def rebuilt_root(review_root, tmp_path_factory):
    """The review root's tables after a rebuild (``_rebuilt_pairs``), in a root of their own."""
    root = tmp_path_factory.mktemp("rebuilt-root")
    shutil.copytree(review_root["root"] / "tables", root / "tables")
    pairs = _rebuilt_pairs(review_root)
    atomic_write_parquet(rows_to_table(pairs, QA_PAIRS_SCHEMA), root / "tables" / "qa_pairs.parquet")
    assert build_id(pairs) != build_id(review_root["pairs"])
    return {"root": root, "pairs": pairs}


def _embedded_json(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert match, "data block missing"
    return json.loads(match.group(1))


# ---------- unit ----------

def test_report_paths_and_build_are_stable(review_root, report):
    path, html = report
    root = review_root["root"]
    build = build_id(review_root["pairs"])
    assert re.fullmatch(r"[0-9a-f]{12}", build)
    assert path == root / "review" / f"report-{build}.html"
    assert (root / "review" / "latest.html").read_text(encoding="utf-8") == html
    assert f'data-build="{build}"' in html
    # same data, same build: a second report lands on the same name
    assert write_review_report(root) == path
    # an explicit output path is honoured
    other = write_review_report(root, root / "elsewhere" / "r.html")
    assert other == root / "elsewhere" / "r.html" and other.is_file()


def _markup(html: str) -> str:
    """The page without its JSON data block (the page script's state)."""
    return re.sub(r'(<script type="application/json" id="data">).*?(</script>)', r"\1\2", html, count=1, flags=re.S)


def _attributes(markup: str) -> list[tuple[str, str, str]]:
    """Every (tag, attribute, value) of the markup's start tags, as a browser's parser reads them."""
    found: list[tuple[str, str, str]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.extend((tag, name, value or "") for name, value in attrs)

    Collect().feed(markup)
    return found


def _page_script(html: str) -> str:
    return re.search(r"<script>(.*?)</script>", html, re.S).group(1)


def test_report_is_self_contained_with_csp(report):
    _, html = report
    markup = _markup(html)
    # a URL may appear as text (a chunk's link target, shown in grey) or in a tooltip, never where it is loaded or opened
    assert "https://example.invalid/x" in markup
    attributes = _attributes(markup)
    assert not [a for a in attributes if "http" in a[2] and a[1] not in ("title", "content", "http-equiv")]
    assert not [a for a in attributes if a[1].startswith("on")]  # no event handler anywhere
    assert not re.search(r"""\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    assert not re.search(r"<link\b|<iframe\b|<object\b|<embed\b|<a\b", markup, re.I)
    assert re.findall(r"<img\b[^>]*>", markup) and all(  # thumbnails only, as inline data
        re.search(r'src="data:image/(png|jpeg|svg\+xml);base64,', tag) for tag in re.findall(r"<img\b[^>]*>", markup))
    style = re.search(r"<style>(.*?)</style>", markup, re.S).group(1)
    assert "@import" not in style and "url(" not in style
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    assert csp, "CSP meta tag missing"
    directives = {d.strip() for d in csp.group(1).split(";")}
    assert {"default-src 'none'", "style-src 'unsafe-inline'", "img-src data:"} <= directives
    # only the page script may run: its hash (CSP 2 browsers then ignore 'unsafe-inline', kept for older ones)
    script_src = next(d for d in directives if d.startswith("script-src "))
    digest = base64.b64encode(hashlib.sha256(_page_script(html).encode("utf-8")).digest()).decode("ascii")
    assert script_src == f"script-src 'unsafe-inline' 'sha256-{digest}'"


def test_document_text_cannot_break_out(report):
    _, html = report
    markup = _markup(html)
    assert "<script>window.__pwned" not in html
    assert "<img src=x" not in html and not [a for a in _attributes(markup) if a[1].startswith("on")]
    scripts = "".join(re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.S))
    assert "\u2028" not in scripts and "\u2029" not in scripts  # line separators end a JS string; in HTML text they are text
    assert len(re.findall(r"<script\b", html, re.I)) == 2  # the data block and the page script
    assert len(re.findall(r"</script", html, re.I)) == 2
    assert "\\u003cscript\\u003ewindow.__pwned = 1\\u003c/script\\u003e" in html  # the escaped form, in the state
    assert "line separator \u2028 here" in markup  # the chunk's text, as text (json_for_script escapes it in JSON)
    # in the markup the same text is escaped by Jinja2 (question, title, reasons, Markdown and raw Markdown)
    assert markup.count("&lt;script&gt;window.__pwned = 1&lt;/script&gt;") >= 4
    assert "&lt;/script&gt;&lt;script&gt;window.__pwned=3&lt;/script&gt;" in markup
    assert "<h3>Injected &lt;script&gt;" in markup  # a chunk's "#" heading, two levels down
    assert '<span class="img-ref" title="https://example.invalid/p.png">[picture: pic]</span>' in markup


def test_flag_help_comes_from_the_registry(report):
    _, html = report
    help_line = describe("near_duplicate")
    assert help_line and help_line == flag_help("near_duplicate")
    escaped = str(escape(help_line))
    assert f'<span class="badge flag" data-flag="near_duplicate" title="{escaped}">' in _card(html, "qa-camera-dup")
    assert '<span class="code">near_duplicate</span>same as qa-setup-speed' in _card(html, "qa-camera-dup")
    assert f"&mdash; {escaped}</span></h2>" in html  # the group heading
    assert describe("unsupported_segment")  # a flag outside FLAG_CODES is registered too


def test_markdown_is_rendered_without_raw_html_links_or_images():
    out = str(render_markdown("# T <b>x</b>\n\n| a | b |\n|---|---|\n| 1<br>2 | [s](https://e.invalid) |\n\n![p](x.png) **bold** [j](javascript:alert(1))"))
    assert "<h3>T &lt;b&gt;x&lt;/b&gt;</h3>" in out
    assert "<td>1<br>2</td>" in out  # a literal <br> in a table cell is a line break, nothing else of raw HTML
    assert '<td>s<span class="link-target"> (https://e.invalid)</span></td>' in out and "<a" not in out
    assert "[j](javascript:alert(1))" in out  # markdown-it refuses the link: it stays text
    assert '<span class="img-ref" title="x.png">[picture: p]</span>' in out and "<img" not in out
    assert "<strong>bold</strong>" in out


def test_json_for_script_escapes():
    text = json_for_script({"a": "</script><b>&\u2028\u2029"})
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == {"a": "</script><b>&\u2028\u2029"}


def test_embedded_json_round_trips_rows(review_root, report):
    _, html = report
    state = _embedded_json(html)
    data = build_report_data(review_root["root"])
    assert state["format"] == DECISIONS_FORMAT and state["build"] == data["build"]
    assert state["pairs"] == [{k: p[k] for k in ("qa_id", "doc_id", "question", "answer", "flags", "status", "spot_check", "group")}
                              for p in data["pairs"]]
    assert state["headers"] == [] and "thumbs" not in state and "chunks" not in state  # shown in the markup, not sent twice
    assert data["format"] == DECISIONS_FORMAT and data["build"] == build_id(review_root["pairs"])
    listed = {p.qa_id: p for p in review_root["pairs"] if p.flags or p.qa_id == "qa-clean"}
    assert {p["qa_id"] for p in data["pairs"]} == set(listed)  # the flagged pairs, then the spot-check sample
    assert [p["qa_id"] for p in data["pairs"]][-1] == "qa-clean"
    for record in data["pairs"]:
        row = QaPairRow.model_validate({k: record[k] for k in QaPairRow.model_fields})
        assert row == listed[row.qa_id]
        assert record["group"] == (row.flags[0] if row.flags else "spot_check")
        assert record["spot_check"] is (not row.flags)
        assert record["critic"] is None  # the judge has not run on these rows
        assert record["chunk_found"] and record["chunk_id"] in data["chunks"]
    assert data["spot_check"] == {"auto_approved": 1, "sampled": 1, "share": 0.1, "min": 20}
    assert data["chunks"]["injectedchunk001"]["markdown"] == INJECTED_MARKDOWN
    assert data["counts"]["total"] == 6 and data["counts"]["flagged"] == 5
    assert data["counts"]["by_status"] == {"approved": 1, "pending": 5, "rejected": 0}
    by_flag = {r["flag"]: r["total"] for r in data["counts"]["by_flag"]}
    assert by_flag["near_duplicate"] == 2 and by_flag["(none)"] == 1
    assert data["flag_order"] == ["unsupported_answer", "number_not_in_chunk", "near_duplicate", "answer_leak", "too_short"]
    names = {d["doc_id"]: d["file_name"] for d in data["documents"]}
    assert names == {review_root["pdf_doc"]: BOOK.name, review_root["deck_doc"]: DECK.name}


def _row(qa_id: str, *, flags: tuple[str, ...] = (), status: str = "approved", decision: str | None = None) -> QaPairRow:
    chunk = SimpleNamespace(chunk_id="c1", doc_id="d1", source_path="deck.pptx", slide=1, page_start=None, page_end=None,
                            title="Results")
    row = _pair(qa_id, chunk, list(flags), [f"why {f}" for f in flags], status=status)
    return row.model_copy(update={"review_decision": decision})


@pytest.mark.parametrize(("population", "share", "minimum", "expected"), [
    (0, 0.1, 20, 0), (7, 0.1, 20, 7), (20, 0.1, 20, 20), (150, 0.1, 20, 20), (200, 0.1, 20, 20), (201, 0.1, 20, 21),
    (1000, 0.1, 20, 100), (1000, 0.25, 20, 250), (7, 0.1, 0, 1), (50, 0.0, 0, 0), (50, 1.0, 0, 50), (30, 0.0, 5, 5),
])
def test_spot_check_size_rule(population, share, minimum, expected):
    """share of the auto-approved pairs (rounded up), at least the minimum, all of them when there are fewer."""
    assert spot_check_size(population, share, minimum) == expected


def test_spot_check_sample_is_deterministic_and_only_auto_approved():
    pairs = (
        [_row(f"auto-{i:03d}") for i in range(300)]
        + [_row(f"flag-{i}", flags=("too_short",), status="pending") for i in range(20)]
        + [_row(f"flag-ok-{i}", flags=("too_short",), decision="approve") for i in range(5)]  # approved by an expert
        + [_row(f"seen-{i}", decision="approve") for i in range(10)]  # already checked by an expert
        + [_row(f"pend-{i}", status="pending") for i in range(5)]  # held back without a flag
    )
    ids = lambda sample: [p.qa_id for p in sample]  # noqa: E731
    a = spot_check_sample(pairs, "abc123def456", 0.1, 20)
    assert len(a) == 30 and all(p.qa_id.startswith("auto-") for p in a)
    assert ids(spot_check_sample(list(reversed(pairs)), "abc123def456", 0.1, 20)) == ids(a)  # the same build, the same sample
    assert set(ids(a)) != {f"auto-{i:03d}" for i in range(30)}  # drawn, not the first ones
    other = spot_check_sample(pairs, "0123456789ab", 0.1, 20)
    assert len(other) == 30 and set(ids(other)) != set(ids(a))  # another build, another draw
    # a pair leaving the population (decided, rejected) does not reshuffle the others
    rest = [p for p in pairs if p.qa_id != a[0].qa_id]
    assert ids(spot_check_sample(rest, "abc123def456", 0.1, 20))[:29] == ids(a)[1:]
    few = pairs[:12]
    assert set(ids(spot_check_sample(few, "abc123def456", 0.1, 20))) == set(ids(few))  # fewer than 20: all of them
    assert spot_check_sample(pairs, "abc123def456", 0.0, 0) == []


def test_critic_scores_are_read_when_present(review_root):
    pair = review_root["pairs"][0]
    assert critic_of(pair) is None
    judged = pair.model_copy(update={
        "critic_grounded": 4, "critic_standalone": 5, "critic_well_formed": 5, "critic_useful": 2,
        "critic_usable": False, "critic_reasons": ["too vague to be useful"],
    })
    assert critic_of(judged) == {
        "scores": {"grounded": 4, "standalone": 5, "well_formed": 5, "useful": 2},
        "usable": False, "reasons": ["too vague to be useful"],
    }


def test_spot_check_settings_size_the_sample(review_root, tmp_path):
    none = build_report_data(review_root["root"], spot_check_share=0.0, spot_check_min=0)
    assert none["spot_check"]["sampled"] == 0 and not any(p["spot_check"] for p in none["pairs"])
    out = write_review_report(review_root["root"], tmp_path / "r.html", spot_check_share=0.0, spot_check_min=0)
    assert "qa-clean" not in {p["qa_id"] for p in _embedded_json(out.read_text(encoding="utf-8"))["pairs"]}
    assert build_report_data(review_root["root"])["spot_check"]["sampled"] == 1  # defaults: 10 %, at least 20


def test_old_decisions_apply_after_a_rebuild(review_root, tmp_path):
    """Decisions exported against report A still apply, by QA id, to the tables after a rebuild."""
    root = tmp_path / "root"
    shutil.copytree(review_root["root"] / "tables", root / "tables")
    build_a = build_report_data(root)["build"]
    at = "2026-11-30T10:00:00Z"
    decisions = tmp_path / f"decisions-{build_a}.json"
    decisions.write_text(json.dumps({"format": DECISIONS_FORMAT, "build": build_a, "decisions": [
        {"qa_id": "qa-injected", "decision": "reject", "reviewer": "Dr. Kim", "decided_at": at},
        {"qa_id": "qa-clean", "decision": "reject", "reviewer": "Dr. Kim", "decided_at": at},  # a spot check the rules missed
        {"qa_id": "qa-book-hic", "decision": "edit", "question": "What is the HIC15 limit?", "answer": "700",
         "reviewer": "Dr. Kim", "decided_at": at},
        {"qa_id": "qa-book-dup", "decision": "approve", "reviewer": "Dr. Kim", "decided_at": at},  # gone after the rebuild
    ]}), encoding="utf-8")

    regenerated = _rebuilt_pairs(review_root)
    atomic_write_parquet(rows_to_table(regenerated, QA_PAIRS_SCHEMA), root / "tables" / "qa_pairs.parquet")
    assert build_report_data(root)["build"] != build_a

    result = apply_decisions_file(decisions, root)
    assert result.decisions == 4 and result.applied == 3 and result.unknown_qa_ids == ["qa-book-dup"]
    after = {p.qa_id: p for p in read_rows(root / "tables" / "qa_pairs.parquet", QaPairRow, QA_PAIRS_SCHEMA)}
    assert "qa-injected" not in after and "qa-clean" not in after
    hic = after["qa-book-hic"]
    assert (hic.question, hic.answer, hic.status, hic.review_decision, hic.reviewer) == (
        "What is the HIC15 limit?", "700", "approved", "edit", "Dr. Kim")
    assert after["qa-new-generic"].status == "pending" and after["qa-new-generic"].review_decision is None

    stored = load_decisions(root)
    # whether each decided pair had been auto-approved is recorded when applied (a rejected pair leaves the tables)
    assert {k: v.auto_approved for k, v in stored.items()} == {
        "qa-injected": False, "qa-clean": True, "qa-book-hic": False, "qa-book-dup": None}
    # the next qa run regenerates the pairs: the stored decisions apply to them again, by QA id
    assert {p.qa_id: p for p in apply_review(regenerated, stored)} == after
    book_dup = next(p for p in review_root["pairs"] if p.qa_id == "qa-book-dup")
    assert apply_review([book_dup], stored)[0].status == "approved"  # kept, and applied when the pair comes back

    rebuilt = build_report_data(root)
    shown = {p["qa_id"]: p for p in rebuilt["pairs"]}
    assert shown["qa-book-hic"]["review_decision"] == "edit" and shown["qa-book-hic"]["question"] == "What is the HIC15 limit?"
    assert not any(p["spot_check"] for p in rebuilt["pairs"])  # the one auto-approved pair was rejected


def _card(html: str, qa_id: str) -> str:
    """The rendered card of one pair."""
    return re.search(rf'<article class="qa" data-qa-id="{re.escape(qa_id)}".*?</article>', html, re.S).group(0)


def test_thumbnails_render_pdf_pages_and_sketch_slides(review_root, report):
    data = build_report_data(review_root["root"])
    thumbs = {p["qa_id"]: data["thumbs"][p["thumb"]] for p in data["pairs"]}
    written = re.findall(r'<img src="([^"]+)" data-thumb="([^"]+)"', report[1])
    assert len(written) == len({k for _, k in written}) == len(data["thumbs"])  # each image once in the page
    for qa_id, thumb in thumbs.items():  # each card shows its thumbnail: the image, or a copy of its first use
        card = _card(report[1], qa_id)
        key = next(p["thumb"] for p in data["pairs"] if p["qa_id"] == qa_id)
        assert f'<figure class="thumb" data-kind="{thumb["kind"]}"' in card
        assert f'<img src="{thumb["src"]}" data-thumb="{key}"' in card or f'<img data-thumb-copy="{key}"' in card
    assert thumbs["qa-book-hic"]["kind"] == "page-render"
    assert thumbs["qa-book-hic"]["src"].startswith("data:image/png;base64,")
    slide = thumbs["qa-camera-dup"]
    assert slide["kind"] == "layout-sketch" and "layout sketch" in slide["caption"]
    import base64

    svg = base64.b64decode(slide["src"].split(",", 1)[1]).decode("utf-8")
    assert svg.startswith("<svg") and "layout sketch" in svg
    assert "data:image/" in svg  # slide 5's picture, downscaled and embedded


def test_missing_pdf_falls_back_to_a_labelled_sketch(review_root, tmp_path):
    root = tmp_path / "moved"
    shutil.copytree(review_root["root"] / "tables", root / "tables")
    pairs = [p.model_copy(update={"source_path": "/nonexistent/" + Path(p.source_path).name}) for p in review_root["pairs"]]
    atomic_write_parquet(rows_to_table(pairs, QA_PAIRS_SCHEMA), root / "tables" / "qa_pairs.parquet")
    html = write_review_report(root).read_text(encoding="utf-8")
    data = build_report_data(root)
    book = next(p for p in data["pairs"] if p["qa_id"] == "qa-book-hic")
    thumb = data["thumbs"][book["thumb"]]
    assert thumb["kind"] == "layout-sketch" and "source file not found" in thumb["caption"]
    assert '<figure class="thumb" data-kind="layout-sketch"' in _card(html, "qa-book-hic")


def test_missing_qa_table_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="qa_pairs"):
        write_review_report(tmp_path)


# ---------- report headers ----------

HEADER_PURPOSE = f"Verify chest deflection {SCRIPT_PAYLOAD}"
HEADER_DECKS = {
    # file name: (deck builder from tests/test_headers.py, the fields the headers stage leaves for review)
    "report_a_column_en.pptx": (first_column(EN), []),  # every field read from a table: nothing to review
    # its Purpose carries a script payload: a header value with markup is held for review, never prepended (issue 27)
    "report_k_no_region.pptx": (first_column({**EN, "Region": None, "Purpose": HEADER_PURPOSE}), ["Region", "Purpose"]),
    "crash_h_title_line.pptx": (title_line(), ["Test Name", "Region", "Stage", "Purpose"]),  # title line: low confidence
}


@pytest.fixture(scope="module")
def header_root(tmp_path_factory):
    """Crafted decks through ingest, headers, qa and judge: one report read completely, one without a
    Region (and a script payload in its Purpose), one read only from its title line."""
    folder = tmp_path_factory.mktemp("header-decks")
    for name, (build, _) in HEADER_DECKS.items():
        _deck(folder / name, build)
    root = tmp_path_factory.mktemp("header-root")
    settings = ingest_into(root, [folder])
    run_headers(settings)
    run_qa(settings)
    run_judge(settings)
    documents = TableStore(Layout(root)).read("documents")
    return {"root": root, "docs": {d.file_name: d.doc_id for d in documents}}


def test_header_section_lists_the_reports_and_fields_to_review(header_root):
    root = header_root["root"]
    html = write_review_report(root).read_text(encoding="utf-8")
    data = build_report_data(root)
    state = _embedded_json(html)["headers"]
    assert [(h["doc_id"], h["review"]) for h in state] == [(h["doc_id"], h["review"]) for h in data["headers"]]
    assert [[{k: f[k] for k in ("name", "value", "review")} for f in h["fields"]] for h in data["headers"]] == [
        h["fields"] for h in state]
    shown = {h["file_name"]: h for h in data["headers"]}
    assert {name: h["review"] for name, h in shown.items()} == {name: review for name, (_, review) in HEADER_DECKS.items()}
    assert [h["needs_review"] for h in data["headers"]] == [True, True, False]  # the reports to review first
    rows = {h.doc_id: h for h in TableStore(Layout(root)).read("headers")}
    for entry in data["headers"]:
        row = rows[entry["doc_id"]]
        assert (entry["review"], entry["missing"], entry["path"]) == (row.review, row.missing, row.source_path)
        assert [{k: f[k] for k in ("name", "value", "source", "confidence")} for f in entry["fields"]] == [
            f.model_dump() for f in row.fields]
        thumb = data["thumbs"][entry["thumb"]]  # the first slide's layout sketch, as for the QA pairs
        assert entry["unit"] == "slide" and thumb["kind"] == "layout-sketch" and thumb["caption"].startswith("slide 1:")
        card = re.search(rf'<article class="hdr" data-doc-id="{entry["doc_id"]}".*?</article>', html, re.S).group(0)
        assert f'src="{thumb["src"]}"' in card and card.count('<div class="hfield" ') == len(entry["fields"])
    why = {name: {f["name"]: f["review"] for f in h["fields"]} for name, h in shown.items()}
    assert why["report_k_no_region.pptx"] == {"Test Name": None, "Region": "missing", "Stage": None, "Purpose": "missing"}
    assert why["crash_h_title_line.pptx"] == {
        "Test Name": "low confidence", "Region": "missing", "Stage": "low confidence", "Purpose": "missing"}
    purpose = next(f for f in shown["report_k_no_region.pptx"]["fields"] if f["name"] == "Purpose")
    assert purpose["value"] is None  # the script payload was held back by the headers stage, with its reason
    held = rows[header_root["docs"]["report_k_no_region.pptx"]]
    assert "suspicious_content: Purpose: markup" in (held.flag or "")
    # header values travel escaped like every document text: nothing can close the data block
    assert "<script>window.__pwned" not in html
    assert len(re.findall(r"<script\b", html, re.I)) == 2 and len(re.findall(r"</script", html, re.I)) == 2


# ---------- browser ----------

def _launch(sync_api):
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium not installed at /usr/bin/chromium (apt-get install -y chromium)")
    return sync_api.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def _open(context, path: Path, errors: list[str], outside: list[str]):
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("request", lambda req: None if req.url.split(":", 1)[0] in ("file", "data", "blob") else outside.append(req.url))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    return page


def test_report_in_headless_chromium(review_root, rebuilt_root, report, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium not installed at /usr/bin/chromium (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    from PIL import Image

    path, html = report
    build = build_id(review_root["pairs"])
    # the rebuilt report, with a critic verdict on one pair (the judge's columns are read when present)
    data_b = build_report_data(rebuilt_root["root"])
    for record in data_b["pairs"]:
        if record["qa_id"] == "qa-new-generic":
            record["critic"] = {"scores": {"grounded": 4, "standalone": 1, "well_formed": 5, "useful": 2}, "usable": False,
                                "reasons": [f"needs the slide to make sense {SCRIPT_PAYLOAD}"]}
    path_b = tmp_path / "rebuilt.html"
    path_b.write_text(render_report_html(data_b), encoding="utf-8")

    qa = lambda qa_id: f'.qa[data-qa-id="{qa_id}"]'  # noqa: E731
    with sync_api.sync_playwright() as pw:
        browser = _launch(pw)
        try:
            context = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            outside: list[str] = []
            page = _open(context, path, errors, outside)
            downloads: list = []
            page.on("download", lambda d: downloads.append(d))

            assert page.evaluate("typeof window.__pwned") == "undefined"
            card = page.locator(qa("qa-injected"))
            assert SCRIPT_PAYLOAD in card.locator("p.question").inner_text()
            assert IMG_PAYLOAD in card.locator("p.answer").inner_text()
            assert BREAKOUT_PAYLOAD in card.locator("ul.reasons").inner_text()
            markdown = card.locator(".markdown")
            assert SCRIPT_PAYLOAD in markdown.locator("h3").inner_text()
            assert IMG_PAYLOAD in markdown.locator("table td").nth(1).inner_text()
            assert markdown.locator("img, script, a, iframe").count() == 0
            assert page.locator("script").count() == 2
            # every thumbnail is shown, repeats copied from the first one
            page.wait_for_function("Array.from(document.images).every(i => i.src.startsWith('data:image/') && i.naturalWidth > 0)",
                                   timeout=5_000)
            assert card.locator("p.question").is_visible()

            cards = page.locator(".qa[data-qa-id]")
            visible = page.locator("#visible-count")
            assert cards.count() == 6 and visible.get_attribute("data-visible") == "6"
            # grouping: each flagged pair once, under its first flag; the spot checks last, marked as such
            assert page.locator('section.flag-group[data-flag="unsupported_answer"] ' + qa("qa-camera-dup")).count() == 1
            assert page.locator('section.flag-group[data-flag="near_duplicate"] .qa').count() == 1
            spot = page.locator('section.spot-group[data-flag="spot_check"] ' + qa("qa-clean"))
            assert spot.count() == 1 and spot.get_attribute("data-spot-check") == "1"
            assert spot.locator(".badge.spot").inner_text() == "spot check"
            assert "drawn at random" in spot.locator(".spot-note").inner_text()
            assert page.locator("section.flag-group").last.get_attribute("data-flag") == "spot_check"
            assert "1 of the 1 auto-approved" in page.locator("#summary-line").inner_text()
            # filters: by flag (any of a pair's flags), by document, by kind, combined
            page.select_option("select#flag-filter", "near_duplicate")
            assert cards.count() == 2 and visible.get_attribute("data-visible") == "2"
            assert page.locator('section.flag-group[data-flag="near_duplicate"] .qa').count() == 2
            page.select_option("select#doc-filter", review_root["pdf_doc"])
            assert cards.count() == 1 and page.locator(qa("qa-book-dup")).count() == 1
            page.select_option("select#flag-filter", "")
            assert cards.count() == 3  # qa-book-hic, qa-book-dup and the spot check qa-clean
            page.select_option("select#doc-filter", review_root["deck_doc"])
            assert cards.count() == 3
            page.select_option("select#doc-filter", "")
            page.select_option("select#kind-filter", "spot_check")
            assert cards.count() == 1 and page.locator(qa("qa-clean")).count() == 1
            page.select_option("select#kind-filter", "flagged")
            assert cards.count() == 5 and page.locator(qa("qa-clean")).count() == 0
            page.select_option("select#kind-filter", "")
            assert cards.count() == 6

            # no reviewer name yet: decisions can be made, but the export refuses with a visible message
            assert page.input_value("input#reviewer") == ""
            page.locator(qa("qa-setup-speed") + " button.approve").click()
            page.click("button#export")
            message = page.locator("#export-message")
            assert message.is_visible() and "name" in message.inner_text() and message.get_attribute("data-kind") == "error"
            assert "missing" in (page.get_attribute("input#reviewer", "class") or "")
            page.wait_for_timeout(300)
            assert downloads == [], "export must wait for the reviewer's name"

            # bulk actions need a filter, act on what it shows, keep edits, and can be undone
            approve_all, reject_all, undo = page.locator("#bulk-approve"), page.locator("#bulk-reject"), page.locator("#bulk-undo")
            assert approve_all.is_disabled() and reject_all.is_disabled() and undo.is_disabled()
            page.select_option("select#kind-filter", "spot_check")
            assert approve_all.is_enabled() and approve_all.inner_text() == "Approve all shown (1)"
            approve_all.click()
            assert page.locator(qa("qa-clean")).get_attribute("data-decision") == "approve"
            assert page.locator("#bulk-message").get_attribute("data-changed") == "1"
            undo.click()
            assert page.locator(qa("qa-clean")).get_attribute("data-decision") == "none" and undo.is_disabled()
            page.select_option("select#kind-filter", "")
            page.select_option("select#doc-filter", review_root["pdf_doc"])
            book = page.locator(qa("qa-book-hic"))
            book.locator("button.edit").click()
            book.locator("textarea.edit-question").fill("What is the usual HIC15 limit for the mid-size male dummy?")
            book.locator("textarea.edit-answer").fill("700")
            book.locator("button.save-edit").click()
            assert reject_all.inner_text() == "Reject all shown (3)"
            reject_all.click()
            assert page.locator(qa("qa-book-dup")).get_attribute("data-decision") == "reject"
            assert page.locator(qa("qa-clean")).get_attribute("data-decision") == "reject"
            assert book.get_attribute("data-decision") == "edit"  # an edit is kept
            assert "1 edited kept their edit" in page.locator("#bulk-message").inner_text()
            assert page.locator(qa("qa-camera-dup")).count() == 0  # not shown, not touched
            page.select_option("select#doc-filter", "")
            assert page.locator(qa("qa-camera-dup")).get_attribute("data-decision") == "none"

            page.fill("input#reviewer", "Dr. Kim")
            assert not message.is_visible()
            page.locator(qa("qa-injected") + " button.reject").click()
            assert page.locator(qa("qa-injected")).get_attribute("data-decision") == "reject"
            assert "HIC15 limit" in book.locator("p.question").inner_text()
            assert page.locator("#decision-count").get_attribute("data-count") == "5"

            with page.expect_download() as info:
                page.click("button#export")
            download = info.value
            assert download.suggested_filename == f"decisions-{build}.json"
            exported_path = tmp_path / download.suggested_filename
            download.save_as(exported_path)
            exported = DecisionsFile.model_validate_json(exported_path.read_text(encoding="utf-8"))
            assert exported.format == DECISIONS_FORMAT and exported.build == build
            got = {d.qa_id: d for d in exported.decisions}
            assert {k: v.decision for k, v in got.items()} == {
                "qa-injected": "reject", "qa-setup-speed": "approve", "qa-book-hic": "edit", "qa-book-dup": "reject",
                "qa-clean": "reject"}
            assert got["qa-book-hic"].question == "What is the usual HIC15 limit for the mid-size male dummy?"
            assert got["qa-book-hic"].answer == "700"
            assert got["qa-injected"].question is None and got["qa-injected"].answer is None
            # the name goes into every decision, those made before it was entered included
            assert all(d.reviewer == "Dr. Kim" and d.decided_at is not None for d in exported.decisions)
            assert message.get_attribute("data-kind") == "ok" and "ragprep review apply" in message.inner_text()

            # decisions survive a reload (localStorage keyed by build)
            page.reload()
            page.wait_for_selector("body[data-ready='1']")
            assert page.locator(qa("qa-book-hic")).get_attribute("data-decision") == "edit"
            assert page.locator("#decision-count").get_attribute("data-count") == "5"
            shot = tmp_path / "review-report.png"
            page.evaluate("window.scrollTo(0, 0)")  # the sticky header then sits at the top of a full-page shot
            page.screenshot(path=str(shot), full_page=True)

            # the rebuilt report (another build): import the decisions exported from the first one
            page_b = _open(context, path_b, errors, outside)
            assert page_b.locator("#decision-count").get_attribute("data-count") == "0"  # another build, nothing stored
            critic = page_b.locator(qa("qa-new-generic") + " .critic")
            assert critic.get_attribute("data-usable") == "no"
            assert "standalone 1/5" in critic.inner_text() and "not usable" in critic.inner_text()
            assert SCRIPT_PAYLOAD in critic.locator("ul.critic-reasons").inner_text()
            page_b.locator(qa("qa-camera-dup") + " button.approve").click()  # decided here, later than the file: kept
            old_file = tmp_path / "old.json"
            old_file.write_text(json.dumps({"format": DECISIONS_FORMAT, "build": build, "decisions": [
                {"qa_id": "qa-camera-dup", "decision": "reject", "decided_at": "2020-01-01T00:00:00Z"},
                {"qa_id": "qa-new-generic", "decision": "edit", "question": "", "answer": ""},  # invalid: an empty edit
            ]}), encoding="utf-8")
            page_b.set_input_files("input#import-file", str(old_file))
            imported = page_b.locator("#import-message")
            page_b.wait_for_selector("#import-message[data-newer]")
            assert (imported.get_attribute("data-applied"), imported.get_attribute("data-newer"),
                    imported.get_attribute("data-invalid")) == ("0", "1", "1")
            assert page_b.locator(qa("qa-camera-dup")).get_attribute("data-decision") == "approve"
            page_b.set_input_files("input#import-file", str(exported_path))
            page_b.wait_for_selector("#import-message[data-applied='4']")
            assert imported.get_attribute("data-absent") == "1"  # qa-book-dup is not in the rebuilt report
            assert f"build {build}" in imported.inner_text()
            hic_b = page_b.locator(qa("qa-book-hic"))
            assert hic_b.get_attribute("data-decision") == "edit" and "HIC15 limit" in hic_b.locator("p.question").inner_text()
            assert page_b.locator(qa("qa-clean")).get_attribute("data-decision") == "reject"
            assert page_b.locator(qa("qa-new-generic")).get_attribute("data-decision") == "none"
            assert "Dr. Kim" in page_b.locator(qa("qa-injected") + " .decision-label").inner_text()
            assert page_b.locator("#decision-count").get_attribute("data-count") == "5"
            bad = tmp_path / "bad.json"
            bad.write_text('{"format": "something-else"}', encoding="utf-8")
            page_b.set_input_files("input#import-file", str(bad))
            page_b.wait_for_selector("#import-message[data-kind='error']")
            assert "not a ragprep decisions file" in imported.inner_text()
            page_b.evaluate("window.scrollTo(0, 0)")
            shot_b = tmp_path / "review-report-rebuilt.png"
            page_b.screenshot(path=str(shot_b), full_page=True)

            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page_b.evaluate("typeof window.__pwned") == "undefined"
            assert not errors, errors
            assert not outside, f"requests left the file: {outside}"
        finally:
            browser.close()

    # the decisions exported from report A apply to the rebuilt tables, by QA id
    applied = apply_decisions_file(exported_path, rebuilt_root["root"])
    assert applied.applied == 4 and applied.unknown_qa_ids == ["qa-book-dup"]
    after = {p.qa_id: p for p in read_rows(rebuilt_root["root"] / "tables" / "qa_pairs.parquet", QaPairRow, QA_PAIRS_SCHEMA)}
    assert "qa-injected" not in after and "qa-clean" not in after and after["qa-book-hic"].review_decision == "edit"

    for image in (shot, shot_b):
        assert image.stat().st_size > 5_000
        with Image.open(image) as img:
            colours = img.convert("RGB").getcolors(maxcolors=1 << 20)
            assert img.width >= 1000 and img.height >= 1000
        assert colours is not None and len(colours) > 200, "screenshot looks blank"
        print(f"screenshot: {image}")


def test_header_values_round_trip_through_the_browser(header_root, tmp_path):
    """Fill in a report's missing field in Chromium, export, ``ragprep review apply`` the file, rebuild the
    headers: the expert's value is applied (source "expert"); an import into a fresh browser restores them."""
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium not installed at /usr/bin/chromium (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    from PIL import Image

    root = tmp_path / "root"
    shutil.copytree(header_root["root"], root)
    path = write_review_report(root)
    k_doc, title_doc = header_root["docs"]["report_k_no_region.pptx"], header_root["docs"]["crash_h_title_line.pptx"]
    card = lambda doc_id: f'article.hdr[data-doc-id="{doc_id}"]'  # noqa: E731
    field = lambda doc_id, name: f'{card(doc_id)} .hfield[data-field="{name}"]'  # noqa: E731
    with sync_api.sync_playwright() as pw:
        browser = _launch(pw)
        try:
            context = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            outside: list[str] = []
            page = _open(context, path, errors, outside)
            assert page.locator("#headers").is_visible()
            line = page.locator("#headers-line")
            assert (line.get_attribute("data-reports"), line.get_attribute("data-fields")) == ("2", "6")
            # exactly the reports and fields to review are open; the complete report is collapsed below them
            to_review = page.locator('#headers-review .hfield:not([data-review=""])').evaluate_all(
                "rows => rows.map(r => [r.closest('article').dataset.docId, r.dataset.field, r.dataset.review])")
            assert sorted(map(tuple, to_review)) == sorted([
                (k_doc, "Region", "missing"), (k_doc, "Purpose", "missing"), (title_doc, "Test Name", "low confidence"),
                (title_doc, "Region", "missing"),
                (title_doc, "Stage", "low confidence"), (title_doc, "Purpose", "missing")])
            assert page.locator("#headers-review article.hdr").count() == 2
            others = page.locator("details#headers-others")
            assert others.get_attribute("open") is None and others.locator("article.hdr").count() == 1
            assert not others.locator("article.hdr").is_visible()
            assert "1 test report with every field read confidently" in others.locator("summary").inner_text()
            # each field with its value, source and confidence; the first slide's sketch
            stage = page.locator(field(k_doc, "Stage"))
            assert "Prototype P2" in stage.locator(".hvalue").inner_text()
            assert "slide 1 table r2c2" in stage.inner_text() and "confidence 0.95" in stage.inner_text()
            assert "confidence 0.60" in page.locator(field(title_doc, "Stage")).inner_text()
            assert page.locator(card(k_doc) + " figure.thumb").get_attribute("data-kind") == "layout-sketch"
            # a header value carrying markup never reaches the page: the headers stage held it back for review
            purpose = page.locator(field(k_doc, "Purpose"))
            assert purpose.locator("input.header-input").input_value() == ""
            assert page.evaluate("typeof window.__pwned") == "undefined"

            # fill in the missing Region (an empty value is refused), mark a field "not stated", confirm one as read
            region = page.locator(field(k_doc, "Region"))
            assert region.locator("input.header-input").input_value() == ""
            region.locator("button.header-save").click()
            assert "Not stated" in region.locator(".note").inner_text() and region.get_attribute("data-decided") == "none"
            region.locator("input.header-input").fill("EU")
            region.locator("button.header-save").click()
            assert region.get_attribute("data-decided") == "value" and region.locator(".note").inner_text() == ""
            page.locator(field(title_doc, "Purpose") + " button.header-null").click()
            assert page.locator(field(title_doc, "Purpose")).get_attribute("data-decided") == "null"
            page.locator(field(title_doc, "Test Name") + " button.header-save").click()  # confirmed as read
            assert "Confirmed as read" in page.locator(field(title_doc, "Test Name") + " .header-label").inner_text()
            assert page.locator(card(k_doc)).get_attribute("data-open") == "1"  # its held-back Purpose is still to decide
            assert page.locator(card(title_doc)).get_attribute("data-open") == "2"
            page.locator('.qa[data-spot-check="1"] button.approve').first.click()  # a QA decision too: one file carries both
            count = page.locator("#decision-count")
            assert (count.get_attribute("data-count"), count.get_attribute("data-header-count")) == ("1", "3")

            downloads: list = []
            page.on("download", lambda d: downloads.append(d))
            page.click("button#export")
            assert page.locator("#export-message").get_attribute("data-kind") == "error"  # no reviewer's name yet
            page.wait_for_timeout(300)
            assert downloads == []
            page.fill("input#reviewer", "Dr. Kim")
            with page.expect_download() as info:
                page.click("button#export")
            exported_path = tmp_path / info.value.suggested_filename
            info.value.save_as(exported_path)
            exported = DecisionsFile.model_validate_json(exported_path.read_text(encoding="utf-8"))
            assert {(h.doc_id, h.field, h.value) for h in exported.headers} == {
                (k_doc, "Region", "EU"), (title_doc, "Purpose", None), (title_doc, "Test Name", "Frontal ODB")}
            assert all(h.reviewer == "Dr. Kim" and h.decided_at is not None for h in exported.headers)
            assert [d.decision for d in exported.decisions] == ["approve"]
            assert "3 header values" in page.locator("#export-message").inner_text()

            # kept in this browser across a reload
            page.reload()
            page.wait_for_selector("body[data-ready='1']")
            assert page.locator(field(k_doc, "Region") + " input.header-input").input_value() == "EU"
            assert page.locator(field(k_doc, "Region") + " .header-label").inner_text().startswith("Your value at ")
            assert count.get_attribute("data-header-count") == "3"
            page.evaluate("window.scrollTo(0, 0)")
            box = page.locator("#headers").bounding_box()
            shot = tmp_path / "review-report-headers.png"
            page.screenshot(path=str(shot), full_page=True, clip=box)

            # a fresh browser (nothing stored): an import restores the values; a later value here is kept,
            # entries for other reports or fields and malformed ones are counted and left out
            page_b = _open(browser.new_context(viewport={"width": 1400, "height": 1000}), path, errors, outside)
            assert page_b.locator("#decision-count").get_attribute("data-header-count") == "0"
            page_b.locator(field(title_doc, "Stage") + " input.header-input").fill("Prototype P2")
            page_b.locator(field(title_doc, "Stage") + " button.header-save").click()
            other = tmp_path / "other.json"
            other.write_text(json.dumps({"format": DECISIONS_FORMAT, "headers": [
                {"doc_id": "0123456789abcdef", "field": "Region", "value": "US"},
                {"doc_id": k_doc, "field": "Colour", "value": "red"},
                {"doc_id": k_doc, "field": "Region", "value": 5},
                {"doc_id": title_doc, "field": "Stage", "value": "P1", "decided_at": "2020-01-01T00:00:00Z"},
            ]}), encoding="utf-8")
            imported = page_b.locator("#import-message")
            page_b.set_input_files("input#import-file", str(other))
            page_b.wait_for_selector("#import-message[data-applied]")
            assert [imported.get_attribute(f"data-header-{k}") for k in ("applied", "newer", "absent", "invalid")] == [
                "0", "1", "2", "1"]
            page_b.set_input_files("input#import-file", str(exported_path))
            page_b.wait_for_selector("#import-message[data-header-applied='3']")
            assert page_b.locator(field(k_doc, "Region") + " input.header-input").input_value() == "EU"
            assert "Your value by Dr. Kim" in page_b.locator(field(k_doc, "Region") + " .header-label").inner_text()
            assert page_b.locator(field(title_doc, "Purpose")).get_attribute("data-decided") == "null"
            assert page_b.locator(field(title_doc, "Stage") + " input.header-input").input_value() == "Prototype P2"
            assert page_b.locator("#decision-count").get_attribute("data-header-count") == "4"

            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page_b.evaluate("typeof window.__pwned") == "undefined"
            assert not errors, errors
            assert not outside, f"requests left the file: {outside}"
        finally:
            browser.close()

    result = apply_decisions_file(exported_path, root)
    assert result.header_values == 3 and result.applied == 1
    run_headers(Settings(root=root, ocr={"enabled": False}))
    rows = {h.doc_id: h for h in TableStore(Layout(root)).read("headers")}
    k_fields = {f.name: f for f in rows[k_doc].fields}
    assert (k_fields["Region"].value, k_fields["Region"].source, k_fields["Region"].confidence) == ("EU", "expert", 1.0)
    # only the held-back Purpose is still open (nobody decided it)
    assert rows[k_doc].review == ["Purpose"] and rows[k_doc].missing == ["Purpose"] and "Region: EU" in rows[k_doc].header_block
    title = {f.name: f for f in rows[title_doc].fields}
    assert (title["Purpose"].value, title["Purpose"].source) == (None, "expert")
    assert (title["Test Name"].value, title["Test Name"].source, title["Test Name"].confidence) == ("Frontal ODB", "expert", 1.0)
    assert rows[title_doc].review == ["Region", "Stage"]
    # the next report lists only what is still open
    data = build_report_data(root)
    assert {h["file_name"]: h["review"] for h in data["headers"] if h["needs_review"]} == {
        "crash_h_title_line.pptx": ["Region", "Stage"], "report_k_no_region.pptx": ["Purpose"]}

    assert shot.stat().st_size > 5_000
    with Image.open(shot) as img:
        colours = img.convert("RGB").getcolors(maxcolors=1 << 20)
        assert img.width >= 1000 and img.height >= 400
    assert colours is not None and len(colours) > 200, "screenshot looks blank"
    print(f"screenshot: {shot}")
