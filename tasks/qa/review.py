"""The durable review table: experts' decisions keyed by QA id, applied to every later build.

``review/decisions.parquet`` under the root is append-only (the latest decision per QA id
wins) and lives outside the per-run tables, so re-runs and new versions never lose it.

A QA id hashes the generated question, and a question names its document by the report header
(test name, stage): filling a header regenerates the pair under a new id. Each stored decision
therefore keeps the stable part of its pair (hash of the chunk text without header, question type,
generated question and answer); :func:`resolve_decisions` carries a decision whose pair is gone
over to the regenerated pair (same chunk text or chunk, same type and answer, a similar question),
and lists the rest as orphaned (``ragprep review apply`` and the review report show them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ValidationError
from rapidfuzz import fuzz

from ragprep.errors import RagprepError
from ragprep.ids import stable_id
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.chunks import ChunkRow
from schemas.qa_pairs import QaPairRow
from schemas.review import DecisionsFile, HeaderDecision, HeaderReviewRow, ReviewRow

CARRY_MIN_SIMILARITY = 40.0
"""rapidfuzz ``ratio`` (0-100) of the stored and the regenerated question at or above which a decision may carry over;
among several candidates the most similar wins. What identifies the pair is the rest: the same chunk text, question
type and answer. Measured on the three sample crash reports (heuristic provider, every pair approved, 48 regenerated
pairs, all carried to the right pair): a corrected stage 86-93, a test name filled where the deck's title stood
55-84; questions of the same chunk about other facts score up to 75, so the similarity alone could not tell them
apart. The floor only keeps a question of different wording altogether (an unrelated one scores about 40) from
inheriting a decision."""


class ReviewFileError(RagprepError):
    """A decisions file that cannot be read; the message names the file and the fix."""


class ApplyReport(BaseModel):
    file: str
    decisions: int
    applied: int = 0
    unknown_qa_ids: list[str] = []
    """The file's decisions that apply to no current pair (not even carried over)."""
    counts: dict[str, int] = {}
    header_values: int = 0
    headers: list[HeaderDecision] = []
    """The header values the file sets (they take effect on the next build of headers and QA)."""
    header_documents: dict[str, str] = {}
    """doc_id -> file name, for the documents ``headers`` names."""
    carried_over: dict[str, str] = {}
    """Current QA id -> the QA id its decision was made on (the pair was regenerated, e.g. after a header fill)."""
    orphaned: list[str] = []
    """Every stored decision (this file's and earlier ones) whose pair is gone: kept, applied if it reappears."""


@dataclass(frozen=True)
class Resolution:
    """Which stored decision applies to which current pair."""

    decisions: dict[str, ReviewRow] = field(default_factory=dict)
    """Current QA id -> the decision that applies to it (its own, or one carried over)."""
    carried: dict[str, str] = field(default_factory=dict)
    """Current QA id -> the QA id the carried-over decision was made on."""
    orphaned: list[ReviewRow] = field(default_factory=list)
    """Decisions that apply to no current pair. A rejected pair is dropped from ``qa_pairs``, so a rejection whose
    chunk is still there counts as applied, not orphaned (the stored tables cannot tell a dropped pair from a gone one)."""


def chunk_base(chunk: ChunkRow) -> str:
    """A hash of a chunk's text without report header (``qa_text``): unchanged when a header is filled."""
    return stable_id("chunk-base", chunk.qa_text)


def _answer_key(text: str | None) -> str:
    return " ".join((text or "").split()).casefold()


def _carry_candidates(
    waiting: Sequence[ReviewRow], pairs: Sequence[QaPairRow], bases: Mapping[str, str]
) -> list[tuple[float, str, str]]:
    """(question similarity, decided QA id, current QA id) for every decision/pair with the same chunk (text or id),
    question type and answer, at or above ``CARRY_MIN_SIMILARITY``."""
    by_fact: dict[tuple[str, str], list[QaPairRow]] = {}
    for pair in pairs:
        by_fact.setdefault((pair.question_type, _answer_key(pair.generated_answer)), []).append(pair)
    scored = []
    for decision in waiting:
        if decision.pair_question is None or decision.question_type is None:
            continue  # stored before pairs were described (or the pair was unknown when it was applied)
        for pair in by_fact.get((decision.question_type, _answer_key(decision.pair_answer)), []):
            same_chunk = pair.chunk_id == decision.chunk_id or (
                decision.chunk_base is not None and bases.get(pair.chunk_id) == decision.chunk_base)
            score = fuzz.ratio(decision.pair_question, pair.generated_question) if same_chunk else 0.0
            if score >= CARRY_MIN_SIMILARITY:
                scored.append((score, decision.qa_id, pair.qa_id))
    return scored


