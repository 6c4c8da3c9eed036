"""What a query adapter is judged on before it is published: questions that are not template-shaped.

The generated questions of the training export mostly name their document, standard, table or chunk title
(``According to the "… § 571.301" document, what …``, ``'…법률안' 문서의 '2기 탄중위' 표에서 …``). Those templates
are shared across documents, so an adapter that learned them scores better on the held-out documents' generated
questions and worse on questions people write (measured: held-out MRR@10 0.49 -> 0.62 on generated questions,
hand-written hybrid answer@1 0.81 -> 0.73). The adapter is therefore judged on

* the held-out documents' questions that are **not template-shaped** (``template_shaped`` is ""), when there are at
  least ``train.adapter_min_judge_questions`` of them, or
* a hand-written query file (``train.adapter_judge_queries``, ``ragprep train retriever --judge-queries FILE``; the
  format of ``ragprep evaluate --queries``), scored as ``search`` ranks: answer in hit, MRR@10, vanilla vs trained.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ragprep.engines.embedder import Embedder
from ragprep.settings import Settings
from tasks.dataset.snapshot import ChunkRecord
from tasks.index.passages import normalised, standard_names
from tasks.index.queryfile import Query, answers, load_queries
from tasks.index.search import rank_passages
from tasks.index.store import SearchIndex, index_folder

MIN_TITLE_CHARS = 4
_QUOTED_RE = re.compile(r"[\"“「『‘']([^\"“”「」『』‘’']{3,})[\"”」』’']")
_FILE_WORDS_SKIPPED = frozenset({"pdf", "pptx", "docx", "auto"})


def template_shaped(question: str, chunk: ChunkRecord) -> str:
    """Why ``question`` (gold ``chunk``) is template-shaped, or "" when it is not: it names the standard of its
    document (``FMVSS 301``, ``§ 571.301``), two of its file-name words, its chunk's title (4+ characters), or quotes a
    name (a document, table or chart title in quotation marks)."""
    stem = Path(chunk.source_path).stem
    if set(standard_names(stem, chunk.title)) & set(standard_names(question)):
        return "names its standard"
    words = [w for w in re.split(r"[_\W]+", stem.lower()) if len(w) >= 3 and not w.isdigit() and w not in _FILE_WORDS_SKIPPED]
    if sum(w in question.lower() for w in words) >= 2:
        return "names its file"
    title = normalised(chunk.title)
    if len(title) >= MIN_TITLE_CHARS and title in normalised(question):
        return "names its title"
    if _QUOTED_RE.search(question):
        return "quotes a name"
    return ""


@dataclass(frozen=True)
class QueryFileJudgement:
    """Answer-in-hit MRR@10 of the vanilla and the adapted query encoder on a query file, as ``search`` ranks."""

    path: str
    questions: int
    vanilla_mrr_10: float
    trained_mrr_10: float

    def describe(self) -> str:
        """``MRR@10 trained X vs vanilla Y on N hand-written questions of FILE``."""
        return (f"answer-in-hit MRR@10 trained {self.trained_mrr_10:.3f} vs vanilla {self.vanilla_mrr_10:.3f} on "
                f"{self.questions} questions of {Path(self.path).name}")


def judge_on_query_file(settings: Settings, path: Path, vanilla: Embedder, trained: Embedder) -> QueryFileJudgement:
    """Score both query encoders on ``path``'s questions over the built index (``index.variant``), ranked as ``search``
    ranks (``index.mode``, the language's fusion) and shown as it shows hits (grown to ``index.expand_chars``)."""
    queries = load_queries(path)
    index = SearchIndex.open(index_folder(settings, settings.index.variant))
    scores = [_mrr(settings, index, queries, encoder) for encoder in (vanilla, trained)]
    return QueryFileJudgement(str(path), len(queries), round(scores[0], 4), round(scores[1], 4))


def _mrr(settings: Settings, index: SearchIndex, queries: list[Query], encoder: Embedder) -> float:
    s = settings.index
    total = 0.0
    for query in queries:
        hits = rank_passages(index, s, query.question, 10, s.mode, encoder)
        for rank, hit in enumerate(index.with_neighbours(hits, s.expand_chars), start=1):
            if answers(query, hit.document, f"{hit.section}\n{hit.text}"):
                total += 1 / rank
                break
    return total / max(1, len(queries))
