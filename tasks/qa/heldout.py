"""Coverage on documents the policy was not fitted on: a run's pairs judged, document by document, by the critic policy
and auto-approval bands fitted on the labelled pairs of the *other* documents (``tasks.qa.calibrate``), and its fact
chunks counted with a pair the critic passes and with an auto-approved pair (``python -m tasks.qa.heldout ROOT``)."""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tasks.qa.calibrate import (
    LABEL_FILES,
    Labelled,
    Policy,
    approve,
    every_pair_counts,
    fit,
    fit_band_choice,
    labelled,
    load_rows,
    rule_hits,
)
from tasks.qa.gate import BandChoice
from tasks.qa.judge import document_kinds


@dataclass
class HeldOutCoverage:
    """Per document of a run, its fact chunks and those with a pair auto-approved by the policy and bands fitted
    without that document's labels (leave one document out); ``auto_pairs``: the auto-approved pairs (for a hand read)."""

    by_document: dict[str, dict]
    auto_pairs: list[dict]


def held_out_coverage(root: Path, items: Sequence[Labelled], cross_kind: bool = True) -> HeldOutCoverage:
    """The run under ``root`` judged as on documents nobody labelled: each document's pairs get the critic policy and
    the auto-approval bands fitted on the labelled pairs of the *other* documents (the judge's rules, its pair flags
    and its run-time document kind), and its fact chunks (``tasks.qa.audit.holds_fact``) are counted with a pair
    the critic passes and with a pair auto-approved (``cross_kind``: also by the cross-kind bands, ``tasks.qa.gate``)."""
    from ragprep.storage import Layout
    from ragprep.tables import TableStore
    from tasks.qa.audit import holds_fact
    from tasks.qa.judge import pair_contexts

    store = TableStore(Layout(root))
    chunks, pairs, documents = store.read("chunks"), store.read("qa_pairs"), store.read("documents")
    contexts = pair_contexts(pairs, chunks, documents)
    fitted: dict[str, tuple[Policy, BandChoice]] = {}
    passed: dict[str, set[str]] = defaultdict(set)
    auto: dict[str, set[str]] = defaultdict(set)
    auto_pairs = []
    for pair, ctx in zip(pairs, contexts):
        if ctx.file_name not in fitted:
            train = [i for i in items if i.doc != ctx.file_name]
            fitted[ctx.file_name] = (fit(train), fit_band_choice(train, cross_kind))
        policy, choice = fitted[ctx.file_name]
        if pair.review_decision or ctx.flags or not approve(Labelled(ctx.file_name, False, rule_hits(ctx), None), policy):
            continue
        passed[pair.chunk_id].add(pair.qa_id)
        deciding = choice.decides({"doc_kind": ctx.doc_kind, "question_type": pair.question_type,
                                   "generator_rule": pair.generator_rule})
        if deciding is not None:
            auto[pair.chunk_id].add(pair.qa_id)
            auto_pairs.append({"qa_id": pair.qa_id, "file_name": ctx.file_name, "doc_kind": ctx.doc_kind,
                               "band": deciding, "generator_rule": pair.generator_rule, "chunk_title": ctx.chunk_title,
                               "question": pair.question, "answer": pair.answer,
                               "page": pair.page_start, "chunk_markdown": ctx.chunk_markdown})
    out: dict[str, dict] = {}
    names = {d.doc_id: d.file_name or Path(d.path).name for d in documents}
    for chunk in chunks:
        got = out.setdefault(names.get(chunk.doc_id, Path(chunk.source_path).name),
                             dict.fromkeys(("chunks", "fact_chunks", "with_passed", "with_auto", "auto_pairs"), 0))
        got["chunks"] += 1
        got["auto_pairs"] += len(auto.get(chunk.chunk_id, ()))
        if holds_fact(chunk.qa_text, chunk.title):
            got["fact_chunks"] += 1
            got["with_passed"] += bool(passed.get(chunk.chunk_id))
            got["with_auto"] += bool(auto.get(chunk.chunk_id))
    labelled_docs = {i.doc for i in items}
    kinds = {names.get(doc, doc): kind for doc, kind in document_kinds(chunks).items()}
    for name, got in out.items():
        got["labelled"] = name in labelled_docs
        got["kind"] = kinds.get(name, "")
    return HeldOutCoverage(dict(sorted(out.items())), auto_pairs)


def render_coverage(got: HeldOutCoverage) -> str:
    """The held-out coverage as plain text: per document and in all."""
    lines = ["coverage of fact chunks, each document judged by the policy and bands fitted without its labels:",
             f"  {'document':<44} {'kind':>10} {'chunks':>7} {'facts':>6} {'passed':>7} {'auto':>6} {'share':>6} {'pairs':>6}"]
    total = Counter()
    for doc, g in got.by_document.items():
        kind = g.get("kind", "")
        total.update({k: v for k, v in g.items() if k not in ("labelled", "kind")})
        share = f"{g['with_auto'] / g['fact_chunks']:.2f}" if g["fact_chunks"] else "-"
        lines.append(f"  {doc[:44]:<44} {kind:>10} {g['chunks']:>7} {g['fact_chunks']:>6} {g['with_passed']:>7} "
                     f"{g['with_auto']:>6} {share:>6} {g['auto_pairs']:>6}")
    facts = total["fact_chunks"] or 1
    lines.append(f"  {'all':<44} {'':>10} {total['chunks']:>7} {total['fact_chunks']:>6} {total['with_passed']:>7} "
                 f"{total['with_auto']:>6} {total['with_auto'] / facts:>6.2f} {total['auto_pairs']:>6}")
    lines.append(f"  fact chunks with a pair the critic passes: {total['with_passed'] / facts:.2f}; "
                 f"with an auto-approved pair: {total['with_auto'] / facts:.2f}")
    per_band: dict[str, Counter] = defaultdict(Counter)
    for pair in got.auto_pairs:
        per_band[pair["band"]][pair["file_name"]] += 1
    lines.append("auto-approved pairs per deciding band (documents):")
    for band, docs in sorted(per_band.items()):
        lines.append(f"  {band} {sum(docs.values())}: " + ", ".join(f"{d} {n}" for d, n in sorted(docs.items())))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the held-out coverage of a run's fact chunks (each document judged without its labels)."""
    parser = argparse.ArgumentParser(prog="python -m tasks.qa.heldout", description=main.__doc__)
    parser.add_argument("root", type=Path, help="a ragprep root with chunks, documents and qa_pairs")
    parser.add_argument("--labels", nargs="*", default=list(LABEL_FILES), help="labelled JSON-lines files")
    parser.add_argument("--auto-pairs", type=Path, help="write the held-out auto-approved pairs (JSON lines) here, "
                        "for a hand read")
    parser.add_argument("--bands-on", choices=("asked", "all"), default="asked", help="which labelled pairs the bands "
                        "are measured on (python -m tasks.qa.calibrate --help)")
    parser.add_argument("--cross-kind", choices=("on", "off"), default="on", help="cross-kind bands (tasks/qa/gate.py)")
    args = parser.parse_args(argv)
    items = labelled(load_rows(args.labels))
    got = held_out_coverage(args.root, every_pair_counts(items) if args.bands_on == "all" else items, args.cross_kind == "on")
    print(render_coverage(got))
    if args.auto_pairs:
        args.auto_pairs.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in got.auto_pairs),
                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
