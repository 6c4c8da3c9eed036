"""MMDocRAG quote selection: score cited labels against the gold labels.

Selection is scored per item by precision / recall / F1 of the cited label set against the gold
label set, per modality (``text``, ``image``) and over both (``all``), then averaged over a corpus
(micro and macro). Cited labels come from :func:`tasks.evaluate.citations.extract_citations`.

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

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from tasks.evaluate.citations import Citations, normalize_label

Modality = Literal["text", "image"]
ScoreName = Literal["text", "image", "all"]
MODALITIES: tuple[Modality, ...] = ("text", "image")


@dataclass(frozen=True)
class ModalityScore:
    """One modality of one item: counts, and precision / recall / f1 under the module's conventions."""

    n_predicted: int
    n_gold: int
    n_correct: int

    @property
    def scored(self) -> bool:
        """False when nothing was predicted and nothing is gold: the modality is not scored."""
        return self.n_predicted > 0 or self.n_gold > 0

    @property
    def precision(self) -> float | None:
        """Correct / predicted (0.0 when nothing predicted); None when not scored."""
        if not self.scored:
            return None
        return self.n_correct / self.n_predicted if self.n_predicted else 0.0

    @property
    def recall(self) -> float | None:
        """Correct / gold (0.0 when nothing is gold); None when not scored."""
        if not self.scored:
            return None
        return self.n_correct / self.n_gold if self.n_gold else 0.0

    @property
    def f1(self) -> float | None:
        """2 * correct / (predicted + gold); None when not scored."""
        if not self.scored:
            return None
        return 2 * self.n_correct / (self.n_predicted + self.n_gold)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields above."""
        return {
            "n_predicted": self.n_predicted,
            "n_gold": self.n_gold,
            "n_correct": self.n_correct,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


SCORE_NAMES: tuple[ScoreName, ...] = ("text", "image", "all")


class _PerModality:
    """A result with one member per modality name (``text``, ``image``, ``all``), readable by name."""

    def __getitem__(self, name: ScoreName) -> Any:
        """The member named ``text``, ``image`` or ``all``; KeyError otherwise."""
        if name not in SCORE_NAMES:
            raise KeyError(name)
        return getattr(self, name)


def _modalities_dict(scores: Any) -> dict[str, Any]:
    return {name: getattr(scores, name).as_dict() for name in SCORE_NAMES}


@dataclass(frozen=True)
class ItemScore(_PerModality):
    """One item's scores: per modality and over both (``all``)."""

    text: ModalityScore
    image: ModalityScore
    all: ModalityScore

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields above."""
        return _modalities_dict(self)


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
    """Precision, recall and f1; None where there is nothing to average."""

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
        """A JSON-ready dict of the fields above."""
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
class CorpusScore(_PerModality):
    """Corpus averages per modality and over both (``all``)."""

    n_items: int
    text: ModalityAverages
    image: ModalityAverages
    all: ModalityAverages

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields above."""
        return {"n_items": self.n_items, **_modalities_dict(self)}


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
