"""``ragprep evaluate --queries FILE``: answer-in-hit retrieval scores on hand-written questions.

A query file is JSONL, one question a line: ``{"id", "question", "lang": "en"|"ko", "family", "document"
(file name), "page" | "slide", "answer_keys": [short strings the answer passage contains]}`` (see
``tests/data/README.md``). A hit **answers** a question when it comes from the question's document and
holds every answer key (compared after NFKC, lower-casing and removing whitespace). Per language:

* ``answer@1`` — the first hit answers; ``answer@10`` — one of the first ten does;
* ``MRR@10`` — mean of 1 / rank of the first answering hit (0 past ten);
* ``median chars of hit 1`` — how much a reader has to read.

Scored in one run, with the same embedder and BM25 tokenizer: the product's index (the passages of
``ragprep index``, each hit's text grown with its chunk neighbours to ``index.expand_chars`` as ``search`` shows it;
hybrid as configured, BM25, dense; queries encoded as ``search`` encodes them, through the
published query adapter when there is one, and then also with the vanilla embedder) and two baselines read from the source files
(``tasks/evaluate/baselines.py``: one unit per page/slide, 400-word windows with 50 overlap), scored
with BM25 and, when ``evaluate.dense_baselines`` is on, dense and hybrid too.
``tune_fusion`` chooses the hybrid's RRF constant and BM25 weight per language on the query set and
reports it leave-one-family-out (or leave-one-document-out for a language with a single family).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from ragprep.report import Report
from ragprep.retrieval import Fusion, rerank_by_sentences, rrf_fuse, sentence_match
from tasks.evaluate.baselines import Unit
from tasks.index.queryfile import Query, QueryFileError, answers, load_queries  # noqa: F401 (QueryFileError: re-exported)

K = 10
DEPTH = 100
"""Candidates taken from each of the dense and BM25 rankings before fusion."""
RRF_KS = (2, 5, 10, 20, 40, 60, 100)
BM25_WEIGHTS = (0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
SENTENCE_WEIGHTS = (0.0, 0.25, 0.5, 1.0)


@dataclass(frozen=True)
class Rankings:
    """Per query, the dense and the BM25 ranking (unit ids, best first) of one system's units."""

    name: str
    units: dict[str, Unit]
    dense: list[list[str]] | None
    bm25: list[list[str]]
    questions: list[str] | None = None
    idf: Callable[[str], float] | None = None
    matches: dict = field(default_factory=dict)
    match_texts: dict[str, str] | None = None
    """What the sentence match reads per unit when it is not the unit's text (the passage, where the unit shows it
    grown with its neighbours, as ``search`` does)."""

    def fused(self, row: int, fusion: Fusion) -> list[str]:
        """Question ``row``'s hybrid ranking: weighted RRF, then the sentence match when ``fusion`` has one."""
        fused = rrf_fuse([self.dense[row], self.bm25[row]], fusion.rrf_k, [1.0, fusion.bm25_weight])
        if fusion.sentence_weight > 0 and self.idf is not None and self.questions is not None:
            fused = rerank_by_sentences(fused, lambda u: self._match(row, u), fusion.sentence_weight)
        return [u for u, _ in fused]

    def _match(self, row: int, unit_id: str) -> float:
        key = (row, unit_id)
        if key not in self.matches:
            text = self.match_texts.get(unit_id) if self.match_texts else None
            self.matches[key] = sentence_match(self.questions[row], text or self.units[unit_id].text, self.idf)
        return self.matches[key]

    def ranked(self, mode: str, fusion: Fusion | None = None) -> list[list[str]]:
        """Each query's ranking in ``mode`` (hybrid fused by ``fusion``, default plain RRF k=60)."""
        if mode == "bm25":
            return self.bm25
        if self.dense is None:
            raise ValueError(f"{self.name}: no dense rankings")
        if mode == "dense":
            return self.dense
        return [self.fused(row, fusion or Fusion()) for row in range(len(self.dense))]


def first_answer(query: Query, ranking: Sequence[str], units: dict[str, Unit], k: int = K) -> int | None:
    """1-based rank of the first of the top ``k`` that answers ``query``; None when none does."""
    for rank, unit_id in enumerate(ranking[:k], start=1):
        unit = units[unit_id]
        if answers(query, unit.document, unit.text):
            return rank
    return None


class Scores(BaseModel):
    """Answer-in-hit scores of one system and mode on one language's questions."""

    system: str
    mode: str
    lang: str
    questions: int
    answer_at_1: float
    answer_at_10: float
    mrr_at_10: float
    median_chars_hit1: float


