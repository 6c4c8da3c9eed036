"""QA audit: how good the QA pairs look to the critic, to the rules and to the experts so far.

``audit_pairs(pairs, decisions)`` is a pure function over rows (``QaPairRow`` and the latest
``ReviewRow`` per QA id) and gives a ``QaAudit``:

- the critic's **predicted usable share** (``critic_usable``) by document, question type and
  target modality: usable / judged, where *judged* counts the pairs the critic has scored
  (``None`` share, printed ``-``, when the judge has not run on any pair of the group);
- **counts** of pairs by status and by flag (a pair counts once under each of its flags;
  ``(none)`` for pairs without flags);
- the **review outcomes**: decisions by kind, how many name a pair in these tables, and the
  **spot checks**: decisions on pairs that were auto-approved (approved, no flags) before an
  expert looked at them, and the share of those the experts rejected (and edited) — how much
  the rules let through that experts did not want.

Whether a decided pair was auto-approved is recorded in the review table when the decision is
applied (``ReviewRow.auto_approved``: a rejected pair leaves ``qa_pairs``, so it cannot be read
off the pair later). For older review rows without it, a pair still in the tables counts as
auto-approved when it has no flags; a rejected pair from before then is counted as unknown.

``load_working(root)`` reads the working tables through the ``TableStore``;
``load_version(root, version, uri)`` reads a dataset version through the DuckDB catalog (a
version holds only the approved pairs, and the latest decision per pair).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from ragprep.report import Report
from ragprep.storage import Layout
from ragprep.tables import MissingTablesError, TableStore
from schemas.qa_pairs import FLAG_CODES, QaPairRow
from schemas.review import ReviewRow

STATUSES = ("approved", "pending", "rejected")
DECISION_KINDS = ("approve", "reject", "edit")
NO_FLAG = "(none)"


class UsableShare(BaseModel):
    """The critic's verdicts over one group of pairs."""

    key: str
    label: str
    pairs: int
    judged: int = Field(description="Pairs with a critic verdict (critic_usable not null).")
    usable: int
    share: float | None = Field(description="usable / judged; None when the judge has not run on the group.")


class SpotChecks(BaseModel):
    """Expert decisions on pairs that had been auto-approved."""

    decided: int
    approved: int
    rejected: int
    edited: int
    rejected_share: float | None = Field(description="rejected / decided; None before any spot check.")
    rejected_or_edited_share: float | None
    unknown: int = Field(description="Decisions whose pair's auto-approval cannot be told (older rows, pair gone).")


class ReviewOutcomes(BaseModel):
    decisions: int
    by_kind: dict[str, int]
    on_pairs_here: int = Field(description="Decisions naming a pair present in these tables (rejected pairs are not).")
    spot_checks: SpotChecks


class Coverage(BaseModel):
    """Per document: its chunks, those holding a fact worth asking, and how many of those got a pair."""

    document: str
    chunks: int
    fact_chunks: int
    with_pair: int
    """Fact chunks with at least one pair."""
    with_approved: int
    """Fact chunks with at least one approved pair."""
    approved_pairs: int
    pairs: int = 0
    """Pairs of the document (any status): with ``approved_pairs``, the generator's budget at work."""

    @property
    def approved_share(self) -> float | None:
        """Share of the fact chunks with an approved pair."""
        return _ratio(self.with_approved, self.fact_chunks)


_FACT_RE = re.compile(
    r"(?<![^\W\d_])(?<!\d[.,])\d[\d.,]*\s?(?:%|°|º|mm|cm|m|km/h|kph|mph|ms|s|g|kg|kN|N|Nm|daN|Hz|kPa|MPa|J|W|V|A|lb|in|inches|seconds|"
    r"degrees?|명|개|건|원|점)(?!\w)"
    r"|^\s*\|.*\|.*\|"
    r"|\b(?:shall|must|means|is defined as|is called|because|decided|decision|due to)\b|이하|이상|미만|초과|결정|때문",
    re.IGNORECASE | re.MULTILINE,
)
"""A measured value with its unit, a table row, a requirement, a definition, a cause or a decision."""


