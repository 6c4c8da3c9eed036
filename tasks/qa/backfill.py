"""The generator rule of every labelled pair, read back by re-running today's generator (a side table, not hand edits).

The pipeline records ``generator_rule`` on every pair it writes (``tasks.qa.rules.source_rule``); about 980 labelled
pairs are older than that field. ``backfill`` re-runs the current heuristic generator over every chunk of a run over
the same documents (``ragprep ingest`` ... ``qa`` into ROOT: the chunks, elements, headers and document handles the
pipeline would see; a chunk no other rule asks of gets the default coverage rules' candidates, as in the pipeline) and
looks for each labelled question among the candidates: first in the labelled row's own chunk
(the run's chunk closest to its ``chunk_markdown``, as ``calibrate.attach_corpus`` finds it), then anywhere in its
document. A question whose best match scores at least ``MIN_QUESTION_RATIO`` (rapidfuzz ratio) takes that
candidate's rule and its place among its chunk's candidates (``chunk_rank``, 0 = the chunk's first pair); a question
the current generator no longer asks keeps ``generator_rule`` null (it still trains the critic).

``python -m tasks.qa.calibrate --backfill-root ROOT`` writes the result to ``RULES_FILE`` (one line per labelled
pair: file name, question, answer, the matched rule, the rule its label file recorded, the match score, the rank);
``calibrate.labelled`` reads it. A rule recorded in a label file wins over the match (it is what made the pair);
older spellings are normalised (``normal_rule``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

RULES_FILE = Path(__file__).resolve().parents[2] / "tests" / "data" / "qa_generator_rules.jsonl"
MIN_QUESTION_RATIO = 90.0
"""The rapidfuzz ratio (0-100) a labelled question must reach against a regenerated one to take its rule: the
handle or a repaired word may differ since the label was made, the question frame may not."""
MAX_PER_CHUNK = 10_000
"""Every candidate of a chunk is kept when matching (the pipeline asks at most its budget, the first ones)."""

_OLD_SOURCE_RE = re.compile(r"^generate\.source\._")


def normal_rule(name: str | None) -> str | None:
    """A recorded rule name in today's spelling (``generate.source._table_candidates`` ->
    ``generate.source.table_candidates``); a free-text note ("table.cell (unregistered source)") is no rule: None."""
    if not name or not name.startswith("generate."):
        return None
    return _OLD_SOURCE_RE.sub("generate.source.", name)


def pair_key(row: dict) -> str:
    """The side table's key of a labelled pair: its document, question and answer (as ``calibrate.unique_pairs``)."""
    return "\t".join((row["file_name"], row["question"].strip(), row["answer"].strip()))


def _candidates(root: Path, files: set[str]) -> dict[str, list[tuple[str, str, list]]]:
    """Per document file name, its chunks as (chunk id, qa text, today's candidates in generation order)."""
    from ragprep.storage import Layout
    from ragprep.tables import TableStore
    from tasks.qa import rules
    from tasks.qa.generate import carried_sections, chunk_view, document_handles
    from tasks.qa.rules.coverage import DEFAULT_COVERAGE_SOURCES, coverage_candidates

    store = TableStore(Layout(root))
    chunks = [c for c in store.read("chunks") if Path(c.source_path).name in files]
    elements = {e.element_id: e for e in store.read("elements")}
    handles = document_handles(chunks, store.read("documents", optional=True), store.read("headers", optional=True))
    carried = carried_sections(chunks)
    out: dict[str, list] = defaultdict(list)
    for chunk in chunks:
        view = chunk_view(chunk, elements, handles.get(chunk.doc_id), carried.get(chunk.chunk_id, ""))
        asked = rules.generate(view, MAX_PER_CHUNK) or coverage_candidates(view, MAX_PER_CHUNK, DEFAULT_COVERAGE_SOURCES)
        out[Path(chunk.source_path).name].append((chunk.chunk_id, chunk.qa_text, asked))
    return out


MIN_ANSWER_RATIO = 80.0
"""A candidate whose answer is further than this (rapidfuzz ratio) from the labelled answer is another pair, however
close its question: templated questions ("What does paragraph 5.7.3 (Shoulder) of Annex 6 ... specify?") repeat over
the statements of one paragraph, and a pair whose garbled answer is no longer asked must not count as asked."""