def score(system: str, mode: str, lang: str, queries: Sequence[Query], rankings: Sequence[Sequence[str]],
          units: dict[str, Unit]) -> Scores:
    """Scores of ``rankings`` (one per query, same order) for ``queries``."""
    ranks = [first_answer(q, r, units) for q, r in zip(queries, rankings)]
    chars = [len(units[r[0]].text) for r in rankings if r]
    n = max(1, len(queries))
    return Scores(
        system=system, mode=mode, lang=lang, questions=len(queries),
        answer_at_1=round(sum(r == 1 for r in ranks) / n, 3), answer_at_10=round(sum(r is not None for r in ranks) / n, 3),
        mrr_at_10=round(sum(1 / r for r in ranks if r) / n, 3),
        median_chars_hit1=float(statistics.median(chars)) if chars else 0.0,
    )


def _mrr(queries: Sequence[Query], rankings: Sequence[Sequence[str]], units: dict[str, Unit]) -> tuple[float, float]:
    ranks = [first_answer(q, r, units) for q, r in zip(queries, rankings)]
    n = max(1, len(ranks))
    return sum(1 / r for r in ranks if r) / n, sum(r == 1 for r in ranks) / n


def best_fusion(queries: Sequence[Query], rankings: Rankings, rows: Sequence[int]) -> Fusion:
    """The (rrf_k, bm25_weight, sentence_weight) of the grid with the best MRR@10 (then answer@1) on ``rows``.

    Of equally good ones, the nearest to plain RRF (k=60, weight 1) wins."""
    chosen, best = Fusion(), (-1.0, -1.0)
    subset = [queries[i] for i in rows]
    grid = sorted(((k, w, t) for k in RRF_KS for w in BM25_WEIGHTS for t in SENTENCE_WEIGHTS),
                  key=lambda kwt: (abs(math.log(kwt[0] / 60)) + abs(math.log(kwt[1])) + kwt[2], kwt))  # ties: plain RRF
    for rrf_k, weight, sentence in grid:
        fusion = Fusion(rrf_k, weight, sentence)
        value = _mrr(subset, [rankings.fused(i, fusion) for i in rows], rankings.units)
        if value > best:
            chosen, best = fusion, value
    return chosen


class Tuning(BaseModel):
    """The fusion chosen on all of a language's questions and its held-out (leave-one-group-out) scores."""

    lang: str
    group_by: str
    rrf_k: int
    bm25_weight: float
    sentence_weight: float
    held_out: Scores
    per_group: dict[str, str]


def tune_fusion(queries: Sequence[Query], rankings: Rankings, lang: str) -> Tuning:
    """Choose the hybrid fusion for ``lang`` and score it leave-one-family-out (one document out with one family)."""
    rows = [i for i, q in enumerate(queries) if q.lang == lang]
    families = {queries[i].family for i in rows}
    group_by = "family" if len(families) > 1 else "document"
    group: Callable[[Query], str] = (lambda q: q.family) if group_by == "family" else (lambda q: q.document)
    held_out: dict[int, list[str]] = {}
    per_group = {}
    for name in sorted({group(queries[i]) for i in rows}):
        train = [i for i in rows if group(queries[i]) != name]
        test = [i for i in rows if group(queries[i]) == name]
        fusion = best_fusion(queries, rankings, train) if train else Fusion()
        per_group[name] = f"k={fusion.rrf_k} w={fusion.bm25_weight} s={fusion.sentence_weight}"
        for i in test:
            held_out[i] = rankings.fused(i, fusion)
    overall = best_fusion(queries, rankings, rows)
    scores = score(rankings.name, "hybrid tuned, held out", lang, [queries[i] for i in rows], [held_out[i] for i in rows],
                   rankings.units)
    return Tuning(lang=lang, group_by=group_by, rrf_k=overall.rrf_k, bm25_weight=overall.bm25_weight,
                  sentence_weight=overall.sentence_weight, held_out=scores, per_group=per_group)


