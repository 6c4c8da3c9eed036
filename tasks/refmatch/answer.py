"""The answer step of ``ragprep ask``: the configured provider answers from the top chunks.

Prompt ``answer_question`` (``prompts/answer_question/v1.toml``) gets the question and the passages
(their ``title`` is the passage's section path). The heuristic provider's rule is **extractive**: it
answers from the best passage that has a sentence (or table row) matching the question — one that
holds at least ``MATCH`` of the question's content-word weight (rare words weigh more), counting what
the passage's document, section and header say; the first in retrieval order whose best such sentence is
within ``CLOSE`` of the best one retrieved — and quotes that passage's matching sentences, best
first (those within ``CLOSE`` of its best one, at most ``max_sentences``, in the passage's order). It says so on its first line
(``EXTRACTIVE_LABEL``), which is not part of the answer the matcher cites, and answers
``NO_ANSWER`` when no retrieved passage has a matching sentence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ragprep.engines.generator import Generation, Generator
from ragprep.markdown import row_cells
from ragprep.matching.scoring import content_words, stem
from ragprep.matching.sentences import split_sentences
from ragprep.prompts import PromptTemplate

EXTRACTIVE_LABEL = "Extractive answer (rules, no model):"
NO_ANSWER = "The retrieved passages do not answer this question."
MIN_WORDS = 4
MATCH = 0.34
"""Share of the question's content-word weight a sentence (with its passage's context) must hold to answer it."""
CLOSE = 0.8
"""An answer quotes the best passage's matching sentences that score at least this share of its best one."""
HEADER_RULE = "\n---\n"
"""What separates a Ver.1 chunk's report header block from its body."""


@dataclass(frozen=True)
class Passage:
    """A retrieved passage as the answer prompt shows it (``title``: its section path, else its chunk's title)."""

    chunk_id: str
    document: str
    where: str
    title: str
    text: str


def prompt_variables(question: str, passages: Sequence[Passage]) -> dict[str, object]:
    """The ``answer_question`` prompt's variables: exactly the ones the template uses (rendering is strict)."""
    return {"question": question, "passages": [{k: v for k, v in asdict(p).items() if k != "chunk_id"} for p in passages]}


def table_sentences(text: str) -> list[str]:
    """Each data row of the Markdown tables in ``text`` as a sentence: ``HIC15: Measured Driver 412.6, ..., Limit 700.``

    Header rows (the first row, and rows repeating its first cell, as two-row headers do) name the columns."""
    out: list[str] = []
    header: list[str] = []
    for line in text.splitlines():
        if not line.lstrip().startswith("|"):
            header = []
            continue
        cells = row_cells(line)
        if all(set(c) <= set("-: ") for c in cells):
            continue
        if not header:
            header = cells
        elif cells and header and cells[0] == header[0]:
            header = [f"{h} {c}".strip() if c != h else h for h, c in zip(header, cells)]
        elif len(cells) >= 2 and any(c for c in cells[1:]):
            pairs = [f"{h} {v}".strip() for h, v in zip(header[1:], cells[1:]) if v]
            out.append(f"{cells[0]}: {', '.join(pairs)}.")
    return out


def _weights(units: list[list[str]]) -> dict[str, float]:
    """Inverse document frequency of each word stem over the candidate sentences (rare words weigh more)."""
    counts: dict[str, int] = {}
    for sentences in units:
        for sentence in sentences:
            for word in {stem(w) for w in content_words(sentence)}:
                counts[word] = counts.get(word, 0) + 1
    total = sum(len(u) for u in units) or 1
    return {word: math.log(1 + total / n) for word, n in counts.items()}


def _overlap(question_stems: set[str], sentence: str, idf: dict[str, float]) -> float:
    words = {stem(w) for w in content_words(sentence)}
    if not words or not question_stems:
        return 0.0
    wanted = sum(idf.get(w, 1.0) for w in question_stems)
    return sum(idf.get(w, 1.0) for w in question_stems & words) / wanted


