"""The offline critic's auto-approval gate: which bands of pairs the judge may approve without review, chosen on
labelled pairs by their held-out verdicts (``tasks.qa.calibrate`` supplies those verdicts and nests the choice in a
document-grouped or family-grouped cross-validation).

A pair's own bands are its document kind, kind/question type and kind/generator rule (``judge.pair_bands``). A band
is *chosen* when the critic's held-out approvals in it reach ``TARGET_PRECISION`` on at least ``BAND_MIN_APPROVED``
pairs from ``BAND_MIN_DOCUMENTS`` documents with a Wilson lower bound of at least ``BAND_LOWER_BOUND``; measured on
that much evidence and under the precision it *fails* and vetoes its wider bands. The most specific measured band
decides (``judge.band_decides``).

A kind with three or four documents can never open a band of its own under leave-one-document-out (two or three are
left in each fold). *Cross-kind* bands (``judge.cross_kind_bands``: ``any/<generator rule>`` and
``any/<question type>``) carry the evidence of the other kinds to such a pair: a cross-kind band opens for kind K when,
on the pairs of the *other* kinds only, it meets the same thresholds, it holds (precision at least
``TARGET_PRECISION`` on at least ``CROSS_KIND_MIN_PAIRS`` pairs) in at least ``CROSS_MIN_KINDS`` other kinds, and no
other kind measured it on enough evidence (``BAND_MIN_APPROVED`` pairs, ``BAND_MIN_DOCUMENTS`` documents) under the
precision. It only decides a pair none of whose own bands is measured (chosen or failing); the rule's cross-kind band
before the question type's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tasks.qa.doc_kind import KINDS
from tasks.qa.judge import band_decides, cross_kind_bands, pair_bands

TARGET_PRECISION = 0.9
BAND_MIN_APPROVED = 8
"""A band is auto-approved only on evidence: at least this many held-out approved pairs ..."""
BAND_MIN_DOCUMENTS = 3
"""... from at least this many documents ..."""
BAND_LOWER_BOUND = 0.85
"""... and the one-sided 95% Wilson lower bound of its held-out precision at least this (besides the precision itself
reaching ``TARGET_PRECISION``): a band that reached 0.9 by the luck of a few pairs is not chosen. (Tried on the 511
labelled pairs of round 2: z 0.5 and 1.0 let bands in whose held-out precision fell to 0.71 and 0.86; 1.645 held.)"""
BAND_Z = 1.645
CROSS_MIN_KINDS = 2
"""A cross-kind band opens for a kind only when it holds in at least this many *other* kinds ..."""
CROSS_KIND_MIN_PAIRS = 3
"""... holding in a kind meaning at least this many held-out approved pairs there, at ``TARGET_PRECISION`` or more."""


@dataclass
class BandChoice:
    """The bands chosen and failing on some labelled pairs; ``cross``: per cross-kind band, the kinds it opens for;
    ``cross_failing``: per cross-kind band, the kinds for which the other kinds' evidence measured it under the bar."""

    chosen: list[str] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)
    cross: dict[str, list[str]] = field(default_factory=dict)
    cross_failing: dict[str, list[str]] = field(default_factory=dict)

    def decides(self, row: dict) -> str | None:
        """The band that auto-approves the pair ``row`` (``doc_kind``, ``question_type``, ``generator_rule``), or None."""
        kind = str(row.get("doc_kind") or "other")
        return band_decides(pair_bands(row), self.chosen, self.failing, cross_kind_bands(row),
                            [b for b, kinds in self.cross.items() if kind in kinds],
                            [b for b, kinds in self.cross_failing.items() if kind in kinds])


def wilson_lower(successes: int, trials: int, z: float = BAND_Z) -> float:
    """The Wilson score interval's lower bound of a proportion (0 with no trials)."""
    if not trials:
        return 0.0
    p = successes / trials
    centre = p + z * z / (2 * trials)
    spread = z * (p * (1 - p) / trials + z * z / (4 * trials * trials)) ** 0.5
    return (centre - spread) / (1 + z * z / trials)


def _figure(approved: int, usable: int, documents: Iterable[str]) -> dict:
    return {"approved": approved, "usable": usable, "precision": usable / approved if approved else 0.0,
            "lower_bound": wilson_lower(usable, approved), "documents": len(set(documents))}


def _tally(pairs: Iterable[tuple[str, object]]) -> dict[str, dict]:
    """Per band, the figures of the (band, item) pairs given."""
    out: dict[str, dict] = {}
    for band, item in pairs:
        got = out.setdefault(band, {"approved": 0, "usable": 0, "documents": []})
        got["approved"] += 1
        got["usable"] += item.usable
        got["documents"].append(item.doc)
    return {b: _figure(**g) for b, g in sorted(out.items())}