class QueryEvaluation(BaseModel):
    """Everything ``evaluate --queries`` measured."""

    queries_file: str
    questions: int
    languages: dict[str, int]
    index: str
    fusion: dict[str, str]
    scores: list[Scores]
    tuning: list[Tuning]
    split_scores: list[Scores] = []
    """The same scores on each tagged question set (a query's ``split``) of a language, labelled ``"<lang> <split>"``."""
    per_query: list[dict]
    naming: dict[str, int] = {}
    written: str | None = None
    encoder: str = ""

    def reports(self) -> list[Report]:
        """One table per language (system, mode, answer@1, answer@10, MRR@10, median chars of hit 1), then one per
        tagged question set."""
        out = []
        for lang in self.languages:
            rows = [_row(s) for s in self.scores if s.lang == lang]
            notes = [f"hybrid fusion used by search ({lang}): {self.fusion.get(lang, '')}; ragprep passages' queries encoded "
                     f"by {self.encoder or 'the index embedder'}",
                     f"{self.naming.get(lang, 0)} of {self.languages[lang]} questions name their document's standard "
                     "or file-name words (the leak that makes generated questions a title lookup)"]
            for t in self.tuning:
                if t.lang == lang:
                    rows.append(_row(t.held_out))
                    notes.append(f"tuned on all {lang} questions: rrf_k={t.rrf_k}, bm25_weight={t.bm25_weight}, "
                                 f"sentence_weight={t.sentence_weight}; held out by "
                                 f"{t.group_by}: " + ", ".join(f"{g} ({v})" for g, v in t.per_group.items()))
            out.append(Report(
                title=f"answer-in-hit retrieval, {lang}: {self.languages[lang]} questions of {Path(self.queries_file).name}",
                columns=COLUMNS, rows=rows, notes=notes,
            ))
        for label in dict.fromkeys(s.lang for s in self.split_scores):
            part = [s for s in self.split_scores if s.lang == label]
            out.append(Report(title=f"answer-in-hit retrieval, {label}: {part[0].questions} questions tagged so",
                              columns=COLUMNS, rows=[_row(s) for s in part]))
        return out


COLUMNS = ["system", "mode", "answer@1", "answer@10", "MRR@10", "median chars hit 1"]


def _row(s: Scores) -> list[str]:
    return [s.system, s.mode, f"{s.answer_at_1:.2f}", f"{s.answer_at_10:.2f}", f"{s.mrr_at_10:.2f}",
            f"{s.median_chars_hit1:,.0f}"]


def unit_rankings(name: str, units: list[Unit], questions: list[str], query_vectors: np.ndarray | None,
                  passage_vectors: np.ndarray | None, bm25, match_texts: dict[str, str] | None = None) -> Rankings:
    """Dense (when vectors are given) and BM25 rankings of ``units`` for every question (``match_texts``: see
    ``Rankings``)."""
    from ragprep.retrieval import top_indices

    ids = [u.unit_id for u in units]
    dense = None
    if query_vectors is not None and passage_vectors is not None and len(units):
        matrix = query_vectors @ passage_vectors.T
        dense = [[ids[j] for j in top_indices(row, DEPTH)] for row in matrix]
    lexical = [[ids[j] for j, _ in bm25.ranking(q, DEPTH)] for q in questions]
    return Rankings(name, {u.unit_id: u for u in units}, dense, lexical, list(questions), bm25.idf, match_texts=match_texts)


def _product_units(index, expand_chars: int = 0) -> tuple[list[Unit], dict[str, str]]:
    """The index's passages as units, in BM25 position order, with what ``search`` shows (section path + body grown
    with its neighbours up to ``expand_chars``), and the passages' own section path + body (what the sentence match
    reads)."""
    rows = index.table.search().select(["passage_id", "document", "slide", "page_start", "section", "text"]) \
        .limit(max(1, len(index.unit_ids))).to_arrow().to_pylist()
    by_id = {r["passage_id"]: r for r in rows}
    grown = index.neighbour_texts(index.unit_ids, expand_chars) if expand_chars > 0 else {}
    out, own = [], {}
    for unit_id in index.unit_ids:
        r = by_id[unit_id]
        own[unit_id] = f"{r['section']}\n{r['text']}" if r["section"] else r["text"]
        body = grown.get(unit_id, r["text"])
        text = f"{r['section']}\n{body}" if r["section"] else body
        out.append(Unit(unit_id, r["document"], r["slide"] if r["slide"] is not None else r["page_start"], text))
    return out, own


def _source_paths(index) -> list[Path]:
    rows = index.table.search().select(["source_path"]).limit(max(1, len(index.unit_ids))).to_arrow()
    return [Path(p) for p in dict.fromkeys(rows.column("source_path").to_pylist()) if p]


