"""``ragprep export mmdocrag``: candidate sets as MMDocRAG JSONL plus an images folder.

One line per ``mm_items`` row of the chosen set size (15 or 20), with MMDocRAG's field
names (``q_id, doc_name, domain, question, evidence_modality_type, question_type,
text_quotes, img_quotes, gold_quotes, answer_short, answer_interleaved``; quotes with
``quote_id, type, text, img_path, img_description, page_id, layout_id``), plus
provenance fields prefixed ``ragprep_`` / named ``doc_id``, which MMDocRAG readers ignore.

- ``q_id`` is an int, numbered 1..N over the lines sorted by document and question key,
  so the same inputs give the same numbering.
- ``domain`` is the document type (test_report, meeting_note, textbook, other).
- ``img_description`` is the quote's VLM text; ``ocr_text`` rides along as an extra field.
- ``answer_short`` is the answer; ``answer_interleaved`` is composed by rule, not written
  by a model: the answer followed by its citations in MMDocRAG's conventions, ``[n]`` for
  each gold text quote and ``![](imageN)`` for each gold image quote.

Every line is validated against ``schemas/mmdocrag.schema.json`` (plus the label checks)
before the file is moved into place; images are copied to ``images/<quote_id>.<ext>``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import duckdb
from pydantic import BaseModel

from ragprep.errors import RagprepError
from schemas.mmdocrag import validate_line


class ExportResult(BaseModel):
    path: str
    lines: int
    images: int
    short_sets: int
    split: str | None
    set_size: int


class ExportError(RagprepError):
    pass


def _rows(con: duckdb.DuckDBPyConnection, query: str, params: list | None = None) -> list[dict]:
    result = con.execute(query, params or [])
    columns = [d[0] for d in result.description]
    return [dict(zip(columns, row)) for row in result.fetchall()]


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(con.execute("select count(*) from information_schema.tables where table_name = ?", [name]).fetchone()[0])


def interleaved_answer(answer: str, gold_labels: list[str]) -> str:
    """The answer with its text quotes cited as ``[n]`` after it and its image quotes as Markdown images below, in label order."""
    texts = [label for label in gold_labels if label.startswith("text")]
    images = [label for label in gold_labels if label.startswith("image")]
    out = answer.strip()
    if texts:
        out += " " + "".join(f"[{label[4:]}]" for label in sorted(texts, key=lambda l: int(l[4:])))
    for label in sorted(images, key=lambda l: int(l[5:])):
        out += f"\n\n![]({label})"
    return out


def export_mmdocrag(
    con: duckdb.DuckDBPyConnection, root: Path, out_dir: Path, set_size: int = 15, split: str | None = None
) -> ExportResult:
    """Write ``mmdocrag_<size>[_<split>].jsonl`` and ``images/`` under ``out_dir``."""
    for name in ("mm_items", "quotes"):
        if not _has_table(con, name):
            raise ExportError(f"no {name} table; run `ragprep negatives --root {root}` (and `ragprep dataset`) first")
    where, params = "set_size = ?", [set_size]
    if split is not None:
        columns = [r[0] for r in con.execute("describe mm_items").fetchall()]
        if "split" not in columns:
            raise ExportError("these tables have no split column; build a dataset version first (`ragprep dataset`)")
        where += " and split = ?"
        params.append(split)
    items = _rows(con, f"select * from mm_items where {where} order by source_path, q_key", params)
    if not items:
        sizes = [r[0] for r in con.execute("select distinct set_size from mm_items order by 1").fetchall()]
        raise ExportError(f"no candidate sets of size {set_size}{f' in split {split}' if split else ''}; sizes present: {sizes}")
    quotes = {q["quote_id"]: q for q in _rows(con, "select * from quotes")}
    domains = {}
    if _has_table(con, "documents"):
        domains = {d["doc_id"]: d["doc_type"] for d in _rows(con, "select doc_id, doc_type from documents")}
    out_dir.mkdir(parents=True, exist_ok=True)
    images_dir = out_dir / "images"
    images_dir.mkdir(exist_ok=True)
    name = f"mmdocrag_{set_size}" + (f"_{split}" if split else "") + ".jsonl"
    target = out_dir / name
    copied: set[str] = set()
    lines: list[str] = []
    for q_id, item in enumerate(items, start=1):
        text_quotes, img_quotes = [], []
        for i, quote_id in enumerate(item["text_quote_ids"], start=1):
            q = quotes.get(quote_id)
            if q is None:
                raise ExportError(f"mm_items {item['item_id']} names quote {quote_id}, which is not in the quotes table")
            text_quotes.append({"quote_id": f"text{i}", "type": "text", "text": q["text"], "page_id": q["page_id"],
                                "layout_id": q["layout_id"], "ragprep_quote_id": quote_id, "doc_id": q["doc_id"]})
        for i, quote_id in enumerate(item["image_quote_ids"], start=1):
            q = quotes.get(quote_id)
            if q is None or not q["img_path"]:
                raise ExportError(f"mm_items {item['item_id']} names image quote {quote_id} without an image")
            source = root / q["img_path"]
            if not source.exists():
                raise ExportError(f"{source} (image of quote {quote_id}) is missing; re-run `ragprep quotes --root {root}`")
            rel = f"images/{quote_id}{source.suffix}"
            if quote_id not in copied:
                shutil.copyfile(source, out_dir / rel)
                copied.add(quote_id)
            img_quotes.append({"quote_id": f"image{i}", "type": "image", "img_path": rel,
                               "img_description": q["vlm_text"] or "", "page_id": q["page_id"], "layout_id": q["layout_id"],
                               "ocr_text": q["ocr_text"] or "", "ragprep_quote_id": quote_id, "doc_id": q["doc_id"],
                               "ragprep_type": q["type"]})
        line = {
            "q_id": q_id,
            "doc_name": Path(item["source_path"]).name,
            "domain": domains.get(item["doc_id"], "other"),
            "question": item["question"],
            "evidence_modality_type": list(item["evidence_modality_type"]),
            "question_type": item["question_type"],
            "text_quotes": text_quotes,
            "img_quotes": img_quotes,
            "gold_quotes": list(item["gold_labels"]),
            "answer_short": item["answer"],
            "answer_interleaved": interleaved_answer(item["answer"], list(item["gold_labels"])),
            "ragprep_item_id": item["item_id"],
            "ragprep_q_key": item["q_key"],
            "ragprep_short": bool(item["short"]),
            "doc_id": item["doc_id"],
        }
        problems = validate_line(line)
        if problems:
            raise ExportError(f"line {q_id} ({item['item_id']}) does not validate: {'; '.join(problems[:3])}")
        lines.append(json.dumps(line, ensure_ascii=False))
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(tmp, target)
    return ExportResult(path=str(target), lines=len(lines), images=len(copied),
                        short_sets=sum(bool(i["short"]) for i in items), split=split, set_size=set_size)
