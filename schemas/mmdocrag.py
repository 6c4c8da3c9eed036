"""MMDocRAG export lines: the JSON Schema (``mmdocrag.schema.json``, draft 2020-12) and the
checks it cannot express.

Structural checks come from the schema: documented fields required, types, quote shapes, label
patterns; extra properties (provenance such as ``doc_id``, ``ragprep_quote_id``) are allowed.
Semantic checks, per line: quote_ids unique within each modality; each modality numbered
exactly ``text1..textN`` / ``image1..imageM`` (order not checked, ``text01`` is not ``text1``);
every ``gold_quotes`` label is a candidate ``quote_id``. Per file: ``q_id`` unique.

Every message starts with a JSON path (``$.text_quotes[2].page_id: ...``); file messages are
prefixed with ``file:line:``.

:func:`iter_jsonl` is the one JSON-lines reader (blank lines skipped, unparsable lines reported
as ``invalid JSON: ...``), shared with readers that apply their own checks (quote scoring).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from jsonschema import Draft202012Validator

SCHEMA_FILE = "mmdocrag.schema.json"
# Each candidate quote list and the kind of label its quotes carry.
QUOTE_LISTS: tuple[tuple[str, str], ...] = (("text_quotes", "text"), ("img_quotes", "image"))
_LABEL_RE = re.compile(r"^(text|image)[1-9][0-9]*$")


def load_schema() -> dict[str, Any]:
    """The MMDocRAG line schema as a dict (a fresh copy: callers may modify it)."""
    return json.loads(_schema_text())


@lru_cache(maxsize=1)
def _schema_text() -> str:
    return resources.files("schemas").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    schema = json.loads(_schema_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _path_key(path: str) -> list[tuple[int, int | str]]:
    """Sort key keeping ``[2]`` before ``[10]``."""
    key: list[tuple[int, int | str]] = []
    for part in path.replace("[", ".[").split("."):
        if part.startswith("[") and part.endswith("]") and part[1:-1].isdigit():
            key.append((0, int(part[1:-1])))
        elif part:
            key.append((1, part))
    return key


def _schema_errors(obj: Any) -> list[tuple[str, str]]:
    found = [(error.json_path, error.message) for error in _validator().iter_errors(obj)]
    return sorted(found, key=lambda pm: (_path_key(pm[0]), pm[1]))


def _semantic_errors(obj: dict[str, Any]) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    candidates: set[str] = set()
    for list_name, kind in QUOTE_LISTS:
        quotes = obj.get(list_name)
        if not isinstance(quotes, list):
            continue
        first_at: dict[str, int] = {}
        for i, quote in enumerate(quotes):
            quote_id = quote.get("quote_id") if isinstance(quote, dict) else None
            if not isinstance(quote_id, str):
                continue
            if quote_id in first_at:
                errors.append(
                    (
                        f"$.{list_name}[{i}].quote_id",
                        f"duplicate quote_id {quote_id!r} (first at $.{list_name}[{first_at[quote_id]}])",
                    )
                )
            else:
                first_at[quote_id] = i
        candidates.update(first_at)
        expected = [f"{kind}{n}" for n in range(1, len(quotes) + 1)]
        missing = [q for q in expected if q not in first_at]
        unexpected = [q for q in first_at if q not in set(expected)]
        if missing or unexpected:
            detail = []
            if missing:
                detail.append("missing " + ", ".join(missing))
            if unexpected:
                detail.append("unexpected " + ", ".join(repr(q) for q in unexpected))
            span = f"{kind}1..{kind}{len(quotes)}" if quotes else "none"
            errors.append(
                (f"$.{list_name}", f"quote_ids must be {span}, each exactly once: " + "; ".join(detail))
            )
    gold = obj.get("gold_quotes")
    if isinstance(gold, list):
        for i, label in enumerate(gold):
            # labels that break the pattern are already reported by the schema
            if isinstance(label, str) and _LABEL_RE.match(label) and label not in candidates:
                errors.append((f"$.gold_quotes[{i}]", f"gold label {label!r} is not among the candidate quote_ids"))
    return errors


def validate_line(obj: Any) -> list[str]:
    """Messages ``"<json path>: <problem>"`` for one parsed line; empty when valid."""
    found = _schema_errors(obj)
    if isinstance(obj, dict):
        found += _semantic_errors(obj)
    return [f"{path}: {message}" for path, message in found]


class JsonLine(NamedTuple):
    """One non-blank line of a JSONL file: its number (from 1), its parsed value or why it is not JSON."""

    lineno: int
    value: Any
    error: str | None


def iter_jsonl(path: str | Path) -> Iterator[JsonLine]:
    """Each non-blank line of a JSONL file, parsed; a line that is not JSON has ``error`` set and ``value`` None.

    ``error`` reads ``invalid JSON: <message> (column <n>)``; prefix it with ``file:line:``.
    """
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                yield JsonLine(lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            yield JsonLine(lineno, value, None)


def validate_jsonl(path: str | Path) -> list[str]:
    """Messages ``"<file>:<line>: <json path>: <problem>"`` for a whole JSONL file; empty when valid.

    Blank lines are skipped; a line that is not JSON is reported and skipped; ``q_id`` must be
    unique across the file.
    """
    path = Path(path)
    messages: list[str] = []
    seen_q_ids: dict[Any, int] = {}
    for lineno, obj, error in iter_jsonl(path):
        where = f"{path}:{lineno}"
        if error is not None:
            messages.append(f"{where}: {error}")
            continue
        messages.extend(f"{where}: {m}" for m in validate_line(obj))
        q_id = obj.get("q_id") if isinstance(obj, dict) else None
        if isinstance(q_id, int) and not isinstance(q_id, bool):
            if q_id in seen_q_ids:
                messages.append(f"{where}: $.q_id: duplicate q_id {q_id} (first on line {seen_q_ids[q_id]})")
            else:
                seen_q_ids[q_id] = lineno
    return messages
