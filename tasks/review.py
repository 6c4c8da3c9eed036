"""The durable review table: experts' decisions keyed by QA id, applied to every later build.

``review/decisions.parquet`` under the root is append-only (the latest decision per QA id
wins) and lives outside the per-run tables, so re-runs and new versions never lose it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
from pydantic import BaseModel, ValidationError

from ragprep.storage import Layout, atomic_write_parquet
from schemas import read_rows, rows_to_table
from schemas.qa_pairs import QaPairRow
from schemas.review import REVIEW_SCHEMA, DecisionsFile, ReviewRow


class ReviewFileError(Exception):
    """A decisions file that cannot be read; the message names the file and the fix."""


class ApplyReport(BaseModel):
    file: str
    decisions: int
    applied: int
    unknown_qa_ids: list[str]
    counts: dict[str, int]


def review_table_path(root: Path) -> Path:
    return root / "review" / "decisions.parquet"


def load_decisions(root: Path) -> dict[str, ReviewRow]:
    """Latest decision per QA id."""
    path = review_table_path(root)
    if not path.exists():
        return {}
    latest: dict[str, ReviewRow] = {}
    for row in read_rows(path, ReviewRow, REVIEW_SCHEMA):
        latest[row.qa_id] = row
    return latest


def read_decisions_file(path: Path) -> DecisionsFile:
    try:
        return DecisionsFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError as exc:
        raise ReviewFileError(f"{path}: no such file") from exc
    except json.JSONDecodeError as exc:
        raise ReviewFileError(f"{path}: not JSON ({exc.msg} at line {exc.lineno}); export it again from the report") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ReviewFileError(f"{path}: not a ragprep decisions file ({where}: {first['msg']})") from exc


def apply_decisions_file(path: Path, root: Path) -> ApplyReport:
    """Store a decisions file in the review table and apply it to the current qa_pairs."""
    from schemas.qa_pairs import QA_PAIRS_SCHEMA

    decisions = read_decisions_file(path)
    qa_path = Layout(root).table_path("qa_pairs")
    pairs = read_rows(qa_path, QaPairRow, QA_PAIRS_SCHEMA) if qa_path.exists() else []
    chunk_of = {p.qa_id: p.chunk_id for p in pairs}
    now = datetime.now(timezone.utc)
    rows = [ReviewRow(**d.model_dump(), applied_at=now, source_file=str(path), chunk_id=chunk_of.get(d.qa_id))
            for d in decisions.decisions]
    for row in rows:
        if row.decision == "edit" and not (row.question or row.answer):
            raise ReviewFileError(f"{path}: decision 'edit' for {row.qa_id} carries no edited question or answer")
    target = review_table_path(root)
    previous = rows_to_table(read_rows(target, ReviewRow, REVIEW_SCHEMA), REVIEW_SCHEMA) if target.exists() \
        else REVIEW_SCHEMA.empty_table()
    atomic_write_parquet(pa.concat_tables([previous, rows_to_table(rows, REVIEW_SCHEMA)]), target)
    known = set(chunk_of)
    if qa_path.exists():
        atomic_write_parquet(rows_to_table(apply_review(pairs, load_decisions(root)), QA_PAIRS_SCHEMA), qa_path)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.decision] = counts.get(row.decision, 0) + 1
    unknown = sorted({r.qa_id for r in rows} - known)
    return ApplyReport(file=str(path), decisions=len(rows), applied=len(rows) - sum(r.qa_id in unknown for r in rows),
                       unknown_qa_ids=unknown, counts=counts)


def apply_review(pairs: Sequence[QaPairRow], decisions: dict[str, ReviewRow]) -> list[QaPairRow]:
    """Rejected pairs are dropped; edits replace question/answer; approvals approve."""
    out: list[QaPairRow] = []
    for pair in pairs:
        decision = decisions.get(pair.qa_id)
        if decision is None:
            out.append(pair)
            continue
        if decision.decision == "reject":
            continue
        update: dict = {"status": "approved", "review_decision": decision.decision, "reviewer": decision.reviewer}
        if decision.decision == "edit":
            update["question"] = decision.question or pair.generated_question
            update["answer"] = decision.answer or pair.generated_answer
        out.append(pair.model_copy(update=update))
    return out