def run_query_evaluation(settings, path: Path, variant: str | None = None, baseline_dense: bool | None = None,
                         progress: Callable[[str], None] | None = None) -> QueryEvaluation:
    """Score ``path``'s questions on the product's index and both baselines (see the module doc).

    ``baseline_dense`` (default ``evaluate.dense_baselines``) also embeds the baselines' units."""
    from ragprep.engines.embedders import embeddings_cache_dir, make_embedder
    from ragprep.retrieval import Bm25Ranker, embed_passages, embed_queries
    from ragprep.storage import Layout
    from tasks.evaluate.baselines import page_units, window_units
    from tasks.index.search import fusion_for
    from tasks.index.store import SearchIndex, index_folder
    from tasks.train.loading import query_encoder

    say = progress or (lambda _: None)
    baseline_dense = settings.evaluate.dense_baselines if baseline_dense is None else baseline_dense
    queries = load_queries(path)
    questions = [q.question for q in queries]
    folder = index_folder(settings, variant or settings.index.variant)
    index = SearchIndex.open(folder)
    layout = Layout(settings.root)
    embedder = make_embedder(index.manifest.embedder, settings, embeddings_cache_dir(settings))
    query_vectors = embed_queries(embedder, questions)
    encoder, encoder_name = query_encoder(layout, embedder)  # what `search` and `ask` encode queries with
    units, own = _product_units(index, settings.index.expand_chars)
    product = unit_rankings("ragprep passages", units, questions,
                            embed_queries(encoder, questions) if encoder is not embedder else query_vectors,
                            index.vectors(), index.bm25, own)
    systems = [product]
    if encoder is not embedder:  # a published query adapter: the vanilla embedder's figures beside it
        systems.append(unit_rankings("ragprep passages, vanilla encoder", units, questions, query_vectors, index.vectors(),
                                     index.bm25, own))
    sources = _source_paths(index)
    for name, units in (("one unit per page/slide", page_units(sources)), ("400-word windows", window_units(sources))):
        say(f"baseline {name}: {len(units)} units")
        texts = [u.text for u in units]
        vectors = embed_passages(embedder, texts) if baseline_dense else None
        systems.append(unit_rankings(name, units, questions, query_vectors if baseline_dense else None, vectors,
                                     Bm25Ranker.build(texts)))
    languages = {lang: sum(q.lang == lang for q in queries) for lang in dict.fromkeys(q.lang for q in queries)}
    scores, split_scores = [], []
    for lang in languages:
        rows = [i for i, q in enumerate(queries) if q.lang == lang]
        fusion = fusion_for(settings.index, queries[rows[0]].question)
        scores += system_scores(systems, queries, rows, lang, fusion)
        for split in dict.fromkeys(queries[i].split for i in rows if queries[i].split):
            tagged = [i for i in rows if queries[i].split == split]
            split_scores += system_scores(systems, queries, tagged, f"{lang} {split}", fusion)
    tuning = [tune_fusion(queries, product, lang) for lang in languages]
    hybrid = {lang: product.ranked("hybrid", fusion_for(settings.index, next(q.question for q in queries if q.lang == lang)))
              for lang in languages}
    per_query = [_query_row(q, hybrid[q.lang][i], product.units) for i, q in enumerate(queries)]
    fusions = {lang: _describe(fusion_for(settings.index, next(q.question for q in queries if q.lang == lang)))
               for lang in languages}
    naming = {lang: sum(names_document(q) for q in queries if q.lang == lang) for lang in languages}
    result = QueryEvaluation(queries_file=str(path), questions=len(queries), languages=languages, index=str(folder),
                             fusion=fusions, scores=scores, split_scores=split_scores, tuning=tuning, per_query=per_query,
                             naming=naming, encoder=encoder_name)
    out = layout.evaluations_dir / "queries" / f"{path.stem}.json"
    layout.write_json(out, result.model_dump())
    return result.model_copy(update={"written": str(out)})


def system_scores(systems: Sequence[Rankings], queries: Sequence[Query], rows: Sequence[int], label: str,
                  fusion: Fusion) -> list[Scores]:
    """Every system's scores (each of its modes; hybrid fused by ``fusion``) on the questions at ``rows``."""
    subset = [queries[i] for i in rows]
    out = []
    for system in systems:
        for mode in ("hybrid", "bm25", "dense") if system.dense is not None else ("bm25",):
            ranked = system.ranked(mode, fusion)
            out.append(score(system.name, mode if mode != "hybrid" else "hybrid (default)", label, subset,
                             [ranked[i] for i in rows], system.units))
    return out


def names_document(query: Query) -> bool:
    """Whether the question names its document: a standard it states (``FMVSS 214``) or two of its file-name words."""
    from tasks.index.passages import standard_names

    stem = Path(query.document).stem
    text = query.question.lower()
    if set(standard_names(stem)) & set(standard_names(query.question)):
        return True
    words = [w for w in stem.lower().replace("-", "_").split("_") if len(w) >= 3 and not w.isdigit()]
    return sum(w in text for w in words if w not in {"pdf", "pptx", "auto"}) >= 2


def _describe(fusion: Fusion) -> str:
    return f"rrf_k={fusion.rrf_k}, bm25_weight={fusion.bm25_weight}, sentence_weight={fusion.sentence_weight}"


def _query_row(query: Query, ranking: Sequence[str], units: dict[str, Unit]) -> dict:
    top = units[ranking[0]] if ranking else None
    return {"id": query.id, "lang": query.lang, "family": query.family, "question": query.question,
            "gold": f"{query.document} {query.page or query.slide}", "answer_keys": query.answer_keys,
            "rank": first_answer(query, ranking, units), "hit1": f"{top.document} {top.where}" if top else None,
            "hit1_text": top.text[:700] if top else None}