MIN_FACT_WORDS = 3
"""A prose line holding a fact has at least this many tokens, two of them words of three letters or more ("Max. chest
deflection 31 mm" holds one; a figure's dimension label "6.5 in. 30 in." none)."""
MAX_NOISE_SHARE = 0.25
"""A line whose tokens are more than this share noise (single characters, symbols: formulas, OCR debris) holds none."""
_WORD_RE = re.compile(r"^[(\"“'‘]?[^\W\d_][\w\-’'./]*[)\"”'’.,;:%]*$|^[(]?\d[\d.,]*[)%.,;:]*$")
_HANGUL_CHAR_RE = re.compile(r"[\uac00-\ud7a3]")


def _clean_line(line: str) -> bool:
    """A line that can hold a fact: a table row with two filled cells, or prose of ``MIN_FACT_WORDS`` tokens (Korean:
    20 characters) of which at most ``MAX_NOISE_SHARE`` are noise tokens (one letter, a symbol, a broken formula)."""
    line = line.strip().lstrip(">").strip()
    if line.startswith("|"):
        cells = [c.strip() for c in line.strip("|").split("|")]
        return sum(bool(c) and not set(c) <= set("-: ") for c in cells) >= 2
    if line.startswith("![") or not line:
        return False
    tokens = line.split()
    if _HANGUL_CHAR_RE.search(line):
        return len(_HANGUL_CHAR_RE.findall(line)) >= 20 or len(tokens) >= MIN_FACT_WORDS
    noise = sum(not _WORD_RE.match(t) or len(t) == 1 and t.lower() not in ("a", "i") for t in tokens)
    words = sum(bool(re.match(r"^[(\"“]?[^\W\d_]{3,}", t)) for t in tokens)
    return len(tokens) >= MIN_FACT_WORDS and words >= MIN_FACT_WORDS - 1 and noise <= MAX_NOISE_SHARE * len(tokens)


def holds_fact(markdown: str, title: str = "") -> bool:
    """True when a chunk holds a fact worth asking (see ``_FACT_RE``) in a clean line (``_clean_line``: a table row
    or a prose sentence, not a formula, a figure's labels or OCR debris) and is not a reference list or contents page."""
    from tasks.qa.rules import ChunkView, skipped_chunk

    lines = markdown.splitlines()
    body = "\n".join(line for line in lines[1:] if _clean_line(line))
    title = title or (lines[0].lstrip("#").strip() if lines and lines[0].startswith("#") else "")
    return bool(_FACT_RE.search(body)) and not skipped_chunk(ChunkView(title=title, language="en", markdown=markdown))


def coverage(pairs: Sequence[QaPairRow], chunks: Sequence) -> list[Coverage]:
    """Per document, fact chunks and the ones with a (approved) pair."""
    by_chunk: dict[str, list[QaPairRow]] = {}
    for pair in pairs:
        by_chunk.setdefault(pair.chunk_id, []).append(pair)
    out: dict[str, Coverage] = {}
    for chunk in chunks:
        name = Path(chunk.source_path).name
        row = out.setdefault(name, Coverage(document=name, chunks=0, fact_chunks=0, with_pair=0, with_approved=0,
                                            approved_pairs=0))
        row.chunks += 1
        mine = by_chunk.get(chunk.chunk_id, [])
        row.approved_pairs += sum(p.status == "approved" for p in mine)
        row.pairs += len(mine)
        if holds_fact(chunk.qa_text, chunk.title):
            row.fact_chunks += 1
            row.with_pair += bool(mine)
            row.with_approved += any(p.status == "approved" for p in mine)
    return sorted(out.values(), key=lambda c: c.document)


