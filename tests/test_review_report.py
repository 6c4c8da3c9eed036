"""The review report: one self-contained HTML file over real ingested documents.

A small root is built from two real sample documents (a crash-report deck and a textbook PDF);
``qa_pairs`` is written by hand with pairs pointing at real chunks, one of them (and a copied
chunk) carrying script/markup injection attempts. The unit tests read the HTML; the browser
test drives Debian's Chromium through Playwright (skipped only when either is missing).
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ragprep.settings import Settings
from ragprep.storage import atomic_write_parquet
from schemas import read_rows, rows_to_table
from schemas.chunks import CHUNKS_SCHEMA, ChunkRow
from schemas.documents import DOCUMENTS_SCHEMA, DocumentRow
from schemas.qa_pairs import QA_PAIRS_SCHEMA, QaPairRow
from schemas.review import DECISIONS_FORMAT, DecisionsFile
from tasks.ingest.run import assemble_tables, discover, ingest_document
from tasks.qa.review_report import build_id, json_for_script, write_review_report

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


def _pair(qa_id: str, chunk: ChunkRow, flags: list[str], reasons: list[str], *, status: str = "pending",
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
        "root": root, "pairs": pairs, "flagged": [p for p in pairs if p.flags],
        "pdf_doc": next(d.doc_id for d in documents if d.format == "pdf"),
        "deck_doc": next(d.doc_id for d in documents if d.format == "pptx"),
    }


@pytest.fixture(scope="module")
def report(review_root):
    path = write_review_report(review_root["root"])
    return path, path.read_text(encoding="utf-8")


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
    """The page without its JSON data block (document text lives only in there)."""
    return re.sub(r'(<script type="application/json" id="data">).*?(</script>)', r"\1\2", html, count=1, flags=re.S)


def test_report_is_self_contained_with_csp(report):
    _, html = report
    markup = _markup(html)
    assert "http://" not in markup and "https://" not in markup
    assert not re.search(r"""\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    assert not re.search(r"<link\b|<iframe\b|<object\b|<embed\b", markup, re.I)
    style = re.search(r"<style>(.*?)</style>", markup, re.S).group(1)
    assert "@import" not in style and "url(" not in style
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    assert csp, "CSP meta tag missing"
    directives = {d.strip() for d in csp.group(1).split(";")}
    assert {"default-src 'none'", "script-src 'unsafe-inline'", "style-src 'unsafe-inline'", "img-src data:"} <= directives


def test_document_text_cannot_break_out(report):
    _, html = report
    assert "<script>window.__pwned" not in html
    assert "<img" not in html and "onerror" not in _markup(html)
    assert "\u2028" not in html and "\u2029" not in html
    assert len(re.findall(r"<script\b", html, re.I)) == 2  # the data block and the page script
    assert len(re.findall(r"</script", html, re.I)) == 2
    assert "\\u003cscript\\u003ewindow.__pwned = 1\\u003c/script\\u003e" in html  # the escaped form is there
    assert "\\u2028" in html


def test_json_for_script_escapes():
    text = json_for_script({"a": "</script><b>&\u2028\u2029"})
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == {"a": "</script><b>&\u2028\u2029"}


def test_embedded_json_round_trips_rows(review_root, report):
    _, html = report
    data = _embedded_json(html)
    assert data["format"] == DECISIONS_FORMAT and data["build"] == build_id(review_root["pairs"])
    flagged = {p.qa_id: p for p in review_root["flagged"]}
    assert {p["qa_id"] for p in data["pairs"]} == set(flagged)  # clean pairs are counted, not listed
    for record in data["pairs"]:
        row = QaPairRow.model_validate({k: record[k] for k in QaPairRow.model_fields})
        assert row == flagged[row.qa_id]
        assert record["group"] == row.flags[0]
        assert record["chunk_found"] and record["chunk_id"] in data["chunks"]
    assert data["chunks"]["injectedchunk001"]["markdown"] == INJECTED_MARKDOWN
    assert data["counts"]["total"] == 6 and data["counts"]["flagged"] == 5
    assert data["counts"]["by_status"] == {"approved": 1, "pending": 5, "rejected": 0}
    by_flag = {r["flag"]: r["total"] for r in data["counts"]["by_flag"]}
    assert by_flag["near_duplicate"] == 2 and by_flag["(none)"] == 1
    assert data["flag_order"] == ["unsupported_answer", "number_not_in_chunk", "near_duplicate", "answer_leak", "too_short"]
    names = {d["doc_id"]: d["file_name"] for d in data["documents"]}
    assert names == {review_root["pdf_doc"]: BOOK.name, review_root["deck_doc"]: DECK.name}


