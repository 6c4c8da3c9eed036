"""MMDocRAG quote selection: read the quotes an answer cites, score them against the gold quotes.

Each question comes with candidate quotes labelled ``text1..textN`` and ``image1..imageM``.
An answer cites text quotes as ``[n]`` (``[3]`` is ``text3``) and image quotes as Markdown
images ``![](imageN)``. Selection is scored per item by precision / recall / F1 of the cited
label set against the gold label set, per modality (``text``, ``image``) and over both
(``all``), then averaged over a corpus (micro and macro).

Citation pitfalls, and what :func:`extract_citations` decides for each (all matching is
case-insensitive, labels come out lower-case):

1. **Numbers that are not quote numbers.** ``[0]`` is never a quote (numbering starts at 1).
   With ``n_text`` given, ``[n]`` counts only for ``1 <= n <= n_text``; without it, only for
   ``n <= 99`` (``MAX_UNBOUNDED_QUOTE_NUMBER``; MMDocRAG sets hold at most 20 quotes), so a
   year such as ``[2020]`` is dropped either way. The same bounds apply to image numbers with
   ``n_image``. Dropped numbers are listed in ``Citations.ignored``.
2. **Brackets that are not citation lists.** A bracket group counts only when *every* item in
   it parses as a quote reference; ``[12.5]``, ``[see 3]``, ``[2020, p. 4]``, ``[]`` cite nothing.
3. **Lists.** Items separated by commas or semicolons each count: ``[1, 3]`` is text1 and
   text3; ``[image1, text2]`` mixes modalities. Known limit: a decimal comma ``[12,5]`` reads
   as the list 12, 5 (12 is then dropped if out of range, 5 kept).
4. **Ranges.** ``[1-3]`` (hyphen, en or em dash) expands to 1, 2, 3 only when both ends are
   valid numbers and start <= end; otherwise the whole range is dropped (``[1-2020]``,
   ``[3-1]``), since a half-valid range is more likely a span of years or pages.
   ``[image1-3]`` and ``[image1-image3]`` expand too; mixing kinds (``[text1-image3]``) does not
   expand (its two ends still count as bare labels, rule 10).
5. **Adjacent groups.** ``[1][2]`` is two citations, text1 and text2.
6. **Images cited the wrong way.** ``[image1]``, ``[Image 1]``, ``(image1)``, ``(Image 1)`` and a
   link without the ``!`` (``[see](image1)``) all count as image1: models do this. Bare numbers
   in parentheses never count: ``(1)`` is far more often an enumeration than a citation.
7. **Multi-digit labels.** ``![](image12)`` is image12, never image1; digits are read greedily
   and a label must end at a non-alphanumeric character.
8. **Markdown that is not a citation.** A link ``[text](url)`` cites nothing (``[3](http://x)``
   included): its brackets are link text. A footnote ``[^1]`` cites nothing. Anything inside
   an image ``![...](...)`` is not read again: ``![see [3]](image2)`` cites image2 only, and an
   image whose target is not a label (``![](chart.png)``) cites nothing. The image target must
   be the label itself (``<image2>`` and a ``"title"`` allowed; ``image2.png`` is not a label).
9. **Code spans are not special.** ``[2]`` inside backticks counts like any other ``[2]``.
10. **Bare labels.** A label written as one word, ``text3`` or ``image2`` (ASCII letters/digits
    must not touch it, so ``image2에서`` counts but ``image2a`` and ``my_text3`` do not), counts:
    these tokens only exist because the prompt used them, so a model writing "as text3 says"
    is citing text3. With a space (``text 3``, ``Image 2``) it counts only inside brackets or
    parentheses, since "image 2" in prose may be the document's own figure numbering.

Scoring conventions (:func:`score_item`), per modality, with P the predicted and G the gold set:

- both empty: the modality is **not scored** (precision, recall, f1 are ``None``); it is left
  out of that modality's macro average and counted in ``n_unscored``.
- P empty, G not: precision 0.0, recall 0.0, f1 0.0 (nothing found).
- P not empty, G empty: precision 0.0, recall 0.0, f1 0.0 (everything cited is wrong).
- otherwise the usual ratios, f1 = 0.0 when precision + recall = 0.
  In every scored case f1 == 2|P∩G| / (|P| + |G|).

Micro averages pool the counts over items and apply the same conventions; macro averages are
the mean of per-item precision, recall and f1 over scored items (macro f1 is not the harmonic
mean of macro precision and recall).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Modality = Literal["text", "image"]
ScoreName = Literal["text", "image", "all"]
MODALITIES: tuple[Modality, ...] = ("text", "image")
MAX_UNBOUNDED_QUOTE_NUMBER = 99

LABEL_RE = re.compile(r"^(text|image)([1-9][0-9]*)$")

# A Markdown image; its alt text may hold one level of nested brackets.
_IMAGE_MD_RE = re.compile(r"!\[(?:[^\[\]]|\[[^\[\]]*\])*\]\((?P<target>[^()]*)\)")
# A Markdown inline link (no space between "]" and "(").
_LINK_MD_RE = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\((?P<target>[^()]*)\)")
_IMAGE_TARGET_RE = re.compile(
    r"\s*<?\s*image\s*(?P<n>\d+)\s*>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*", re.IGNORECASE
)
_BRACKET_GROUP_RE = re.compile(r"\[(?P<body>[^\[\]]*)\]")
_PAREN_GROUP_RE = re.compile(r"\((?P<body>[^()]*)\)")
_ITEM_RE = re.compile(
    r"(?:(?P<k1>text|image)\s*)?(?P<a>\d+)(?:\s*[-\u2013\u2014]\s*(?:(?P<k2>text|image)\s*)?(?P<b>\d+))?",
    re.IGNORECASE,
)
_BARE_LABEL_RE = re.compile(r"(?<![A-Za-z0-9_])(?P<k>text|image)(?P<n>\d+)(?![A-Za-z0-9_])", re.IGNORECASE)


def label_sort_key(label: str) -> tuple[int, int]:
    """text labels before image labels, each by number (text2 < text10)."""
    m = LABEL_RE.match(label)
    if m is None:
        raise ValueError(f"not a quote label: {label!r} (expected textN or imageN, N >= 1)")
    return (0 if m.group(1) == "text" else 1, int(m.group(2)))


def normalize_label(label: str) -> str:
    """``" Image3 "`` -> ``"image3"``; ValueError for a string that is not a label, TypeError for a non-string."""
    if not isinstance(label, str):
        raise TypeError(f"not a quote label: {label!r} (expected a string)")
    norm = label.strip().lower()
    label_sort_key(norm)
    return norm


@dataclass(frozen=True)
class Citations:
    """Quote labels an answer cites, sorted by number; ``ignored`` holds the quote-like
    references dropped as out of range (``"2020"``, ``"0"``, ``"image9"``, ``"1-2020"``), as
    written but lower-cased, in order of appearance."""

    text: tuple[str, ...] = ()
    image: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    @property
    def labels(self) -> frozenset[str]:
        return frozenset(self.text) | frozenset(self.image)


class _Collector:
    def __init__(self, n_text: int | None, n_image: int | None) -> None:
        self.bounds = {
            "text": MAX_UNBOUNDED_QUOTE_NUMBER if n_text is None else n_text,
            "image": MAX_UNBOUNDED_QUOTE_NUMBER if n_image is None else n_image,
        }
        self.found: set[tuple[str, int]] = set()
        self.ignored: list[tuple[int, str]] = []  # (offset in the answer, as written)

    def valid(self, kind: str, n: int) -> bool:
        return 1 <= n <= self.bounds[kind]

    def add(self, kind: str, n: int, as_written: str, pos: int) -> None:
        if self.valid(kind, n):
            self.found.add((kind, n))
        else:
            self.ignored.append((pos, as_written))

    def add_group(self, body: str, pos: int, *, require_kind: bool) -> None:
        """A bracket or parenthesis body: all items parse, or the group cites nothing."""
        pieces = [p.strip() for p in re.split(r"[,;]", body)]
        pieces = [p for p in pieces if p]
        if not pieces:
            return
        parsed: list[tuple[str, int, int | None, str]] = []
        for piece in pieces:
            m = _ITEM_RE.fullmatch(piece)
            if m is None:
                return
            k1, k2 = m.group("k1"), m.group("k2")
            if require_kind and k1 is None:
                return
            if k2 is not None and (k1 is None or k1.lower() != k2.lower()):
                return
            kind = (k1 or "text").lower()
            b = m.group("b")
            parsed.append((kind, int(m.group("a")), None if b is None else int(b), piece))
        for kind, a, b, piece in parsed:
            if b is None:
                self.add(kind, a, piece, pos)
            elif a <= b and self.valid(kind, a) and self.valid(kind, b):
                self.found.update((kind, n) for n in range(a, b + 1))
            else:
                self.ignored.append((pos, piece))

    def result(self) -> Citations:
        ordered = sorted(self.found, key=lambda kn: (kn[0] != "text", kn[1]))
        return Citations(
            text=tuple(f"text{n}" for k, n in ordered if k == "text"),
            image=tuple(f"image{n}" for k, n in ordered if k == "image"),
            # in order of appearance; "[image9]" is seen as a group and as a bare label: once
            ignored=tuple(dict.fromkeys(written.lower() for _, written in sorted(self.ignored))),
        )


def extract_citations(answer: str, n_text: int | None = None, n_image: int | None = None) -> Citations:
    """The text and image quotes ``answer`` cites (see the module docstring for every rule).

    ``n_text`` / ``n_image`` are the sizes of the candidate sets; numbers beyond them are ignored.
    """
    for name, bound in (("n_text", n_text), ("n_image", n_image)):
        if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool) or bound < 0):
            raise ValueError(f"{name} must be a non-negative int or None, got {bound!r}")
    found = _Collector(n_text, n_image)

    def blank(match: re.Match[str]) -> str:
        return " " * len(match.group(0))

    def image_md(match: re.Match[str]) -> str:
        target = _IMAGE_TARGET_RE.fullmatch(match.group("target"))
        if target is not None:
            found.add("image", int(target.group("n")), f"image{target.group('n')}", match.start())
        return blank(match)

    def link_md(match: re.Match[str]) -> str:
        target = _IMAGE_TARGET_RE.fullmatch(match.group("target"))
        if target is not None:  # an image cited as a link, the "!" forgotten
            found.add("image", int(target.group("n")), f"image{target.group('n')}", match.start())
        return blank(match)

    rest = _IMAGE_MD_RE.sub(image_md, answer)
    rest = _LINK_MD_RE.sub(link_md, rest)
    for m in _BRACKET_GROUP_RE.finditer(rest):
        found.add_group(m.group("body"), m.start(), require_kind=False)
    for m in _PAREN_GROUP_RE.finditer(rest):
        found.add_group(m.group("body"), m.start(), require_kind=True)
    for m in _BARE_LABEL_RE.finditer(rest):
        found.add(m.group("k").lower(), int(m.group("n")), m.group(0).lower(), m.start())
    return found.result()


@dataclass(frozen=True)
class ModalityScore:
    """One modality of one item: counts, and precision / recall / f1 under the module's conventions."""

    n_predicted: int
    n_gold: int
    n_correct: int

    @property
    def scored(self) -> bool:
        return self.n_predicted > 0 or self.n_gold > 0

    @property
    def precision(self) -> float | None:
        if not self.scored:
            return None
        return self.n_correct / self.n_predicted if self.n_predicted else 0.0

    @property
    def recall(self) -> float | None:
        if not self.scored:
            return None
        return self.n_correct / self.n_gold if self.n_gold else 0.0

    @property
    def f1(self) -> float | None:
        if not self.scored:
            return None
        return 2 * self.n_correct / (self.n_predicted + self.n_gold)

    def as_dict(self) -> dict[str, Any]:
        return {
            "n_predicted": self.n_predicted,
            "n_gold": self.n_gold,
            "n_correct": self.n_correct,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


@dataclass(frozen=True)
class ItemScore:
    text: ModalityScore
    image: ModalityScore
    all: ModalityScore

    def __getitem__(self, name: ScoreName) -> ModalityScore:
        if name not in ("text", "image", "all"):
            raise KeyError(name)
        return getattr(self, name)

    def as_dict(self) -> dict[str, Any]:
        return {name: self[name].as_dict() for name in ("text", "image", "all")}


def _modality_of(label: str) -> Modality:
    return "text" if label.startswith("text") else "image"


def _compare(predicted: set[str], gold: set[str]) -> ModalityScore:
    return ModalityScore(n_predicted=len(predicted), n_gold=len(gold), n_correct=len(predicted & gold))


def score_item(predicted: Citations | Collection[str], gold: Iterable[str]) -> ItemScore:
    """Precision / recall / f1 of the predicted labels against the gold labels.

    Labels are normalized (case, surrounding spaces) and duplicates collapse; a string that
    is not a label (``"text0"``, ``"fig1"``) raises ValueError. A bare ``str`` is rejected as
    ``predicted`` (it would be read as a set of characters): pass ``extract_citations(answer)``.
    """
    if isinstance(predicted, str):
        raise TypeError("predicted must be Citations or a collection of labels, not a str; use extract_citations()")
    if isinstance(gold, str):
        raise TypeError("gold must be a collection of labels, not a str")
    pred_labels = set(predicted.labels) if isinstance(predicted, Citations) else {normalize_label(x) for x in predicted}
    gold_labels = {normalize_label(x) for x in gold}
    by_modality = {
        m: _compare({x for x in pred_labels if _modality_of(x) == m}, {x for x in gold_labels if _modality_of(x) == m})
        for m in MODALITIES
    }
    return ItemScore(text=by_modality["text"], image=by_modality["image"], all=_compare(pred_labels, gold_labels))


@dataclass(frozen=True)
class PRF:
    precision: float | None
    recall: float | None
    f1: float | None


@dataclass(frozen=True)
class ModalityAverages:
    """One modality over a corpus: pooled counts, micro and macro averages."""

    n_items: int
    n_scored: int
    n_unscored: int
    n_predicted: int
    n_gold: int
    n_correct: int
    micro: PRF
    macro: PRF

    def as_dict(self) -> dict[str, Any]:
        return {
            "n_items": self.n_items,
            "n_scored": self.n_scored,
            "n_unscored": self.n_unscored,
            "n_predicted": self.n_predicted,
            "n_gold": self.n_gold,
            "n_correct": self.n_correct,
            "micro": vars(self.micro).copy(),
            "macro": vars(self.macro).copy(),
        }


@dataclass(frozen=True)
class CorpusScore:
    n_items: int
    text: ModalityAverages
    image: ModalityAverages
    all: ModalityAverages

    def __getitem__(self, name: ScoreName) -> ModalityAverages:
        if name not in ("text", "image", "all"):
            raise KeyError(name)
        return getattr(self, name)

    def as_dict(self) -> dict[str, Any]:
        return {"n_items": self.n_items, **{name: self[name].as_dict() for name in ("text", "image", "all")}}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _averages(scores: list[ModalityScore]) -> ModalityAverages:
    scored = [s for s in scores if s.scored]
    pooled = ModalityScore(
        n_predicted=sum(s.n_predicted for s in scores),
        n_gold=sum(s.n_gold for s in scores),
        n_correct=sum(s.n_correct for s in scores),
    )
    return ModalityAverages(
        n_items=len(scores),
        n_scored=len(scored),
        n_unscored=len(scores) - len(scored),
        n_predicted=pooled.n_predicted,
        n_gold=pooled.n_gold,
        n_correct=pooled.n_correct,
        micro=PRF(pooled.precision, pooled.recall, pooled.f1),
        macro=PRF(
            _mean([s.precision for s in scored]),  # type: ignore[misc]
            _mean([s.recall for s in scored]),  # type: ignore[misc]
            _mean([s.f1 for s in scored]),  # type: ignore[misc]
        ),
    )


def score_corpus(items: Iterable[ItemScore]) -> CorpusScore:
    """Micro and macro averages per modality and overall; an empty corpus gives ``None`` averages."""
    items = list(items)
    return CorpusScore(
        n_items=len(items),
        text=_averages([i.text for i in items]),
        image=_averages([i.image for i in items]),
        all=_averages([i.all for i in items]),
    )


class ScoringInputError(ValueError):
    """Malformed prediction or gold lines; ``errors`` holds one ``file:line: message`` each."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        shown = errors[:20]
        more = f"\n... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        super().__init__(f"{len(errors)} malformed input line(s):\n" + "\n".join(shown) + more)


@dataclass(frozen=True)
class ItemResult:
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


def _json_lines(path: Path, errors: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{path}:{lineno}: invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            if not isinstance(obj, dict):
                errors.append(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
                continue
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


def _read_gold(path: Path) -> dict[str, _GoldItem]:
    errors: list[str] = []
    items: dict[str, _GoldItem] = {}
    first_line: dict[str, int] = {}
    for lineno, obj in _json_lines(path, errors):
        where = f"{path}:{lineno}"
        q_id = _q_id(obj, where, errors)
        bad = False
        for key in ("text_quotes", "img_quotes", "gold_quotes"):
            if not isinstance(obj.get(key), list):
                errors.append(f"{where}: {key!r} must be a list" + ("" if key in obj else " (missing)"))
                bad = True
        if q_id is None or bad:
            continue
        n_text, n_image = len(obj["text_quotes"]), len(obj["img_quotes"])
        gold: list[str] = []
        for i, raw in enumerate(obj["gold_quotes"]):
            try:
                label = normalize_label(raw)
            except (ValueError, TypeError):
                errors.append(f"{where}: gold_quotes[{i}] = {raw!r} is not a label like 'text1' or 'image2'")
                continue
            n = int(LABEL_RE.match(label).group(2))  # type: ignore[union-attr]
            bound = n_text if label.startswith("text") else n_image
            if n > bound:
                kind = "text_quotes" if label.startswith("text") else "img_quotes"
                errors.append(f"{where}: gold_quotes[{i}] = {raw!r} but {kind} has only {bound} quote(s)")
                continue
            gold.append(label)
        key = str(q_id)
        if key in first_line:
            errors.append(f"{where}: duplicate q_id {q_id!r} (first on line {first_line[key]})")
            continue
        first_line[key] = lineno
        items[key] = _GoldItem(q_id, n_text, n_image, tuple(sorted(set(gold), key=label_sort_key)))
    if errors:
        raise ScoringInputError(errors)
    return items


def _read_predictions(path: Path) -> dict[str, tuple[int | str, dict[str, Any]]]:
    errors: list[str] = []
    preds: dict[str, tuple[int | str, dict[str, Any]]] = {}
    first_line: dict[str, int] = {}
    for lineno, obj in _json_lines(path, errors):
        where = f"{path}:{lineno}"
        q_id = _q_id(obj, where, errors)
        has_answer, has_selected = "answer" in obj, "selected" in obj
        if has_answer == has_selected:
            errors.append(f"{where}: expected exactly one of 'answer' (text) or 'selected' (list of labels)")
            continue
        if has_answer and not isinstance(obj["answer"], str):
            errors.append(f"{where}: 'answer' must be a string, got {type(obj['answer']).__name__}")
            continue
        if has_selected:
            selected = obj["selected"]
            if not isinstance(selected, list):
                errors.append(f"{where}: 'selected' must be a list of labels, got {type(selected).__name__}")
                continue
            bad = [x for x in selected if not (isinstance(x, str) and LABEL_RE.match(x.strip().lower()))]
            if bad:
                errors.append(f"{where}: 'selected' holds non-labels {bad!r} (expected 'text1', 'image2', ...)")
                continue
        if q_id is None:
            continue
        key = str(q_id)
        if key in first_line:
            errors.append(f"{where}: duplicate q_id {q_id!r} (first on line {first_line[key]})")
            continue
        first_line[key] = lineno
        preds[key] = (q_id, obj)
    if errors:
        raise ScoringInputError(errors)
    return preds


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
        ignored: tuple[str, ...] = ()
        if key not in preds:
            missing.append(item.q_id)
            predicted: set[str] = set()
        else:
            obj = preds[key][1]
            if "answer" in obj:
                cites = extract_citations(obj["answer"], item.n_text, item.n_image)
                predicted, ignored = set(cites.labels), cites.ignored
            else:
                predicted = {normalize_label(x) for x in obj["selected"]}
                beyond = sorted(
                    (x for x in predicted if label_sort_key(x)[1] > (item.n_text if x.startswith("text") else item.n_image)),
                    key=label_sort_key,
                )
                if beyond:
                    out_of_candidates[key] = tuple(beyond)
        results.append(
            ItemResult(
                q_id=item.q_id,
                predicted=tuple(sorted(predicted, key=label_sort_key)),
                gold=item.gold,
                score=score_item(predicted, item.gold),
                missing_prediction=key not in preds,
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