def _best(question: str, chunks: Sequence[tuple[str, str, list]], answer: str = "") -> tuple[float, str, int]:
    """(ratio, rule, rank in its chunk) of the candidate closest to ``question`` among ``chunks`` (with ``answer``:
    among those whose answer is within ``MIN_ANSWER_RATIO`` of it)."""
    from rapidfuzz import fuzz

    best = (0.0, "", -1)
    for _, _, candidates in chunks:
        for rank, cand in enumerate(candidates):
            if answer and fuzz.ratio(answer, cand.answer.strip()) < MIN_ANSWER_RATIO:
                continue
            score = fuzz.ratio(question, cand.question)
            if score > best[0]:
                best = (score, cand.rule, rank)
    return best


def backfill(rows: Sequence[dict], root: Path) -> list[dict]:
    """One side-table line per labelled pair (``pair_key`` order of first appearance): the rule today's generator
    gives its question (or None), the rule its file recorded, the match ratio and its rank among its chunk's pairs."""
    from rapidfuzz import fuzz

    unique = {pair_key(r): r for r in rows}
    by_file = _candidates(root, {r["file_name"] for r in unique.values()})
    out = []
    for key, row in unique.items():
        members = by_file.get(row["file_name"], [])
        own = max(members, key=lambda m: fuzz.ratio(m[1][:1500], row["chunk_markdown"][:1500]), default=None)
        score, name, rank = _best(row["question"].strip(), [own] if own else [], row["answer"].strip())
        if score < MIN_QUESTION_RATIO:
            score, name, rank = _best(row["question"].strip(), members, row["answer"].strip())
        matched = score >= MIN_QUESTION_RATIO
        out.append({"file_name": row["file_name"], "question": row["question"].strip(), "answer": row["answer"].strip(),
                    "generator_rule": name if matched else None, "recorded_rule": row.get("generator_rule"),
                    "match_ratio": round(score, 1), "chunk_rank": rank if matched else None})
    return out


def write_rules(lines: Sequence[dict], path: Path = RULES_FILE) -> None:
    """Store the side table (JSON lines)."""
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")


def stored_rules(path: Path = RULES_FILE) -> dict[str, dict]:
    """The side table by ``pair_key`` ({} when there is none)."""
    if not path.is_file():
        return {}
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {pair_key(line): line for line in lines}


def rule_of(row: dict, table: dict[str, dict]) -> str | None:
    """A labelled pair's generator rule: the one its label file recorded (normalised), else the backfilled match."""
    return normal_rule(row.get("generator_rule")) or normal_rule((table.get(pair_key(row)) or {}).get("generator_rule"))


def still_asked(row: dict, table: dict[str, dict]) -> bool:
    """Today's generator still asks this labelled pair: its backfill matched; a pair not in the side table (labelled
    after the last backfill) counts when its label file recorded the rule of the pipeline that made it."""
    line = table.get(pair_key(row))
    return bool(line["generator_rule"]) if line is not None else bool(normal_rule(row.get("generator_rule")))


def summary(lines: Sequence[dict]) -> str:
    """How many labelled pairs got a rule, by recorded or matched, and how often the two agree."""
    recorded = sum(bool(normal_rule(x["recorded_rule"])) for x in lines)
    matched = sum(bool(x["generator_rule"]) for x in lines)
    only = sum(bool(x["generator_rule"]) and not normal_rule(x["recorded_rule"]) for x in lines)
    both = [x for x in lines if x["generator_rule"] and normal_rule(x["recorded_rule"])]
    agree = sum(x["generator_rule"] == normal_rule(x["recorded_rule"]) for x in both)
    none = sum(not x["generator_rule"] and not normal_rule(x["recorded_rule"]) for x in lines)
    return (f"generator rules of {len(lines)} labelled pairs: {recorded} recorded by their label file, {matched} matched "
            f"by today's generator ({only} of them backfilled, without a recorded rule); recorded and matched agree on "
            f"{agree} of {len(both)}; {none} have no rule (today's generator no longer asks them, or a hand-written pair)")
