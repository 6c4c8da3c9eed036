"""MMDocRAG quote selection: score a predictions JSONL file against a gold (MMDocRAG export) JSONL file.

Prediction lines: ``{"q_id": ..., "answer": "..."}`` (citations read with
:func:`tasks.evaluate.citations.extract_citations`) or ``{"q_id": ..., "selected": ["text1", "image2"]}``.
Gold lines: MMDocRAG export lines with ``q_id``, ``text_quotes``, ``img_quotes``, ``gold_quotes``.

JSON lines are read with :func:`schemas.mmdocrag.iter_jsonl` (blank lines skipped, unparsable
lines reported). Gold lines are checked only for what scoring needs (the quote lists are lists,
the gold labels are labels within the candidate counts), not against the full export schema
(:func:`schemas.mmdocrag.validate_jsonl` does that), so a gold file need not carry every export field.
Every problem in a file is collected and raised at once as :class:`ScoringInputError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragprep.errors import RagprepError
from schemas.mmdocrag import QUOTE_LISTS, iter_jsonl
from tasks.evaluate.citations import (
    LABEL_RE,
    extract_citations,
    label_sort_key,
    normalize_label,
)
from tasks.evaluate.scoring import CorpusScore, ItemScore, score_corpus, score_item

# "text" -> "text_quotes", "image" -> "img_quotes"
_QUOTE_LIST_OF_KIND = {kind: list_name for list_name, kind in QUOTE_LISTS}


class ScoringInputError(RagprepError, ValueError):
    """Malformed prediction or gold lines; ``errors`` holds one ``file:line: message`` each."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        shown = errors[:20]
        more = f"\n... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        super().__init__(f"{len(errors)} malformed input line(s):\n" + "\n".join(shown) + more)


@dataclass(frozen=True)
class ItemResult:
    """One gold item: the labels predicted and gold, its scores, and what was dropped from the answer."""

    q_id: int | str
    predicted: tuple[str, ...]
    gold: tuple[str, ...]
    score: ItemScore
    missing_prediction: bool = False
    ignored: tuple[str, ...] = ()


