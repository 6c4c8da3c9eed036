"""MMDocRAG quotes, candidate sets and the MMDocRAG export, on real documents."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import numpy as np
import pymupdf
import pytest
from typer.testing import CliRunner

from ragprep.catalog import run_query
from ragprep.cli import app
from ragprep.engines.embedders import CachedEmbedder
from ragprep.engines.layout import (
    LayoutBackendUnavailable,
    MinerUBackend,
    PyMuPdfLayoutBackend,
    parse_mineru_content_list,
)
from ragprep.engines.ocr import make_ocr_engine
from ragprep.ids import quote_id_for
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.documents import DocumentRow
from schemas.mmdocrag import validate_jsonl
from tasks.dataset.versions import build_version, latest_version, quality_gate
from tasks.export.mmdocrag import export_mmdocrag
from tasks.ingest.extract.base import ExtractContext
from tasks.ingest.run import assemble_tables, discover, ingest_document
from tasks.mmdoc.negatives import (
    Question,
    QuotePool,
    mine_candidate_sets,
    normalised,
    questions_from_qa,
    search_text,
)
from tasks.mmdoc.quotes import pdf_quotes
from tasks.mmdoc.run import chunk_pages, negatives_embedder, run_negatives, run_quotes
from tasks.qa.flags import support_share
from tasks.qa.run import run_judge, run_qa
from tests.conftest import CORPUS, SAMPLE_DOCS, needs_tesseract

DOCS = [
    CORPUS / "pdf_ko_card_terms_tables.pdf",
    CORPUS / "pdf_ko_assembly_review_report.pdf",
    SAMPLE_DOCS / "crash_report_frontal_offset.pptx",
    SAMPLE_DOCS / "textbook_vehicle_safety.pdf",
]


def _ingest(root: Path, embeddings: Path) -> Settings:
    settings = Settings(root=root, embeddings_cache=embeddings)
    refs = discover(DOCS, settings)
    ocr = make_ocr_engine(settings, Layout(root))
    assemble_tables([ingest_document(r, settings, ocr) for r in refs], settings, datetime.now(timezone.utc))
    run_qa(settings)
    # the critic runs as in the pipeline, but approves every unflagged pair: these tests are about mining candidate
    # sets for many approved questions, not about which pairs the critic would hold for review
    run_judge(settings.replace(qa={"critic_min_score": 1}))
    return settings


@pytest.fixture(scope="module")
def mm_root(tmp_path_factory, shared_embeddings):
    """Four documents through quotes and negatives; their vectors in the session's shared embeddings cache (the
    sample_docs/ texts another run embedded are reused: no test here counts what gets embedded)."""
    root = tmp_path_factory.mktemp("mm")
    settings = _ingest(root, shared_embeddings)
    quotes = run_quotes(settings)
    negatives = run_negatives(settings)
    return settings, quotes, negatives


def _quotes(settings: Settings):
    return TableStore(Layout(settings.root)).read("quotes")


@needs_tesseract
def test_known_korean_table_is_an_image_quote_whose_ocr_has_its_cells(mm_root):
    settings, _, _ = mm_root
    tables = [q for q in _quotes(settings) if q.source_path.endswith("pdf_ko_card_terms_tables.pdf") and q.type == "table"]
    assert len(tables) == 2 and all(q.modality == "image" and q.page_id == 0 for q in tables)
    # Tesseract spaces Korean syllables apart; the cell values are there once spaces are dropped.
    ocr = ["".join((q.ocr_text or "").split()) for q in tables]
    assert all(cell in ocr[0] for cell in ("이마트트레이더스", "롯데마트", "홈플러스", "모든주유소"))
    assert all(cell in ocr[1] for cell in ("스타벅스", "투썸플레이스", "파리바게뜨", "세븐일레븐"))
    for quote in tables:
        crop = settings.root / quote.img_path
        assert crop.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert quote.img_width > 300 and quote.ocr_status == "ok"
        assert quote.vlm_text.startswith("Heuristic description: table") and quote.vlm_provider == "heuristic"
        assert quote.chunk_id and quote.layout_backend == "pymupdf-layout"


@pytest.mark.slow  # OCR of a whole scanned document
@needs_tesseract
def test_a_scanned_pdf_gives_one_ocrd_image_quote_per_page(tmp_path):
    settings = Settings(root=tmp_path)
    layout = Layout(tmp_path)
    path = CORPUS / "pdf_scan_multipage_ocr.pdf"
    document = DocumentRow.model_construct(doc_id="scan", path=str(path))
    ctx = ExtractContext("scan", str(path), settings, layout, make_ocr_engine(settings, layout))
    quotes = pdf_quotes(document, PyMuPdfLayoutBackend(), ctx, settings.quotes.crop_dpi, settings.ocr.max_side_px)
    assert [q.page_id for q in quotes] == list(range(6)) and all(q.modality == "image" for q in quotes)
    text = " ".join(q.ocr_text or "" for q in quotes).lower()
    assert all(word in text for word in ("widow", "garden"))
    assert all(max(q.img_width, q.img_height) <= settings.ocr.max_side_px for q in quotes)


def test_quote_identity_is_document_page_layout(mm_root):
    settings, _, _ = mm_root
    quotes = _quotes(settings)
    assert len({q.quote_id for q in quotes}) == len(quotes)
    pages: dict[tuple[str, int], list[int]] = {}
    for q in quotes:
        assert q.quote_id == quote_id_for(q.doc_id, q.page_id, q.layout_id)
        pages.setdefault((q.doc_id, q.page_id), []).append(q.layout_id)
        x0, y0, x1, y1 = q.bbox
        assert 0 <= x0 < x1 <= q.page_size[0] + 1 and 0 <= y0 < y1 <= q.page_size[1] + 1
        if q.modality == "image":
            assert (settings.root / q.img_path).exists()
        else:
            assert q.text.strip()
    assert min(p for _, p in pages) == 0  # 0-based pages, as in MMDocRAG
    assert all(sorted(ids) == list(range(len(ids))) for ids in pages.values())


def test_quote_ids_are_stable_across_runs(mm_root, tmp_path):
    settings, _, _ = mm_root
    copy = tmp_path / "again"
    shutil.copytree(settings.root, copy)
    shutil.rmtree(copy / "parts" / "quotes")  # lay the PDFs out again, not from the stored parts
    again = run_quotes(Settings(root=copy))
    assert again.reused == 0
    key = lambda q: (q.quote_id, q.type, tuple(q.bbox), q.text, q.img_path)  # noqa: E731
    assert sorted(map(key, _quotes(Settings(root=copy)))) == sorted(map(key, _quotes(settings)))


def test_slides_give_one_quote_per_group_table_chart_and_picture(mm_root):
    settings, _, _ = mm_root
    deck = [q for q in _quotes(settings) if q.source_path.endswith("crash_report_frontal_offset.pptx")]
    by_type = {t: [q for q in deck if q.type == t] for t in ("table", "chart", "picture", "title")}
    assert len(by_type["table"]) == 1 and len(by_type["chart"]) == 1 and len(by_type["picture"]) == 1
    table = by_type["table"][0]
    assert table.ocr_status == "from_source" and "| Metric |" in table.ocr_text
    assert (settings.root / table.img_path).read_bytes()[:4] == b"\x89PNG"
    assert "PEAK DECEL" in by_type["picture"][0].ocr_text
    assert all(q.layout_backend == "python-pptx" and q.unit == "slide" for q in deck)
    elements = {e.element_id: e for e in TableStore(Layout(settings.root)).read("elements")}
    assert all(elements[q.element_id].kind != "notes" for q in deck)  # speaker notes are not on the slide


def test_every_candidate_set_is_full_or_marked_short_and_gold_is_never_a_negative(mm_root):
    settings, _, report = mm_root
    items = TableStore(Layout(settings.root)).read("mm_items")
    quotes = {q.quote_id: q for q in _quotes(settings)}
    pages = chunk_pages(TableStore(Layout(settings.root)).read("chunks"))
    # two budgets per question with gold (the generator writes fewer, better pairs since issue 11)
    assert report.sets == len(items) == 2 * (report.questions - report.no_gold) > 60
    assert report.multi_quote_questions > 0
    assert {(i.n_text, i.n_image) for i in items} == {(10, 5), (12, 8)}
    for item in items:
        assert len(item.text_quote_ids) + item.short_text == item.n_text
        assert len(item.image_quote_ids) + item.short_image == item.n_image
        assert item.short == bool(item.short_text or item.short_image)
        members = item.text_quote_ids + item.image_quote_ids
        assert len(set(members)) == len(members)
        labels = {q: f"text{i + 1}" for i, q in enumerate(item.text_quote_ids)}
        labels |= {q: f"image{i + 1}" for i, q in enumerate(item.image_quote_ids)}
        assert [labels[g] for g in item.gold_quote_ids] == item.gold_labels and item.gold_labels
        negatives = [quotes[m] for m in members if m not in item.gold_quote_ids]
        answer = normalised(item.answer)
        if len(answer) >= 2:  # one-character answers occur everywhere; the margin guard covers them
            assert not any(f" {answer} " in f" {normalised(search_text(q))} " for q in negatives), item.item_id
        if item.origin == "qa_pair":
            unit, first, last = pages[item.chunk_id]
            supporting = {q.quote_id for q in quotes.values() if q.doc_id == item.doc_id and q.unit == unit
                          and first <= q.page_id <= last and support_share(item.answer, search_text(q)) >= settings.negatives.gold_min_support}
            assert supporting.isdisjoint(q.quote_id for q in negatives), item.item_id
        assert all(quotes[m].modality == "text" for m in item.text_quote_ids)
        assert all(quotes[m].modality == "image" for m in item.image_quote_ids)


def test_candidate_sets_are_deterministic_and_honour_budgets(mm_root):
    settings, _, _ = mm_root
    layout = Layout(settings.root)
    quotes, elements = TableStore(layout).read("quotes"), TableStore(layout).read("elements")
    questions = questions_from_qa(TableStore(layout).read("qa_pairs"), chunk_pages(TableStore(layout).read("chunks")))[:20]
    embedder = negatives_embedder(settings)
    first, _ = mine_candidate_sets(questions, quotes, elements, embedder, settings)
    again, _ = mine_candidate_sets(questions, quotes, elements, embedder, settings)
    assert [i.model_dump() for i in first] == [i.model_dump() for i in again]

    # one document's quotes only: the pools cannot fill 12 + 8, and the set says so
    deck = [q for q in quotes if q.source_path.endswith("crash_report_frontal_offset.pptx")]
    deck_questions = [q for q in questions_from_qa(TableStore(layout).read("qa_pairs"), chunk_pages(TableStore(layout).read("chunks")))
                      if q.source_path.endswith("crash_report_frontal_offset.pptx")][:3]
    small, stats = mine_candidate_sets(deck_questions, deck, elements, embedder, settings.replace(negatives={"candidate_sets": [(12, 8)], "same_split": False}))
    n_images = sum(q.modality == "image" for q in deck)
    assert small
    for item in small:
        # the room left is what the set lacks; every image of the deck is in it unless the false-negative guard held
        # it back (a question whose answer an image's OCR text states, as the deck's own percentage slide does)
        assert item.short and item.short_image == 8 - len(item.image_quote_ids) and item.short_text == 12 - len(item.text_quote_ids)
        held_back = item.guard_skipped_answer + item.guard_skipped_margin
        assert n_images - held_back <= len(item.image_quote_ids) <= n_images
    assert any(len(item.image_quote_ids) == n_images for item in small)
    assert stats.short_sets == len(small)

    # more gold than a budget of one text quote: the weakest gold is left out and counted
    preset = Question(q_key="preset", origin="multi_quote", doc_id=deck[0].doc_id, source_path=deck[0].source_path,
                      chunk_id="c", question="Which barrier and dummy were used?", answer="barrier dummy", question_type="factual",
                      provider="test", model="test", prompt="test",
                      gold_ids=[q.quote_id for q in deck if q.modality == "text"][:3])
    tight, _ = mine_candidate_sets([preset], quotes, elements, embedder, settings.replace(negatives={"candidate_sets": [(1, 1)], "same_split": False}))
    assert tight[0].gold_dropped == 2 and len(tight[0].text_quote_ids) == 1 and tight[0].gold_labels == ["text1"]


class _CountingEmbedder:
    """An embedder that counts the passages it is asked for."""

    def __init__(self, inner: CachedEmbedder) -> None:
        self.inner, self.name, self.dim, self.passages_asked = inner, inner.name, inner.dim, 0

    def passages(self, texts):
        self.passages_asked += len(texts)
        return self.inner.passages(texts)

    def queries(self, texts):
        return self.inner.queries(texts)


def test_only_quotes_a_set_can_score_are_embedded_and_the_sets_are_the_same(mm_root, monkeypatch):
    settings, _, _ = mm_root
    layout = Layout(settings.root)
    quotes, elements = TableStore(layout).read("quotes"), TableStore(layout).read("elements")
    questions = questions_from_qa(TableStore(layout).read("qa_pairs"), chunk_pages(TableStore(layout).read("chunks")))[:20]
    lazy = _CountingEmbedder(negatives_embedder(settings))
    needed, _ = mine_candidate_sets(questions, quotes, elements, lazy, settings)
    nothing = _CountingEmbedder(lazy.inner)
    assert mine_candidate_sets([], quotes, elements, nothing, settings)[0] == [] and nothing.passages_asked == 0

    def embed_all(pool, with_gold, progress=None):
        return pool.index.embed_where(np.ones(len(pool.index.quotes), dtype=bool), progress)

    monkeypatch.setattr(QuotePool, "embed_needed", embed_all)
    eager = _CountingEmbedder(lazy.inner)
    everything, _ = mine_candidate_sets(questions, quotes, elements, eager, settings)
    assert [i.model_dump() for i in needed] == [i.model_dump() for i in everything]
    assert lazy.passages_asked < eager.passages_asked == len(quotes)


def test_false_negative_guard_skips_a_candidate_holding_the_answer(mm_root):
    settings, _, _ = mm_root
    layout = Layout(settings.root)
    quotes, elements = TableStore(layout).read("quotes"), TableStore(layout).read("elements")
    texts = [q for q in quotes if q.modality == "text" and len(q.text) > 60]
    # the gold comes from the document with the fewest text quotes (same-document candidates are examined first, so the
    # twin in another document is reached within the set's room), chosen by id, not by the order documents were read
    per_doc = Counter(q.doc_id for q in quotes if q.modality == "text")
    gold = min(texts, key=lambda q: (per_doc[q.doc_id], q.quote_id))
    twin = gold.model_copy(update={"quote_id": "twin", "doc_id": "other-doc", "source_path": "other.pdf"})
    answer = " ".join(gold.text.split()[:8])
    # the question comes from the gold's chunk, so the twin (a copy of that quote) is of the question's split
    question = Question(q_key="guard", origin="qa_pair", doc_id=gold.doc_id, source_path=gold.source_path,
                        chunk_id=gold.chunk_id,
                        question=f"What does it say about {answer.split()[0]}?", answer=answer, question_type="factual",
                        provider="test", model="test", prompt="test", gold_ids=[gold.quote_id])
    embedder = negatives_embedder(settings)
    items, stats = mine_candidate_sets([question], quotes + [twin], elements, embedder, settings)
    assert all("twin" not in i.text_quote_ids for i in items)
    assert stats.skipped_answer >= 1 and items[0].guard_skipped_answer >= 1


def test_export_validates_against_the_mmdocrag_schema_and_scores(mm_root, tmp_path):
    settings, _, _ = mm_root
    con = duckdb.connect()
    for name in ("mm_items", "quotes", "documents"):
        con.execute(f"create view {name} as select * from read_parquet('{Layout(settings.root).table_path(name)}')")
    result = export_mmdocrag(con, settings.root, tmp_path / "out", 20)
    path = Path(result.path)
    assert result.lines > 0 and validate_jsonl(path) == []
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["q_id"] for line in lines] == list(range(1, len(lines) + 1))
    for line in lines:
        assert len(line["text_quotes"]) + len(line["img_quotes"]) <= 20
        assert all((path.parent / q["img_path"]).exists() for q in line["img_quotes"])
    # a model citing exactly the gold quotes scores 1.0; citing nothing scores 0
    predictions = tmp_path / "pred.jsonl"
    predictions.write_text("\n".join(json.dumps({"q_id": l["q_id"], "answer": l["answer_interleaved"]}) for l in lines))
    runner = CliRunner()
    out = runner.invoke(app, ["score", "quotes", str(predictions), str(path), "--format", "json"])
    assert out.exit_code == 0, out.output
    scores = json.loads(out.output)
    assert scores["all"]["micro"]["f1"] == 1.0 and scores["all"]["n_scored"] == len(lines)
    cli = runner.invoke(app, ["export", "mmdocrag", "--root", str(settings.root), "--out", str(tmp_path / "cli"), "--size", "15"])
    assert cli.exit_code == 0, cli.output
    assert validate_jsonl(tmp_path / "cli" / "mmdocrag_15.jsonl") == []


def test_dataset_version_splits_quotes_and_sets_with_their_chunk_and_gates_them(mm_root, tmp_path):
    settings, _, _ = mm_root
    root = tmp_path / "root"
    shutil.copytree(settings.root, root)
    settings = settings.model_copy(update={"root": root})
    gate, holder = quality_gate(settings)
    result = build_version(settings, gate)
    assert result.published, result.failed_expectations
    checked = {o.table for o in holder["result"].outcomes}
    assert {"quotes", "quotes.images", "mm_items", "mm_items.checks"} <= checked
    layout = Layout(root)
    _, rows = run_query(layout, "select count(*) from quotes q join chunks c using (chunk_id) where q.split <> c.split")
    assert rows == [(0,)]
    # negatives never cross splits: every member of a set is in the set's split, except gold
    _, rows = run_query(layout, """
        select count(*) from mm_items m, unnest(list_concat(m.text_quote_ids, m.image_quote_ids)) as u(quote_id)
        join quotes q on q.quote_id = u.quote_id
        where q.split <> m.split and not list_contains(m.gold_quote_ids, q.quote_id)""")
    assert rows == [(0,)]
    # the export reads the published version, one split at a time
    out = CliRunner().invoke(app, ["export", "mmdocrag", "--root", str(root), "--out", str(tmp_path / "x"), "--split", "train"])
    assert out.exit_code == 0, out.output
    exported = tmp_path / "x" / "mmdocrag_15_train.jsonl"
    assert validate_jsonl(exported) == []
    _, rows = run_query(layout, "select count(*) from mm_items where split = 'train' and set_size = 15")
    assert len(exported.read_text(encoding="utf-8").splitlines()) == rows[0][0] > 0
    # a missing crop fails the gate and LATEST stays
    before = latest_version(root)
    image = next(q for q in TableStore(layout).read("quotes") if q.modality == "image" and q.type == "table" and q.unit == "page")
    (root / image.img_path).unlink()
    other = settings.replace(dataset={"split_share_tolerance": 0.5})  # a new version id, same rows
    gate, holder = quality_gate(other)
    broken = build_version(other, gate)
    assert not broken.published and any("quotes.images" in f for f in broken.failed_expectations)
    assert latest_version(root) == before


def test_mineru_requested_without_models_is_a_clear_error_not_a_fallback(mm_root, tmp_path, monkeypatch):
    settings, _, _ = mm_root
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no `mineru` command here
    with pytest.raises(LayoutBackendUnavailable, match=r"mineru.*missing the `mineru` command.*pipeline models"):
        MinerUBackend().check()
    with pytest.raises(LayoutBackendUnavailable, match="layout_backend=mineru"):
        run_quotes(settings.replace(quotes={"layout_backend": "mineru"}))
    assert (settings.root / "tables" / "quotes.parquet").exists()  # the earlier quotes are untouched


def test_mineru_content_list_is_read_into_page_layouts():
    items = [
        {"type": "text", "text": "1. Scope", "text_level": 1, "page_idx": 0, "bbox": [100, 50, 500, 80]},
        {"type": "text", "text": "Body paragraph.", "page_idx": 0, "bbox": [100, 100, 900, 200]},
        {"type": "table", "table_body": "<table><tr><td>HIC15</td><td>700</td></tr></table>", "table_caption": ["Table 1"],
         "img_path": "images/t.jpg", "page_idx": 1, "bbox": [0, 0, 1000, 500]},
        {"type": "image", "img_path": "images/f.jpg", "image_caption": ["Figure 2"], "page_idx": 1, "bbox": [0, 500, 1000, 1000]},
        {"type": "discarded", "text": "page 2", "page_idx": 1, "bbox": [0, 950, 100, 1000]},
    ]
    pages = parse_mineru_content_list(items, [(600.0, 800.0), (600.0, 800.0)])
    assert [r.type for r in pages[0].regions] == ["title", "text"]
    assert pages[0].regions[1].bbox == (60.0, 80.0, 540.0, 160.0)
    assert [r.type for r in pages[1].regions] == ["table", "figure"]
    assert "HIC15" in pages[1].regions[0].text and pages[1].regions[1].text == "Figure 2"



def test_layout_sessions_are_remade_without_spinning_and_find_the_same_regions():
    import onnxruntime as ort

    from ragprep.engines import layout

    backend = PyMuPdfLayoutBackend()
    backend.check()  # remakes the sessions, once per process
    assert layout.passive_layout_sessions() == 0  # once only
    model = pymupdf._get_layout.__closure__[0].cell_contents
    held = list(layout._sessions_in(model))
    assert held and all(isinstance(s, ort.InferenceSession) for _, _, s in held)
    for _, _, session in held:
        entry = session.get_session_options().get_session_config_entry
        assert entry("session.intra_op.allow_spinning") == "0" == entry("session.inter_op.allow_spinning")
        assert session.get_session_options().enable_cpu_mem_arena is False  # pymupdf-layout's own option kept
    with pymupdf.open(SAMPLE_DOCS / "textbook_vehicle_safety.pdf") as doc:
        passive = [backend.page_layout(doc[i]) for i in range(3)]
        spinning = {id(s): ort.InferenceSession(s._model_path, providers=s.get_providers()) for _, _, s in held}
        try:
            for holder, name, session in held:  # onnxruntime's defaults (spinning threads) for the comparison
                setattr(holder, name, spinning[id(session)])
            default = [backend.page_layout(doc[i]) for i in range(3)]
        finally:
            for holder, name, session in held:
                setattr(holder, name, session)
    assert any(p.regions for p in passive) and passive == default