def _answer_units(text: str) -> list[str]:
    """What an extractive answer may quote from a passage: its sentences of 4+ words (not headings) and its table rows."""
    headings = {line.lstrip("#").strip() for line in text.splitlines() if line.lstrip().startswith("#")}
    sentences = [s.text for s in split_sentences(text)
                 if not s.text.startswith("|") and s.text not in headings and len(s.text.split()) >= MIN_WORDS]
    return sentences + table_sentences(text)


def _context(passage: Passage) -> str:
    """What a passage's sentences are about: its document, title or section path and report header block (Ver.1 texts)."""
    header = passage.text.split(HEADER_RULE, 1)[0] if HEADER_RULE in passage.text else ""
    return f"{passage.document} {passage.title} {header}".replace("_", " ")


def matching_sentences(question: str, passages: Sequence[Passage]) -> list[tuple[int, float, int, str]]:
    """``(passage rank, score, position, sentence)`` of every sentence that matches the question (score >= ``MATCH``).

    A sentence's score is the share of the question's content-word weight found in the sentence together with its
    passage's context (document, section, header), provided the sentence itself holds some of it."""
    stems = {stem(w) for w in content_words(question)}
    units = [_answer_units(p.text) for p in passages]
    idf = _weights(units)
    out = []
    for rank, (passage, sentences) in enumerate(zip(passages, units)):
        context = {stem(w) for w in content_words(_context(passage))}
        for position, sentence in enumerate(sentences):
            own = _overlap(stems, sentence, idf)
            together = _overlap(stems, f"{sentence} {' '.join(context)}", idf)
            if own > 0 and together >= MATCH:
                out.append((rank, round(0.7 * own + 0.3 * together, 6), position, sentence))
    return out


def extractive_sentences(question: str, passages: Sequence[Passage], max_sentences: int = 3) -> list[str]:
    """The best passage's sentences (table rows too) that match the question, best ``max_sentences`` in passage order.

    The best passage is the first in retrieval order whose best matching sentence scores at least ``CLOSE`` of the best
    matching sentence of any retrieved passage (retrieval order breaks near-ties; a first passage that matches only
    through its context gives way to one whose own sentence holds the question); empty when none has one."""
    found = matching_sentences(question, passages)
    if not found:
        return []
    top = max(score for _, score, _, _ in found)
    best = min(rank for rank, score, _, _ in found if score >= CLOSE * top)
    mine = sorted((f for f in found if f[0] == best), key=lambda f: (-f[1], f[2]))
    mine = [f for f in mine if f[1] >= CLOSE * mine[0][1]]  # the sentences about as good as the best one
    chosen = list(dict.fromkeys((position, text) for _, _, position, text in mine))[:max_sentences]
    return [text for _, text in sorted(chosen)]


def extractive_answer(question: str, passages: Sequence[Passage], max_sentences: int = 3) -> str:
    """The heuristic provider's answer: the label line, then the chosen sentences (or that none answers)."""
    sentences = extractive_sentences(question, passages, max_sentences)
    return f"{EXTRACTIVE_LABEL}\n" + ("\n".join(sentences) if sentences else NO_ANSWER)


def answer_body(text: str) -> str:
    """The answer without the extractive label line (what the matcher cites)."""
    stripped = text.strip()
    if stripped.startswith(EXTRACTIVE_LABEL):
        stripped = stripped[len(EXTRACTIVE_LABEL):].strip()
    return stripped


async def answer_question(question: str, passages: Sequence[Passage], generator: Generator, prompt: PromptTemplate,
                          max_sentences: int = 3) -> Generation:
    """The configured provider's answer to ``question`` from ``passages`` (the heuristic one: extractive)."""
    return await generator.generate(
        "answer_question", prompt, prompt_variables(question, passages),
        heuristic=lambda: extractive_answer(question, passages, max_sentences),
    )
