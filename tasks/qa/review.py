"""The durable review table: experts' decisions keyed by QA id, applied to every later build.

``review/decisions.parquet`` under the root is append-only (the latest decision per QA id
wins) and lives outside the per-run tables, so re-runs and new versions never lose it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ragprep.errors import RagprepError
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.qa_pairs import QaPairRow
from schemas.review import DecisionsFile, HeaderReviewRow, ReviewRow


class ReviewFileError(RagprepError):
    """A decisions file that cannot be read; the message names the file and the fix."""


class ApplyReport(BaseModel):
    file: str
    decisions: int
    applied: int
    unknown_qa_ids: list[str]
    counts: dict[str, int]
    header_values: int = 0


def load_decisions(root: Path) -> dict[str, ReviewRow]:
    """Latest decision per QA id."""
    latest: dict[str, ReviewRow] = {}
    for row in TableStore(Layout(root)).read("review", optional=True):
        latest[row.qa_id] = row
    return latest


def read_decisions_file(path: Path) -> DecisionsFile:
    """The decisions file at ``path``; ``ReviewFileError`` when it is missing, not JSON or not a decisions file."""
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
    decisions = read_decisions_file(path)
    store = TableStore(Layout(root))
    pairs = store.read("qa_pairs", optional=True)
    chunk_of = {p.qa_id: p.chunk_id for p in pairs}
    auto = auto_approved_at_apply(pairs, load_decisions(root))
    now = datetime.now(timezone.utc)
    rows = [ReviewRow(**d.model_dump(), applied_at=now, source_file=str(path), chunk_id=chunk_of.get(d.qa_id),
                      auto_approved=auto.get(d.qa_id)) for d in decisions.decisions]
    for row in rows:
        if row.decision == "edit" and not (row.question or row.answer):
            raise ReviewFileError(f"{path}: decision 'edit' for {row.qa_id} carries no edited question or answer")
    store.append("review", rows)
    if decisions.headers:
        store.append("header_review", [HeaderReviewRow(**h.model_dump(), applied_at=now, source_file=str(path))
                                       for h in decisions.headers])
    known = set(chunk_of)
    if store.exists("qa_pairs"):
        store.write("qa_pairs", apply_review(pairs, load_decisions(root)))
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.decision] = counts.get(row.decision, 0) + 1
    unknown = sorted({r.qa_id for r in rows} - known)
    return ApplyReport(file=str(path), decisions=len(rows), applied=len(rows) - sum(r.qa_id in unknown for r in rows),
                       unknown_qa_ids=unknown, counts=counts, header_values=len(decisions.headers))


def auto_approved_at_apply(pairs: Sequence[QaPairRow], earlier: dict[str, ReviewRow]) -> dict[str, bool | None]:
    """Per current pair: was it auto-approved (approved, no flags) before any expert decided on it?

    A pair with an earlier decision keeps what that decision recorded (its status is the expert's now);
    without one, it is read off the pair. Pairs not in ``pairs`` are absent (unknown)."""
    out: dict[str, bool | None] = {}
    for pair in pairs:
        before = earlier.get(pair.qa_id)
        if before is not None:
            out[pair.qa_id] = before.auto_approved if before.auto_approved is not None else (False if pair.flags else None)
        else:
            out[pair.qa_id] = pair.status == "approved" and not pair.flags
    return out


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