@dataclass(frozen=True)
class FilesScore:
    """Scores of a predictions file against a gold file.

    ``missing_predictions``: gold q_ids without a prediction line (scored as empty selections).
    ``unmatched_predictions``: prediction q_ids absent from the gold file (not scored).
    ``out_of_candidates``: per q_id, ``selected`` labels beyond the candidate set (scored as wrong).
    """

    corpus: CorpusScore
    items: tuple[ItemResult, ...]
    missing_predictions: tuple[int | str, ...]
    unmatched_predictions: tuple[int | str, ...]
    out_of_candidates: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: corpus averages and the q_id lists (not the per-item results)."""
        return {
            "corpus": self.corpus.as_dict(),
            "missing_predictions": list(self.missing_predictions),
            "unmatched_predictions": list(self.unmatched_predictions),
            "out_of_candidates": {k: list(v) for k, v in self.out_of_candidates.items()},
        }


@dataclass(frozen=True)
class _GoldItem:
    q_id: int | str
    n_text: int
    n_image: int
    gold: tuple[str, ...]


def _json_objects(path: Path, errors: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line holding a JSON object; other lines go to ``errors``."""
    for lineno, obj, error in iter_jsonl(path):
        if error is not None:
            errors.append(f"{path}:{lineno}: {error}")
        elif not isinstance(obj, dict):
            errors.append(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        else:
            yield lineno, obj


def _q_id(obj: dict[str, Any], where: str, errors: list[str]) -> int | str | None:
    if "q_id" not in obj:
        errors.append(f"{where}: missing 'q_id'")
        return None
    q_id = obj["q_id"]
    if isinstance(q_id, bool) or not isinstance(q_id, (int, str)):
        errors.append(f"{where}: 'q_id' must be an int or a string, got {q_id!r}")
        return None
    return q_id


def _first_occurrence(q_id: int | str, lineno: int, where: str, first_line: dict[str, int], errors: list[str]) -> bool:
    """True on the first line of a q_id (compared as a string, recorded in ``first_line``); a repeat goes to ``errors``."""
    key = str(q_id)
    if key in first_line:
        errors.append(f"{where}: duplicate q_id {q_id!r} (first on line {first_line[key]})")
        return False
    first_line[key] = lineno
    return True


def _gold_labels(obj: dict[str, Any], where: str, errors: list[str]) -> list[str]:
    """The valid ``gold_quotes`` labels of a gold line, normalized; bad ones go to ``errors``."""
    n_text, n_image = len(obj["text_quotes"]), len(obj["img_quotes"])
    gold: list[str] = []
    for i, raw in enumerate(obj["gold_quotes"]):
        try:
            label = normalize_label(raw)
        except (ValueError, TypeError):
            errors.append(f"{where}: gold_quotes[{i}] = {raw!r} is not a label like 'text1' or 'image2'")
            continue
        n = int(LABEL_RE.match(label).group(2))  # type: ignore[union-attr]
        kind = "text" if label.startswith("text") else "image"
        bound = n_text if kind == "text" else n_image
        if n > bound:
            errors.append(f"{where}: gold_quotes[{i}] = {raw!r} but {_QUOTE_LIST_OF_KIND[kind]} has only {bound} quote(s)")
            continue
        gold.append(label)
    return gold


def _read_gold(path: Path) -> dict[str, _GoldItem]:
    errors: list[str] = []
    items: dict[str, _GoldItem] = {}
    first_line: dict[str, int] = {}
    for lineno, obj in _json_objects(path, errors):
        where = f"{path}:{lineno}"
        q_id = _q_id(obj, where, errors)
        bad = False
        for key in ("text_quotes", "img_quotes", "gold_quotes"):
            if not isinstance(obj.get(key), list):
                errors.append(f"{where}: {key!r} must be a list" + ("" if key in obj else " (missing)"))
                bad = True
        if q_id is None or bad:
            continue
        gold = _gold_labels(obj, where, errors)
        if not _first_occurrence(q_id, lineno, where, first_line, errors):
            continue
        n_text, n_image = len(obj["text_quotes"]), len(obj["img_quotes"])
        items[str(q_id)] = _GoldItem(q_id, n_text, n_image, tuple(sorted(set(gold), key=label_sort_key)))
    if errors:
        raise ScoringInputError(errors)
    return items


def _prediction_error(obj: dict[str, Any]) -> str | None:
    """Why a prediction line is malformed (its ``answer`` / ``selected`` fields), or None."""
    has_answer, has_selected = "answer" in obj, "selected" in obj
    if has_answer == has_selected:
        return "expected exactly one of 'answer' (text) or 'selected' (list of labels)"
    if has_answer and not isinstance(obj["answer"], str):
        return f"'answer' must be a string, got {type(obj['answer']).__name__}"
    if has_selected:
        selected = obj["selected"]
        if not isinstance(selected, list):
            return f"'selected' must be a list of labels, got {type(selected).__name__}"
        bad = [x for x in selected if not (isinstance(x, str) and LABEL_RE.match(x.strip().lower()))]
        if bad:
            return f"'selected' holds non-labels {bad!r} (expected 'text1', 'image2', ...)"
    return None


def _read_predictions(path: Path) -> dict[str, tuple[int | str, dict[str, Any]]]:
    errors: list[str] = []
    preds: dict[str, tuple[int | str, dict[str, Any]]] = {}
    first_line: dict[str, int] = {}
    for lineno, obj in _json_objects(path, errors):
        where = f"{path}:{lineno}"
        q_id = _q_id(obj, where, errors)
        problem = _prediction_error(obj)
        if problem is not None:
            errors.append(f"{where}: {problem}")
            continue
        if q_id is not None and _first_occurrence(q_id, lineno, where, first_line, errors):
            preds[str(q_id)] = (q_id, obj)
    if errors:
        raise ScoringInputError(errors)
    return preds


def _predicted_labels(obj: dict[str, Any] | None, item: _GoldItem) -> tuple[set[str], tuple[str, ...], tuple[str, ...]]:
    """(predicted labels, references ignored in the answer, ``selected`` labels beyond the candidates)."""
    if obj is None:
        return set(), (), ()
    if "answer" in obj:
        cites = extract_citations(obj["answer"], item.n_text, item.n_image)
        return set(cites.labels), cites.ignored, ()
    predicted = {normalize_label(x) for x in obj["selected"]}
    beyond = sorted(
        (x for x in predicted if label_sort_key(x)[1] > (item.n_text if x.startswith("text") else item.n_image)),
        key=label_sort_key,
    )
    return predicted, (), tuple(beyond)


def score_files(predictions_path: str | Path, gold_path: str | Path) -> FilesScore:
    """Score a predictions JSONL against an MMDocRAG gold JSONL.

    Prediction lines: ``{"q_id": ..., "answer": "..."}`` (citations read with
    :func:`extract_citations`, bounded by the item's candidate counts) or
    ``{"q_id": ..., "selected": ["text1", "image2"]}``. Gold lines: MMDocRAG export lines with
    ``q_id``, ``text_quotes``, ``img_quotes``, ``gold_quotes``. q_ids match as strings (``12``
    and ``"12"`` are the same question). Gold items without a prediction score as empty
    selections and are listed in ``missing_predictions``. Malformed lines in either file raise
    :class:`ScoringInputError` naming every bad ``file:line``.
    """
    gold_items = _read_gold(Path(gold_path))
    preds = _read_predictions(Path(predictions_path))
    results: list[ItemResult] = []
    missing: list[int | str] = []
    out_of_candidates: dict[str, tuple[str, ...]] = {}
    for key, item in gold_items.items():
        obj = preds[key][1] if key in preds else None
        if obj is None:
            missing.append(item.q_id)
        predicted, ignored, beyond = _predicted_labels(obj, item)
        if beyond:
            out_of_candidates[key] = beyond
        results.append(
            ItemResult(
                q_id=item.q_id,
                predicted=tuple(sorted(predicted, key=label_sort_key)),
                gold=item.gold,
                score=score_item(predicted, item.gold),
                missing_prediction=obj is None,
                ignored=ignored,
            )
        )
    unmatched = tuple(q_id for key, (q_id, _) in preds.items() if key not in gold_items)
    return FilesScore(
        corpus=score_corpus(r.score for r in results),
        items=tuple(results),
        missing_predictions=tuple(missing),
        unmatched_predictions=unmatched,
        out_of_candidates=out_of_candidates,
    )