def resolve_decisions(
    pairs: Sequence[QaPairRow], decisions: Mapping[str, ReviewRow], bases: Mapping[str, str] | None = None
) -> Resolution:
    """The decision for each current pair: its own (by QA id), else one carried over from a pair that is gone.

    A decision whose pair is gone carries over to a current pair of the same chunk (its id, or its text through
    ``bases``: chunk id -> :func:`chunk_base`), question type and answer with a similar question; the latest decision
    chooses first, each its most similar pair, one decision per pair. A decision matching only pairs that already
    have a later one is superseded; a decision matching no pair at all is orphaned (rejections: see ``Resolution``)."""
    current = {p.qa_id for p in pairs}
    resolved = {q: d for q, d in decisions.items() if q in current}
    waiting = [d for q, d in sorted(decisions.items()) if q not in current]
    candidates = _carry_candidates(waiting, pairs, bases or {})
    carried: dict[str, str] = {}
    for _, old, new in sorted(candidates, key=lambda t: (-decisions[t[1]].applied_at.timestamp(), -t[0], t[1], t[2])):
        if new in resolved or old in carried.values():
            continue
        resolved[new] = decisions[old]
        carried[new] = old
    matched = {old for _, old, _ in candidates}
    live_chunks, live_bases = set(bases or {}), set((bases or {}).values())
    orphaned = [d for d in waiting if d.qa_id not in matched and not (
        d.decision == "reject" and (d.chunk_id in live_chunks or (d.chunk_base is not None and d.chunk_base in live_bases)))]
    return Resolution(resolved, carried, orphaned)


def chunk_bases(chunks: Sequence[ChunkRow]) -> dict[str, str]:
    """Chunk id -> :func:`chunk_base`, for :func:`resolve_decisions`."""
    return {c.chunk_id: chunk_base(c) for c in chunks}


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


def _stored_rows(decisions: DecisionsFile, path: Path, pairs: Sequence[QaPairRow], bases: Mapping[str, str],
                 earlier: dict[str, ReviewRow]) -> list[ReviewRow]:
    """The file's decisions as review rows, each with the stable part of its pair (for carrying it over later)."""
    by_id = {p.qa_id: p for p in pairs}
    auto = auto_approved_at_apply(pairs, earlier)
    now = datetime.now(timezone.utc)
    rows = []
    for d in decisions.decisions:
        pair = by_id.get(d.qa_id)
        described = {} if pair is None else {
            "chunk_id": pair.chunk_id, "chunk_base": bases.get(pair.chunk_id), "question_type": pair.question_type,
            "pair_question": pair.generated_question, "pair_answer": pair.generated_answer}
        row = ReviewRow(**d.model_dump(), applied_at=now, source_file=str(path), auto_approved=auto.get(d.qa_id), **described)
        if row.decision == "edit" and not (row.question or row.answer):
            raise ReviewFileError(f"{path}: decision 'edit' for {row.qa_id} carries no edited question or answer")
        rows.append(row)
    return rows


def _file_names(store: TableStore, headers: Sequence[HeaderDecision]) -> dict[str, str]:
    wanted = {h.doc_id for h in headers}
    return {d.doc_id: d.file_name for d in store.read("documents", optional=True) if d.doc_id in wanted} if wanted else {}


def apply_decisions_file(path: Path, root: Path) -> ApplyReport:
    """Store a decisions file in the review table and apply it to the current qa_pairs (carrying decisions over to
    regenerated pairs); the report names the header values stored and every orphaned decision."""
    decisions = read_decisions_file(path)
    store = TableStore(Layout(root))
    pairs = store.read("qa_pairs", optional=True)
    bases = chunk_bases(store.read("chunks", optional=True))
    earlier = resolve_decisions(pairs, load_decisions(root), bases).decisions  # carried-over ones under the new id
    rows = _stored_rows(decisions, path, pairs, bases, earlier)
    store.append("review", rows)
    now = datetime.now(timezone.utc)
    if decisions.headers:
        store.append("header_review", [HeaderReviewRow(**h.model_dump(), applied_at=now, source_file=str(path))
                                       for h in decisions.headers])
    resolution = resolve_decisions(pairs, load_decisions(root), bases)
    if store.exists("qa_pairs"):
        store.write("qa_pairs", _apply(pairs, resolution))
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.decision] = counts.get(row.decision, 0) + 1
    orphaned = sorted(d.qa_id for d in resolution.orphaned)
    unknown = sorted({r.qa_id for r in rows} & set(orphaned))
    return ApplyReport(file=str(path), decisions=len(rows), applied=sum(r.qa_id not in unknown for r in rows),
                       unknown_qa_ids=unknown, counts=counts, header_values=len(decisions.headers),
                       headers=list(decisions.headers), header_documents=_file_names(store, decisions.headers),
                       carried_over=resolution.carried, orphaned=orphaned)


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


def apply_review(
    pairs: Sequence[QaPairRow], decisions: Mapping[str, ReviewRow], bases: Mapping[str, str] | None = None
) -> list[QaPairRow]:
    """Rejected pairs are dropped; edits replace question/answer; approvals approve. A decision whose pair was
    regenerated under a new QA id applies to the new pair (:func:`resolve_decisions`; ``bases`` as there)."""
    return _apply(pairs, resolve_decisions(pairs, decisions, bases))


def _apply(pairs: Sequence[QaPairRow], resolution: Resolution) -> list[QaPairRow]:
    out: list[QaPairRow] = []
    for pair in pairs:
        decision = resolution.decisions.get(pair.qa_id)
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
