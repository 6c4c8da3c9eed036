"""Dataset quality gate: Great Expectations (1.x) suites from ``tasks/dataset/expectations/`` over one dataset version.

``run_quality_gate(tables, rules, out_dir)`` validates the
version's tables (``chunks``, ``qa_pairs``, ``quotes`` and ``mm_items`` carry a ``split`` column; all but ``chunks`` are optional)
and returns a :class:`GateResult`; ``passed`` is True only if every expectation succeeded.

Suites
    One JSON file per table (``tasks/dataset/expectations/<table>.json``, GX's own suite layout: ``name``,
    ``expectations`` of ``{type, kwargs, meta}``). Each expectation's ``meta.frame`` names the
    pandas frame it runs on: the table itself or a *derived* frame built here (``chunks.split_shares``,
    ``chunks.split_leakage``, ``qa_pairs.flags``, ``qa_pairs.chunk_refs``, ``quotes.images``,
    ``mm_items.checks``). Split shares are checked
    on chunks, the unit the split hashes; QA pairs inherit their chunk's split, so their shares follow
    from the chunks' and may drift on small corpora without anything being wrong.
    Run-time values are GX suite parameters (``{"$PARAMETER": "min_tokens"}``) filled at validation:
    ``min_tokens``, ``max_tokens``, ``allowed_flags``, ``split_share_tolerance``. Suites of tables
    absent from ``tables`` are skipped. See ``tasks/dataset/expectations/README.md``.

Split shares
    For a table of n rows the share of each split (every split named in ``ratios`` plus any other seen,
    whose target is 0) must satisfy ``|share - ratio| <= max(tolerance, 1/n)``: within the tolerance,
    or within one row of the exact target count, whichever is looser (the best any assignment of n
    rows can do is to miss the target by less than one row, so a tiny table is not failed for
    rounding, while e.g. putting every row of it in one wrong split still fails). An empty table gives
    an empty shares frame (the chunks suite separately demands at least one chunk).

Offline
    GX runs in an ephemeral, in-memory context with analytics off (``GX_ANALYTICS_ENABLED=false`` and
    the context config) and progress bars off. GX 1.24's own Data Docs templates load Bootstrap,
    Font Awesome and Vega from CDNs, so they are not used: ``out_dir/data_docs/index.html`` is a small
    self-contained page written here (no scripts, no external assets, CSP ``default-src 'none'``),
    next to ``validation_results.json`` (GX's raw results per frame).
"""

from __future__ import annotations

import html
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
from pydantic import BaseModel

from ragprep.tables import SUITE_TABLES

EXPECTATIONS_DIR: Traversable = files("tasks.dataset").joinpath("expectations")
"""The suites shipped with ragprep (package data of ``tasks.dataset``, found through importlib.resources)."""

log = logging.getLogger(__name__)


class ExpectationOutcome(BaseModel):
    table: str  # the frame validated: a table name or a derived frame such as "qa_pairs.flags"
    expectation: str  # GX expectation type, e.g. "expect_column_values_to_be_unique"
    column: str | None
    success: bool
    details: str  # e.g. "3 unexpected: ['a', 'b']" or the check's description when it passed


class GateResult(BaseModel):
    passed: bool
    outcomes: list[ExpectationOutcome]
    data_docs: str | None  # path to the saved HTML index


# --------------------------------------------------------------------------- derived frames


def _split_shares(df: pd.DataFrame, ratios: dict[str, float]) -> pd.DataFrame:
    n = len(df)
    counts = df["split"].value_counts(dropna=False)
    splits = list(ratios) + [s for s in counts.index if s not in ratios]
    rows = []
    if n:
        for split in splits:
            count = int(counts.get(split, 0))
            share = count / n
            target = float(ratios.get(split, 0.0)) if isinstance(split, str) else 0.0
            rows.append(
                {
                    "split": "<null>" if split is None or split != split else str(split),
                    "rows": count,
                    "share": share,
                    "target": target,
                    "deviation": round(abs(share - target), 9),
                }
            )
    return pd.DataFrame(rows, columns=["split", "rows", "share", "target", "deviation"])