class CriticFigures(BaseModel):
    """The offline critic's document-grouped cross-validation (``critic_policy.json``) and the auto-approval in force."""

    labelled_pairs: int = 0
    documents: int = 0
    cv: dict = {}
    """Held-out scores of the critic's approvals: pairs, usable, approved, precision, recall, unusable_rejected."""
    cv_by_family: dict[str, dict] = {}
    auto_cv: dict = {}
    """Held-out scores of the auto-approval (critic approves and the pair's band was chosen on the other documents)."""
    auto_by_family: dict[str, dict] = {}
    family_out: dict = {}
    """Held-out scores of the critic when a whole document family is left out (``all``)."""
    bands: list[str] = []
    untested_bands: list[str] = []
    """Bands chosen on every labelled pair that no held-out document of the nested CV could try: not in force."""
    band_cv: dict[str, dict] = {}
    cross_kind: dict[str, list[str]] = {}
    """Cross-kind bands in force (``tasks.qa.gate``): per band, the document kinds it opens for."""
    auto_family_out: dict = {}
    """Held-out scores of the auto-approval when a pair's whole document family is left out of training."""
    min_precision: float = 0.0
    """``qa.auto_approve_min_precision`` in force."""

    @property
    def in_force(self) -> str:
        """What the judge does with a pair the offline critic passes, in words."""
        if not self.min_precision:
            return "qa.auto_approve_min_precision is 0: every pair the offline critic passes is auto-approved (not measured)"
        precision = self.auto_cv.get("precision")
        if precision is None or precision < self.min_precision:
            shown = "-" if precision is None else f"{precision:.2f}"
            fitted = (f"; the bands fitted on every labelled pair ({', '.join(self.bands)}) are not in force" if self.bands
                      else "")
            return (f"the band choice (document kind, kind/question type or kind/generator rule) reaches an auto-approval precision of {shown} "
                    f"under nested grouped CV, under qa.auto_approve_min_precision {self.min_precision:.2f}{fitted}: every "
                    "pair goes to review with its reason")
        untested = (f"; not in force: {', '.join(self.untested_bands)} (chosen, but no held-out document could try it)"
                    if self.untested_bands else "")
        cross = "; ".join(f"{b} ({', '.join(kinds)})" for b, kinds in self.cross_kind.items())
        cross = (f"; where none of a pair's own bands is measured, the cross-kind bands {cross} (its generator rule on the "
                 "other kinds' documents)" if cross else "")
        return (f"auto-approved: pairs the critic passes in the bands {', '.join(self.bands)} (held-out precision "
                f"{precision:.2f} >= {self.min_precision:.2f}; the most specific measured band of a pair decides){cross}{untested}; "
                "every other pair goes to review with its reason")

    def report(self) -> Report:
        """The figures as one terminal table: per document family, the critic's and the auto-approval's."""
        keys = ("pairs", "usable", "approved", "precision", "recall", "unusable_rejected")

        def row(name: str, kind: str, got: dict) -> list:
            return [name, kind, *[_fmt(got.get(k)) for k in keys]]

        rows = [row("all", "critic", self.cv), row("all", "auto-approval", self.auto_cv)]
        for family, got in self.cv_by_family.items():
            rows.append(row(family, "critic", got))
            rows.append(row(family, "auto-approval", self.auto_by_family.get(family, {})))
        bands = ", ".join(f"{b} {g['precision']:.2f} of {g['approved']} ({g['documents']} docs)" for b, g in self.band_cv.items()
                          if g["approved"] >= 8)
        return Report("critic: document-grouped cross-validation (leave one document out)", ["documents", "verdict", *keys],
                      rows, lead=[f"{self.labelled_pairs} hand-labelled pairs over {self.documents} documents; every rule, "
                                  "threshold and band chosen without the held-out document."],
                      notes=[self._family_note(),
                             f"Held-out precision of the critic's approvals per band (document kind read off the document, "
                             f"kind/question type or kind/generator rule; measured on the labelled pairs today's generator still asks; "
                             f"bands of 8 pairs or more): {bands or '-'}.",
                             f"Policy in force: {self.in_force}."])


    def _family_note(self) -> str:
        got = self.family_out
        if not got:
            return "Leave one document family out: not measured."
        auto = self.auto_family_out
        auto = (f"; auto-approval {_fmt(auto.get('true_positives'))} of {_fmt(auto.get('approved'))} usable "
                f"(precision {_fmt(auto.get('precision'))})" if auto else "")
        return (f"Leave one document family out: precision {_fmt(got.get('precision'))}, recall {_fmt(got.get('recall'))}, "
                f"unusable rejected {_fmt(got.get('unusable_rejected'))}{auto}.")


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def critic_figures(policy: dict, min_precision: float) -> CriticFigures:
    """The figures stored with the calibrated critic policy (``python -m tasks.qa.calibrate --write-policy``)."""
    auto = policy.get("auto_approve") or {}
    return CriticFigures(labelled_pairs=policy.get("labelled_pairs", 0), documents=policy.get("documents", 0),
                         cv=policy.get("cv") or {}, cv_by_family=policy.get("cv_by_family") or {}, auto_cv=auto.get("cv") or {},
                         auto_by_family=auto.get("cv_by_family") or {}, bands=auto.get("bands") or [],
                         untested_bands=auto.get("untested_bands") or [],
                         family_out=(policy.get("cv_family_out") or {}).get("all") or {},
                         band_cv=auto.get("band_cv") or {}, cross_kind=auto.get("cross_kind_bands") or {},
                         auto_family_out=auto.get("cv_family_out") or {}, min_precision=min_precision)