def test_thumbnails_render_pdf_pages_and_sketch_slides(review_root, report):
    data = _embedded_json(report[1])
    thumbs = {p["qa_id"]: data["thumbs"][p["thumb"]] for p in data["pairs"]}
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
    data = _embedded_json(write_review_report(root).read_text(encoding="utf-8"))
    book = next(p for p in data["pairs"] if p["qa_id"] == "qa-book-hic")
    thumb = data["thumbs"][book["thumb"]]
    assert thumb["kind"] == "layout-sketch" and "source file not found" in thumb["caption"]


def test_missing_qa_table_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="qa_pairs"):
        write_review_report(tmp_path)


# ---------- browser ----------

def test_report_in_headless_chromium(review_root, report, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium not installed at /usr/bin/chromium (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    from PIL import Image

    path, html = report
    build = build_id(review_root["pairs"])
    qa = lambda qa_id: f'.qa[data-qa-id="{qa_id}"]'  # noqa: E731
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            errors: list[str] = []
            outside: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            page.on("request", lambda req: None if req.url.split(":", 1)[0] in ("file", "data", "blob") else outside.append(req.url))
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=10_000)

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
            assert card.locator("p.question").is_visible()

            cards = page.locator(".qa[data-qa-id]")
            visible = page.locator("#visible-count")
            assert cards.count() == 5 and visible.get_attribute("data-visible") == "5"
            # grouping: each pair once, under its first flag
            assert page.locator('section.flag-group[data-flag="unsupported_answer"] ' + qa("qa-camera-dup")).count() == 1
            assert page.locator('section.flag-group[data-flag="near_duplicate"] .qa').count() == 1
            # filters: by flag (any of a pair's flags), by document, both
            page.select_option("select#flag-filter", "near_duplicate")
            assert cards.count() == 2 and visible.get_attribute("data-visible") == "2"
            assert page.locator('section.flag-group[data-flag="near_duplicate"] .qa').count() == 2
            page.select_option("select#doc-filter", review_root["pdf_doc"])
            assert cards.count() == 1 and page.locator(qa("qa-book-dup")).count() == 1
            page.select_option("select#flag-filter", "")
            assert cards.count() == 2
            page.select_option("select#doc-filter", review_root["deck_doc"])
            assert cards.count() == 3
            page.select_option("select#doc-filter", "")
            assert cards.count() == 5

            page.fill("input#reviewer", "Dr. Kim")
            page.locator(qa("qa-injected") + " button.reject").click()
            page.locator(qa("qa-setup-speed") + " button.approve").click()
            book = page.locator(qa("qa-book-hic"))
            book.locator("button.edit").click()
            book.locator("textarea.edit-question").fill("What is the usual HIC15 limit for the mid-size male dummy?")
            book.locator("textarea.edit-answer").fill("700")
            book.locator("button.save-edit").click()
            assert page.locator(qa("qa-injected")).get_attribute("data-decision") == "reject"
            assert book.get_attribute("data-decision") == "edit"
            assert "HIC15 limit" in book.locator("p.question").inner_text()
            assert page.locator("#decision-count").get_attribute("data-count") == "3"

            with page.expect_download() as info:
                page.click("button#export")
            download = info.value
            assert download.suggested_filename == f"decisions-{build}.json"
            exported = DecisionsFile.model_validate_json(Path(download.path()).read_text(encoding="utf-8"))
            assert exported.format == DECISIONS_FORMAT and exported.build == build
            got = {d.qa_id: d for d in exported.decisions}
            assert {k: v.decision for k, v in got.items()} == {"qa-injected": "reject", "qa-setup-speed": "approve", "qa-book-hic": "edit"}
            assert got["qa-book-hic"].question == "What is the usual HIC15 limit for the mid-size male dummy?"
            assert got["qa-book-hic"].answer == "700"
            assert got["qa-injected"].question is None and got["qa-injected"].answer is None
            assert all(d.reviewer == "Dr. Kim" and d.decided_at is not None for d in exported.decisions)

            # decisions survive a reload (localStorage keyed by build)
            page.reload()
            page.wait_for_selector("body[data-ready='1']")
            assert page.locator(qa("qa-book-hic")).get_attribute("data-decision") == "edit"
            assert page.locator("#decision-count").get_attribute("data-count") == "3"

            shot = tmp_path / "review-report.png"
            page.evaluate("window.scrollTo(0, 0)")  # the sticky header then sits at the top of a full-page shot
            page.screenshot(path=str(shot), full_page=True)
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert not errors, errors
            assert not outside, f"requests left the file: {outside}"
        finally:
            browser.close()
    assert shot.stat().st_size > 5_000
    with Image.open(shot) as img:
        colours = img.convert("RGB").getcolors(maxcolors=1 << 20)
        assert img.width >= 1000 and img.height >= 1000
    assert colours is not None and len(colours) > 200, "screenshot looks blank"
    print(f"screenshot: {shot}")