def _split_leakage(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    parts = [frames[t][["chunk_id", "split"]] for t in ("chunks", "qa_pairs", "quotes", "mm_items") if t in frames]
    pairs = pd.concat(parts, ignore_index=True).dropna()
    grouped = pairs.groupby("chunk_id", sort=True)["split"]
    out = pd.DataFrame(
        {
            "n_splits": grouped.nunique(),
            "splits": grouped.agg(lambda s: ",".join(sorted(set(map(str, s))))),
        }
    ).reset_index()
    return out[["chunk_id", "n_splits", "splits"]]


def _qa_flags(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    qa = frames["qa_pairs"][["qa_id", "flags"]]
    rows = [
        {"qa_id": qa_id, "flag": flag}
        for qa_id, flags in zip(qa["qa_id"], qa["flags"])
        if flags is not None
        for flag in flags
    ]
    return pd.DataFrame(rows, columns=["qa_id", "flag"])


def _qa_chunk_refs(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    qa = frames["qa_pairs"]
    known = set(frames["chunks"]["chunk_id"].dropna()) if "chunks" in frames else set()
    return pd.DataFrame(
        {
            "qa_id": qa["qa_id"],
            "chunk_id": qa["chunk_id"],
            "chunk_exists": [c in known for c in qa["chunk_id"]],
        }
    )


def _quote_images(frames: dict[str, pd.DataFrame], image_root: Path | None) -> pd.DataFrame:
    quotes = frames["quotes"]
    images = quotes[quotes["modality"] == "image"]
    paths = list(images["img_path"])
    exists = [bool(p) and image_root is not None and (Path(image_root) / p).is_file() for p in paths]
    return pd.DataFrame({"quote_id": list(images["quote_id"]), "img_path": paths, "image_exists": exists},
                        columns=["quote_id", "img_path", "image_exists"])


def _mm_item_checks(frames: dict[str, pd.DataFrame], candidate_sets: Sequence[tuple[int, int]]) -> pd.DataFrame:
    items = frames["mm_items"]
    quotes = frames.get("quotes")
    modality = dict(zip(quotes["quote_id"], quotes["modality"])) if quotes is not None else {}
    chunks = set(frames["chunks"]["chunk_id"]) if "chunks" in frames else set()
    budgets = {tuple(b) for b in candidate_sets}
    rows = []
    for item in items.to_dict("records"):
        texts, images = list(item["text_quote_ids"]), list(item["image_quote_ids"])
        members = texts + images
        gold = list(item["gold_quote_ids"])
        rows.append({
            "item_id": item["item_id"],
            "chunk_exists": item["chunk_id"] in chunks,
            "quotes_exist": all(modality.get(q) == "text" for q in texts) and all(modality.get(q) == "image" for q in images),
            "has_gold": bool(gold),
            "gold_in_set": set(gold) <= set(members) and len(gold) == len(item["gold_labels"]),
            "budget_known": (int(item["n_text"]), int(item["n_image"])) in budgets,
            "full_or_short": len(texts) + int(item["short_text"]) == item["n_text"]
            and len(images) + int(item["short_image"]) == item["n_image"]
            and bool(item["short"]) == bool(item["short_text"] or item["short_image"]),
            "no_repeats": len(set(members)) == len(members),
        })
    columns = ["item_id", "chunk_exists", "quotes_exist", "has_gold", "gold_in_set", "budget_known", "full_or_short", "no_repeats"]
    return pd.DataFrame(rows, columns=columns)


def _builders(
    ratios: dict[str, float], image_root: Path | None = None, candidate_sets: Sequence[tuple[int, int]] = ((10, 5), (12, 8))
) -> dict[str, Callable[[dict[str, pd.DataFrame]], pd.DataFrame]]:
    return {
        "chunks.split_shares": lambda f: _split_shares(f["chunks"], ratios),
        "chunks.split_leakage": _split_leakage,
        "qa_pairs.flags": _qa_flags,
        "qa_pairs.chunk_refs": _qa_chunk_refs,
        "quotes.images": lambda f: _quote_images(f, image_root),
        "mm_items.checks": lambda f: _mm_item_checks(f, candidate_sets),
    }


# Columns that identify a failing row in the details (must exist in the frame).
_KEY_COLUMNS = {
    "chunks": "chunk_id",
    "qa_pairs": "qa_id",
    "documents": "doc_id",
    "chunks.split_shares": "split",
    "chunks.split_leakage": "chunk_id",
    "qa_pairs.flags": "qa_id",
    "qa_pairs.chunk_refs": "qa_id",
    "quotes": "quote_id",
    "quotes.images": "quote_id",
    "mm_items": "item_id",
    "mm_items.checks": "item_id",
}


# --------------------------------------------------------------------------- suites


def load_suite(table: str, directory: Path | Traversable = EXPECTATIONS_DIR) -> dict[str, Any]:
    """The suite file of ``table`` as a dict (GX suite layout, every expectation with ``meta.frame``)."""
    data = json.loads((directory / f"{table}.json").read_text(encoding="utf-8"))
    for exp in data["expectations"]:
        exp.setdefault("meta", {}).setdefault("frame", table)
    return data


def _parameters(
    frames: dict[str, pd.DataFrame], table: str, tolerance: float, token_bounds: tuple[int, int], allowed_flags: Sequence[str]
) -> dict[str, Any]:
    n = len(frames[table])
    return {
        "min_tokens": int(token_bounds[0]),
        "max_tokens": int(token_bounds[1]),
        "allowed_flags": list(allowed_flags),
        "split_share_tolerance": max(float(tolerance), 1.0 / n) if n else float(tolerance),
    }


def _ephemeral_context():
    # GX reads this when it is first imported (it is imported here only); the context config
    # below turns analytics off as well, so nothing is sent whatever the environment says.
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def _plain(value: Any) -> Any:
    """numpy scalars to Python values, so details read ``'c1'``/``3`` rather than ``np.int64(3)``."""
    return value.item() if hasattr(value, "item") and callable(value.item) else value


def _describe(
    result: dict[str, Any], exception: dict[str, Any] | None, success: bool, check: str, column: str | None = None
) -> str:
    if exception and exception.get("raised_exception"):
        return f"error: {exception.get('exception_message')}"
    if "unexpected_count" in result and result.get("unexpected_count"):
        count = result["unexpected_count"]
        values = result.get("partial_unexpected_list") or []
        index = result.get("partial_unexpected_index_list") or []
        text = f"{count} unexpected: {[_plain(v) for v in values[:10]]!r}"
        keys = [
            {k: _plain(v) for k, v in row.items() if k not in (column, None)}
            for row in index[:10]
            if isinstance(row, dict)
        ]
        if any(keys):
            names = sorted({k for row in keys for k in row})
            text += f" at {', '.join(names)} {[v for row in keys for v in row.values()]!r}"
        return text
    if "observed_value" in result:
        return f"{'ok' if success else 'failed'} ({check}); observed {result['observed_value']!r}"
    if not success:
        return f"failed ({check}); GX returned no result (missing column?)"
    return f"ok ({check})"


def _fail_all(frame: str, expectations: list[dict[str, Any]], why: str) -> list[ExpectationOutcome]:
    return [
        ExpectationOutcome(
            table=frame, expectation=e["type"], column=e["kwargs"].get("column"), success=False, details=why
        )
        for e in expectations
    ]


# --------------------------------------------------------------------------- gate


@dataclass(frozen=True)
class GateRules:
    """What the gate holds a version to: split shares, chunk sizes, allowed flags, candidate-set budgets."""

    ratios: dict[str, float]
    tolerance: float
    token_bounds: tuple[int, int]
    allowed_flags: Sequence[str]
    candidate_sets: Sequence[tuple[int, int]] = ((10, 5), (12, 8))


def run_quality_gate(
    tables: dict[str, pa.Table], rules: GateRules, out_dir: Path, image_root: Path | None = None
) -> GateResult:
    """Validate one dataset version's tables; write Data Docs to ``out_dir/data_docs/``.

    ``image_root``: where quote images live (``img_path`` is relative to it)."""
    ratios, tolerance, token_bounds = rules.ratios, rules.tolerance, rules.token_bounds
    allowed_flags, candidate_sets = rules.allowed_flags, rules.candidate_sets
    import great_expectations as gx
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

    frames = {name: t.to_pandas() for name, t in tables.items() if name in SUITE_TABLES}
    builders = _builders(ratios, image_root, candidate_sets)
    context = _ephemeral_context()
    source = context.data_sources.add_pandas("ragprep")

    outcomes: list[ExpectationOutcome] = []
    raw_results: dict[str, Any] = {}
    for table in SUITE_TABLES:
        if table not in frames:
            continue
        suite_data = load_suite(table)
        params = _parameters(frames, table, tolerance, token_bounds, allowed_flags)
        by_frame: dict[str, list[dict[str, Any]]] = {}
        for exp in suite_data["expectations"]:
            by_frame.setdefault(exp["meta"]["frame"], []).append(exp)

        for frame_name, expectations in by_frame.items():
            try:
                df = frames[frame_name] if frame_name in frames else builders[frame_name](frames)
            except KeyError as exc:
                outcomes += _fail_all(frame_name, expectations, f"cannot build frame: missing {exc}")
                continue

            suite = gx.ExpectationSuite(name=f"{table}:{frame_name}")
            for order, exp in enumerate(expectations):
                meta = dict(exp.get("meta", {}), order=order)
                suite.add_expectation_configuration(
                    ExpectationConfiguration(type=exp["type"], kwargs=dict(exp["kwargs"]), meta=meta)
                )
            suite = context.suites.add(suite)
            asset = source.add_dataframe_asset(frame_name)
            batch = asset.add_batch_definition_whole_dataframe(frame_name)
            validation = context.validation_definitions.add(
                gx.ValidationDefinition(name=frame_name, data=batch, suite=suite)
            )
            key = _KEY_COLUMNS.get(frame_name)
            result_format: dict[str, Any] = {"result_format": "SUMMARY", "partial_unexpected_count": 10}
            if key and key in df.columns:
                result_format["unexpected_index_column_names"] = [key]
            result = validation.run(
                batch_parameters={"dataframe": df}, expectation_parameters=params, result_format=result_format
            )
            raw_results[frame_name] = result.to_json_dict()
            ordered = sorted(result.results, key=lambda r: r.expectation_config.meta.get("order", 0))
            for r in ordered:
                cfg = r.expectation_config
                outcomes.append(
                    ExpectationOutcome(
                        table=frame_name,
                        expectation=cfg.type,
                        column=cfg.kwargs.get("column"),
                        success=bool(r.success),
                        details=_describe(
                            dict(r.result or {}),
                            dict(r.exception_info or {}),
                            bool(r.success),
                            cfg.meta.get("check", ""),
                            cfg.kwargs.get("column"),
                        ),
                    )
                )

    passed = bool(outcomes) and all(o.success for o in outcomes)
    docs = write_data_docs(Path(out_dir) / "data_docs", outcomes, passed, raw_results, ratios, tolerance, token_bounds)
    return GateResult(passed=passed, outcomes=outcomes, data_docs=str(docs))


# --------------------------------------------------------------------------- data docs

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em}table{border-collapse:collapse;width:100%}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.ok{color:#176f2c}.fail{color:#b00020;font-weight:bold}
tr.fail td{background:#fdecee}code{font-size:.95em}
"""


def write_data_docs(
    directory: Path,
    outcomes: list[ExpectationOutcome],
    passed: bool,
    raw_results: dict[str, Any],
    ratios: dict[str, float],
    tolerance: float,
    token_bounds: tuple[int, int],
) -> Path:
    """A self-contained HTML summary (no scripts, no external assets) plus GX's raw results as JSON."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "validation_results.json").write_text(
        json.dumps(raw_results, indent=2, default=str, ensure_ascii=False), encoding="utf-8"
    )
    esc = html.escape
    failed = sum(not o.success for o in outcomes)
    rows = "\n".join(
        f'<tr class="{"ok" if o.success else "fail"}"><td>{esc(o.table)}</td><td><code>{esc(o.expectation)}</code></td>'
        f"<td>{esc(o.column or '')}</td><td class=\"{'ok' if o.success else 'fail'}\">"
        f"{'pass' if o.success else 'FAIL'}</td><td>{esc(o.details)}</td></tr>"
        for o in outcomes
    )
    params = (
        f"ratios {esc(json.dumps(ratios))}, tolerance {tolerance}, token bounds {list(token_bounds)}"
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>ragprep quality gate: {'passed' if passed else 'FAILED'}</title>
<style>{_CSS}</style></head><body>
<h1>Quality gate: <span class="{'ok' if passed else 'fail'}">{'passed' if passed else 'FAILED'}</span></h1>
<p>{len(outcomes)} expectations, {failed} failed. Parameters: {params}.
Generated {esc(datetime.now(timezone.utc).isoformat(timespec='seconds'))}.
Raw Great Expectations results: <a href="validation_results.json">validation_results.json</a>.</p>
<table><thead><tr><th>frame</th><th>expectation</th><th>column</th><th>result</th><th>details</th></tr></thead>
<tbody>
{rows}
</tbody></table></body></html>
"""
    index = directory / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