class QaAudit(BaseModel):
    source: str
    pairs: int
    judged: int
    usable: int
    usable_share: float | None
    by_document: list[UsableShare]
    by_question_type: list[UsableShare]
    by_target_modality: list[UsableShare]
    by_status: dict[str, int]
    by_flag: dict[str, int]
    review: ReviewOutcomes
    coverage: list[Coverage] = []
    """Per document: chunks holding a fact and how many got a pair (working tables only)."""
    critic: CriticFigures | None = None
    """The offline critic's grouped-CV figures and the auto-approval policy in force."""

    def reports(self) -> list[Report]:
        """The audit as terminal tables: usable shares (three), statuses, flags, review outcomes."""
        out = [
            _share_report("document", self.by_document, lead=[self._lead()]),
            _share_report("question type", self.by_question_type),
            _share_report("target modality", self.by_target_modality),
        ]
        out.append(Report("QA pairs by status", ["status", "pairs"], [[k, v] for k, v in self.by_status.items()]))
        out.append(Report("QA pairs by flag", ["flag", "pairs"], [[k, v] for k, v in self.by_flag.items()],
                          notes=["A pair with several flags counts once under each."]))
        out.append(self._review_report())
        if self.coverage:
            out.append(self._coverage_report())
        if self.critic is not None:
            out.append(self.critic.report())
        return out

    def _coverage_report(self) -> Report:
        rows = [[c.document, c.chunks, c.fact_chunks, c.with_pair, _share(_ratio(c.with_pair, c.fact_chunks)),
                 _per(c.pairs, c.fact_chunks), c.with_approved, _share(c.approved_share),
                 _per(c.approved_pairs, c.fact_chunks)] for c in self.coverage]
        total = Coverage(document="all", chunks=sum(c.chunks for c in self.coverage),
                         fact_chunks=sum(c.fact_chunks for c in self.coverage), with_pair=sum(c.with_pair for c in self.coverage),
                         with_approved=sum(c.with_approved for c in self.coverage),
                         approved_pairs=sum(c.approved_pairs for c in self.coverage),
                         pairs=sum(c.pairs for c in self.coverage))
        rows.append([total.document, total.chunks, total.fact_chunks, total.with_pair,
                     _share(_ratio(total.with_pair, total.fact_chunks)), _per(total.pairs, total.fact_chunks),
                     total.with_approved, _share(total.approved_share), _per(total.approved_pairs, total.fact_chunks)])
        return Report("coverage: chunks holding a fact and their pairs",
                      ["document", "chunks", "fact chunks", "with a pair", "share with a pair", "pairs per fact chunk",
                       "with an approved pair", "share approved", "approved pairs per fact chunk"], rows,
                      notes=["A fact chunk holds a value with its unit, a table row, a requirement, a definition, a cause or "
                             "a decision in a table row or a clean prose line (not a formula, a figure's labels or OCR "
                             "debris), and is no reference list or contents page."])

    def _lead(self) -> str:
        judged = (f"the critic judged {self.judged}, {_share(self.usable_share)} of them usable" if self.judged
                  else "the critic (judge stage) has not run on them: usable shares are '-'")
        return f"QA audit of {self.source}: {self.pairs} pairs; {judged}."

    def _review_report(self) -> Report:
        r, s = self.review, self.review.spot_checks
        rows = [[kind, r.by_kind.get(kind, 0)] for kind in DECISION_KINDS]
        rows += [[kind, n] for kind, n in sorted(r.by_kind.items()) if kind not in DECISION_KINDS]
        notes = [f"{r.decisions} decisions, {r.on_pairs_here} on pairs in these tables."]
        if s.decided:
            notes.append(
                f"Spot checks: {s.decided} decisions on auto-approved pairs: {s.rejected} rejected "
                f"({_share(s.rejected_share)}), {s.edited} edited, {s.approved} approved "
                f"(rejected or edited: {_share(s.rejected_or_edited_share)})."
            )
        else:
            notes.append("Spot checks: no decision on an auto-approved pair yet (rejected share -).")
        if s.unknown:
            notes.append(f"{s.unknown} decisions are on pairs whose auto-approval is unknown (older decisions on pairs now gone).")
        return Report("review outcomes", ["decision", "count"], rows, notes=notes)