def band_figures(items: Sequence, verdicts: Sequence[bool]) -> dict[str, dict]:
    """Per own band, the held-out approved pairs, the usable ones among them, their precision and documents (pairs
    today's generator still asks: ``Labelled.current``)."""
    return _tally((band, i) for i, v in zip(items, verdicts) if v and i.current for band in pair_bands(i.row))


def cross_kind_figures(items: Sequence, verdicts: Sequence[bool]) -> dict[str, dict[str, dict]]:
    """Per cross-kind band, per kind, the held-out approved pairs of that kind in it (as ``band_figures``)."""
    by_kind: dict[str, list] = defaultdict(list)
    for item, verdict in zip(items, verdicts):
        if verdict and item.current:
            for band in cross_kind_bands(item.row):
                by_kind[band].append(item)
    return {band: {kind: g for kind, g in _tally((str(i.row.get("doc_kind") or "other"), i) for i in members).items()}
            for band, members in sorted(by_kind.items())}


def _meets(g: dict) -> bool:
    return (g["approved"] >= BAND_MIN_APPROVED and g["documents"] >= BAND_MIN_DOCUMENTS
            and g["precision"] >= TARGET_PRECISION and g["lower_bound"] >= BAND_LOWER_BOUND)


def _measured_under(g: dict) -> bool:
    return g["approved"] >= BAND_MIN_APPROVED and g["documents"] >= BAND_MIN_DOCUMENTS and g["precision"] < TARGET_PRECISION


def chosen_bands(figures: dict[str, dict]) -> list[str]:
    """The bands whose held-out precision reaches ``TARGET_PRECISION`` on enough pairs and documents, with its
    lower bound at least ``BAND_LOWER_BOUND``."""
    return [b for b, g in figures.items() if _meets(g)]


def failing_bands(figures: dict[str, dict]) -> list[str]:
    """The bands measured on enough pairs and documents whose held-out precision is under ``TARGET_PRECISION``: they
    veto their wider band. A band that reaches the precision but not the lower bound lacks evidence, and does not."""
    return [b for b, g in figures.items() if _measured_under(g)]


def pooled_other_kinds(per_kind: dict[str, dict], kind: str) -> dict:
    """A cross-kind band's figures pooled over every kind but ``kind`` (documents summed: a document has one kind)."""
    others = [g for k, g in per_kind.items() if k != kind]
    approved, usable = sum(g["approved"] for g in others), sum(g["usable"] for g in others)
    return {"approved": approved, "usable": usable, "precision": usable / approved if approved else 0.0,
            "lower_bound": wilson_lower(usable, approved), "documents": sum(g["documents"] for g in others),
            "kinds_holding": sorted(k for k, g in per_kind.items() if k != kind and g["approved"] >= CROSS_KIND_MIN_PAIRS
                                    and g["precision"] >= TARGET_PRECISION)}


def cross_kind_choice(figures: dict[str, dict[str, dict]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(per cross-kind band, the kinds it opens for; per cross-kind band, the kinds it fails for) (module docstring)."""
    opens: dict[str, list[str]] = {}
    fails: dict[str, list[str]] = {}
    for band, per_kind in figures.items():
        for kind in KINDS:
            pooled = pooled_other_kinds(per_kind, kind)
            split = any(_measured_under(g) for k, g in per_kind.items() if k != kind)
            if _meets(pooled) and len(pooled["kinds_holding"]) >= CROSS_MIN_KINDS and not split:
                opens.setdefault(band, []).append(kind)
            elif _measured_under(pooled) or split:
                fails.setdefault(band, []).append(kind)
    return opens, fails


def band_choice(items: Sequence, verdicts: Sequence[bool], cross_kind: bool = True) -> BandChoice:
    """The bands chosen and failing on ``items`` by their held-out ``verdicts`` (and the cross-kind bands, unless
    ``cross_kind`` is False)."""
    figures = band_figures(items, verdicts)
    cross, cross_failing = cross_kind_choice(cross_kind_figures(items, verdicts)) if cross_kind else ({}, {})
    return BandChoice(chosen_bands(figures), failing_bands(figures), cross, cross_failing)


def by_band(deciding: dict[int, str], items: Sequence) -> dict[str, dict]:
    """Per deciding band, the held-out pairs it auto-approved: approved, usable and documents."""
    out: dict[str, dict] = {}
    for n, band in sorted(deciding.items()):
        got = out.setdefault(band, {"approved": 0, "usable": 0, "documents": set()})
        got["approved"] += 1
        got["usable"] += items[n].usable
        got["documents"].add(items[n].doc)
    return {b: {**g, "documents": len(g["documents"])} for b, g in sorted(out.items())}