def _per(part: int, whole: int) -> str:
    return f"{part / whole:.2f}" if whole else "-"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _share_report(column: str, rows: Sequence[UsableShare], lead: Sequence[str] = ()) -> Report:
    return Report(f"critic: predicted usable share by {column}", [column, "pairs", "judged", "usable", "usable share"],
                  [[r.label, r.pairs, r.judged, r.usable, _share(r.share)] for r in rows], lead=list(lead))


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def critic_usable(pair: object) -> bool | None:
    """The critic's verdict on a pair, None when the judge has not run (or the column is not there yet)."""
    value = getattr(pair, "critic_usable", None)
    return None if value is None else bool(value)


def usable_shares(pairs: Iterable[QaPairRow], key: Callable[[QaPairRow], str],
                  label: Callable[[str], str] = str) -> list[UsableShare]:
    """The usable share per group of ``key`` (groups sorted by key)."""
    groups: dict[str, list[bool | None]] = {}
    for pair in pairs:
        groups.setdefault(key(pair), []).append(critic_usable(pair))
    out = []
    for name in sorted(groups):
        verdicts = groups[name]
        judged = sum(v is not None for v in verdicts)
        usable = sum(v is True for v in verdicts)
        out.append(UsableShare(key=name, label=label(name), pairs=len(verdicts), judged=judged, usable=usable,
                               share=_ratio(usable, judged)))
    return out


def _document_labels(pairs: Sequence[QaPairRow]) -> dict[str, str]:
    """doc_id -> file name, with the doc id added where two documents share a name."""
    names = {p.doc_id: Path(p.source_path).name for p in pairs}
    clashes = Counter(names.values())
    return {d: n if clashes[n] == 1 else f"{n} ({d[:8]})" for d, n in names.items()}


def was_auto_approved(decision: ReviewRow, pair: QaPairRow | None) -> bool | None:
    """Whether a decided pair had been auto-approved: as recorded at apply time, else read off the
    pair still in the tables (no flags), else unknown."""
    recorded = getattr(decision, "auto_approved", None)
    if recorded is not None:
        return bool(recorded)
    if pair is None:
        return None
    return not pair.flags


def spot_checks(decisions: Iterable[ReviewRow], pairs_by_id: dict[str, QaPairRow]) -> SpotChecks:
    """Decisions on auto-approved pairs and how they went."""
    kinds: Counter = Counter()
    unknown = 0
    for decision in decisions:
        auto = was_auto_approved(decision, pairs_by_id.get(decision.qa_id))
        if auto is None:
            unknown += 1
        elif auto:
            kinds[decision.decision] += 1
    decided = sum(kinds.values())
    return SpotChecks(decided=decided, approved=kinds["approve"], rejected=kinds["reject"], edited=kinds["edit"],
                      rejected_share=_ratio(kinds["reject"], decided),
                      rejected_or_edited_share=_ratio(kinds["reject"] + kinds["edit"], decided), unknown=unknown)


def _latest(decisions: Iterable[ReviewRow]) -> list[ReviewRow]:
    latest: dict[str, ReviewRow] = {}
    for row in decisions:  # the table is append-only: the last row per QA id wins
        latest[row.qa_id] = row
    return list(latest.values())


def _flag_counts(pairs: Sequence[QaPairRow]) -> dict[str, int]:
    counts: Counter = Counter()
    for pair in pairs:
        for flag in dict.fromkeys(pair.flags) or [NO_FLAG]:
            counts[flag] += 1
    order = [f for f in FLAG_CODES if f in counts] + sorted(f for f in counts if f not in FLAG_CODES and f != NO_FLAG)
    return {f: counts[f] for f in order + ([NO_FLAG] if NO_FLAG in counts else [])}


def audit_pairs(pairs: Sequence[QaPairRow], decisions: Iterable[ReviewRow], source: str = "QA pairs") -> QaAudit:
    """The audit of ``pairs`` and the review decisions (every stored row; the latest per QA id counts)."""
    latest = _latest(decisions)
    by_id = {p.qa_id: p for p in pairs}
    statuses = Counter(p.status for p in pairs)
    verdicts = [critic_usable(p) for p in pairs]
    judged = sum(v is not None for v in verdicts)
    usable = sum(v is True for v in verdicts)
    labels = _document_labels(pairs)
    kinds = Counter(d.decision for d in latest)
    return QaAudit(
        source=source,
        pairs=len(pairs),
        judged=judged,
        usable=usable,
        usable_share=_ratio(usable, judged),
        by_document=sorted(usable_shares(pairs, lambda p: p.doc_id, lambda d: labels[d]), key=lambda r: (r.label, r.key)),
        by_question_type=usable_shares(pairs, lambda p: p.question_type),
        by_target_modality=usable_shares(pairs, lambda p: p.target_modality),
        by_status={s: statuses.get(s, 0) for s in [*STATUSES, *sorted(set(statuses) - set(STATUSES))]},
        by_flag=_flag_counts(pairs),
        review=ReviewOutcomes(
            decisions=len(latest),
            by_kind={k: kinds.get(k, 0) for k in [*DECISION_KINDS, *sorted(set(kinds) - set(DECISION_KINDS))]},
            on_pairs_here=sum(d.qa_id in by_id for d in latest),
            spot_checks=spot_checks(latest, by_id),
        ),
    )


def load_working(root: Path) -> tuple[list[QaPairRow], list[ReviewRow]]:
    """The working ``qa_pairs`` and every stored review decision under ``root``."""
    store = TableStore(Layout(root))
    if not store.exists("qa_pairs"):
        raise MissingTablesError(f"{store.path('qa_pairs')} does not exist; run `ragprep qa --root {root}` first")
    return store.read("qa_pairs"), store.read("review", optional=True)


def _records(con, table: str) -> list[dict]:
    """A table's rows as dicts without nulls (absent columns take the model's defaults); none when the table is absent."""
    import duckdb

    try:
        cursor = con.execute(f"select * from {table}")
    except duckdb.CatalogException:  # e.g. no review decisions when the version was built
        return []
    columns = [d[0] for d in cursor.description]
    return [{k: v for k, v in zip(columns, row) if v is not None} for row in cursor.fetchall()]


def load_version(root: Path, version: str, uri: str | None = None) -> tuple[list[QaPairRow], list[ReviewRow]]:
    """A dataset version's ``qa_pairs`` and ``review`` (the latest decision per pair), through the DuckDB catalog."""
    from ragprep.catalog import connect

    con = connect(Layout(root), version, uri)
    try:
        pairs = [QaPairRow.model_validate(r) for r in _records(con, "qa_pairs")]
        decisions = [ReviewRow.model_validate(r) for r in _records(con, "review")]
    finally:
        con.close()
    return pairs, decisions


def run_audit(root: Path, version: str | None = None, uri: str | None = None, min_precision: float | None = None) -> QaAudit:
    """The audit of the working tables under ``root``, or of dataset ``version``; with ``min_precision``
    (``qa.auto_approve_min_precision``) also the critic's grouped-CV figures and the auto-approval in force."""
    from tasks.qa.judge import load_policy

    critic = critic_figures(load_policy(), min_precision) if min_precision is not None else None
    if version is None:
        pairs, decisions = load_working(root)
        audit = audit_pairs(pairs, decisions, f"the working tables under {root}")
        chunks = TableStore(Layout(root)).read("chunks", optional=True)
        audit = audit.model_copy(update={"coverage": coverage(pairs, chunks)}) if chunks else audit
    else:
        pairs, decisions = load_version(root, version, uri)
        audit = audit_pairs(pairs, decisions, f"dataset version {version}")
    return audit.model_copy(update={"critic": critic})
