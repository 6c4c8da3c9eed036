"""A labelled evaluation set for the matcher, built from the project's own chunks, and its scores.

Each item is a question and an answer composed of **known sentences of known chunks** (English:
``sample_docs/`` and the English documents of ``../shared/corpus/``; Korean: the Korean meeting
notes and the Korean PDFs): 1-3 source chunks, 1-2 consecutive sentences from each, some
**paraphrased** by rule (synonyms, dropped hedges, Korean polite endings), and about every other
item one **distractor** sentence that comes from no chunk (on-topic figures the corpus never
states, or off-topic remarks). Every sentence records its source chunk (None for a distractor)
and its place in the answer, so sentence-level precision and recall can be read off the matcher's
segments at any threshold.

Only sentences that identify their chunk are used: a sentence whose words are as well covered by
another chunk of the pool (the same template line in three crash reports) is left out, since any
of those chunks would be a right answer. Candidates per item are its source chunks plus the most
similar other chunks by BM25 over the answer (hard negatives), ``k`` in all, in a seeded order.

Everything is deterministic for a given seed and pool.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragprep.markdown import row_cells
from ragprep.matching.matcher import MatchResult
from ragprep.matching.scoring import Candidate, content_words, stem, text_facts, word_coverage
from ragprep.matching.sentences import is_korean, split_sentences
from ragprep.text import HANGUL_RE
from schemas.chunks import ChunkRow

THRESHOLDS = (0.0, 0.3, 0.5, 0.7)
"""The seed's Figure 10 thresholds."""
PARAPHRASE_SHARE = 0.4
"""Share of source sentences offered to the paraphrase rules."""
DISTRACTOR_SHARE = 0.5
"""Share of items that get one sentence from no chunk."""
ALTERED_SHARE = 0.5
"""Share of the other items in which one source sentence's figure is changed (then it comes from no chunk)."""

EN_SYNONYMS = {
    "uses": "employs", "use": "employ", "used": "employed", "shows": "indicates", "show": "indicate",
    "important": "significant", "measured": "recorded", "measure": "record", "reduce": "lower", "reduces": "lowers",
    "increase": "raise", "increases": "raises", "large": "big", "small": "little", "begin": "start", "begins": "starts",
    "required": "needed", "requires": "needs", "require": "need", "provide": "give", "provides": "gives",
    "because": "since", "however": "but", "therefore": "so", "approximately": "about", "several": "a few",
    "verify": "confirm", "verified": "confirmed", "allows": "lets", "allow": "let", "quickly": "fast",
    "describes": "explains", "describe": "explain", "method": "approach", "methods": "approaches", "result": "outcome",
    "results": "outcomes", "change": "alteration", "changes": "alterations", "must": "has to", "obtain": "get",
    "obtained": "got", "following": "next", "additional": "extra", "support": "back", "supports": "backs",
    "vehicle": "car", "vehicles": "cars", "higher": "greater", "improved": "got better", "peak": "maximum",
    "students": "learners", "college": "university", "data": "information", "test": "trial", "tests": "trials",
    "performed": "carried out", "reached": "hit", "within": "inside", "below": "under", "above": "over",
    "between": "among", "remains": "stays", "remained": "stayed", "selected": "chosen", "consists": "is made up",
    "rapid": "fast", "rapidly": "fast", "typical": "common", "common": "frequent", "ensure": "make sure",
    "occupant": "passenger", "occupants": "passengers", "designed": "built", "developed": "created", "signal": "trace",
}
EN_HEDGES = ("usually ", "typically ", "generally ", "often ", "also ", "very ", "really ", "simply ")
KO_SYNONYMS = {
    "확인": "점검", "방안": "방법", "경우": "때", "가장": "제일", "매우": "아주", "수행": "실시", "필요": "요구",
    "검토": "점검", "시험": "테스트", "결과": "결론", "증가": "상승", "감소": "하락", "규정": "조항",
}
KO_ENDINGS = (("한다.", "합니다."), ("했다.", "했습니다."), ("이다.", "입니다."), ("된다.", "됩니다."), ("있다.", "있습니다."),
              ("한다", "합니다"), ("했다", "했습니다"), ("이다", "입니다"), ("된다", "됩니다"), ("있다", "있습니다"))
DISTRACTORS = {
    "en": [
        "The rear passenger airbag deployed 14.2 ms after first contact.",
        "Engineers recommend replacing the seat belt webbing every three years.",
        "The test vehicle was painted bright blue to improve contrast for the high-speed cameras.",
        "Fuel system integrity was verified with a 2.7 bar pressure check after the impact.",
        "The steering column collapsed by 118 mm during the event.",
        "Quarterly revenue from the accessories business grew by 6.5 percent.",
        "The meeting ended with a short discussion about parking at the test site.",
        "Cloud storage costs for the archive are expected to fall next year.",
        "Pedestrian head impact tests were moved to the following spring.",
        "A new cafeteria menu will be introduced for the engineering staff.",
        "The supplier agreed to deliver 4,300 spare bumpers by the end of the quarter.",
        "The marketing team prefers the name Aurora for the next model line.",
    ],
    "ko": [
        "후석 승객 에어백은 최초 접촉 후 14.2 ms에 전개되었다.",
        "시험 차량은 고속 카메라 대비를 위해 밝은 파란색으로 도장되었다.",
        "연료 계통의 누설은 충돌 후 2.7 bar 압력 시험으로 확인했다.",
        "다음 분기 액세서리 사업 매출은 6.5% 증가할 것으로 예상된다.",
        "회의는 시험장 주차 문제에 대한 짧은 논의로 마무리되었다.",
        "모든 영상 자료는 당일 저녁 중앙 서버에 보관되었다.",
        "보행자 머리 충격 시험은 내년 봄으로 연기되었다.",
        "신규 직원 교육은 다음 달부터 온라인으로 진행될 예정이다.",
        "마케팅팀은 차기 모델 이름으로 오로라를 선호한다.",
        "협력사는 분기 말까지 예비 범퍼 4,300개를 납품하기로 했다.",
    ],
}
"""Sentences from no chunk: on-topic ones with figures the corpus never states, and off-topic ones."""


@dataclass(frozen=True)
class EvalSentence:
    """One answer sentence: its text, its source chunk (None: a distractor) and how it was made."""

    text: str
    source: str | None
    kind: str
    """``verbatim`` | ``paraphrase`` | ``distractor`` | ``altered_figure`` (a source sentence with a changed number)."""


@dataclass
class EvalItem:
    """A question, its composed answer and the chunks the matcher may cite."""

    item_id: str
    language: str
    question: str
    sentences: list[EvalSentence]
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def answer(self) -> str:
        """The answer: its sentences joined by spaces."""
        return " ".join(s.text for s in self.sentences)

    def offsets(self) -> list[tuple[int, int]]:
        """Where each sentence lies in ``answer``."""
        out, at = [], 0
        for s in self.sentences:
            out.append((at, at + len(s.text)))
            at += len(s.text) + 1
        return out


# -- building ----------------------------------------------------------------------------------


def _chunk_text(chunk: ChunkRow) -> str:
    return chunk.qa_text


_WRAPPED_RE = re.compile(r"(?<=[^\s.!?:|])\n(?=[^\s#|\-*>\d])")
"""A line break inside a sentence (a PDF page's wrapped line): not after an end mark, not before a heading, row or item."""


def prose(chunk: ChunkRow) -> str:
    """The chunk's text with the wrapped lines of a PDF joined (Korean lines end mid-word there: joined without a space)."""
    text = _chunk_text(chunk)
    if chunk.unit == "slide":
        return text
    return _WRAPPED_RE.sub(lambda m: "" if is_korean(text[max(0, m.start() - 1):m.end() + 1]) else " ", text)


def _is_sentence(text: str, korean: bool) -> bool:
    if text.startswith("|") or not re.search(r"(다\.?|요\.|[.!?])[\"')\]]*$", text):  # a row, heading or fragment
        return False
    if len(content_words(text)) < (2 if korean else 3):
        return False
    return 20 <= len(text) <= 220 if korean else 6 <= len(text.split()) <= 45


def _row_sentence(line: str) -> str | None:
    """A Markdown table row as one sentence (``cell / cell.``), or None for a separator or a row of fewer than two cells."""
    if not line.startswith("|") or set(line) <= set("|-: "):
        return None
    cells = [c for c in row_cells(line) if c]
    return " / ".join(cells) + "." if len(cells) >= 2 else None


def eligible_sentences(chunk: ChunkRow, pool: Sequence[ChunkRow], facts: PoolFacts | None = None) -> list[str]:
    """Sentences of ``chunk`` that identify it: prose of 6-45 words (20-220 characters in Korean), better covered by
    it than by any other chunk (``facts``: :class:`PoolFacts` of ``pool``, built here when not given)."""
    facts = facts or PoolFacts(pool)
    korean = is_korean(_chunk_text(chunk))
    out = []
    texts = [s.text for s in split_sentences(prose(chunk))]
    if korean:  # Korean sources are few and mostly tables: a table row is a fact too
        texts += [t for t in (_row_sentence(line) for line in _chunk_text(chunk).splitlines()) if t]
    for text in texts:
        if not _is_sentence(text, korean) or word_coverage(text, text_facts(_chunk_text(chunk))) < 0.99:
            continue
        if facts.covered_elsewhere(text, chunk.chunk_id, 0.75):
            continue
        out.append(text)
    return out


class PoolFacts:
    """The word facts of every chunk of a pool, and which chunks hold each word stem: answers "does another chunk
    cover this sentence" (:func:`word_coverage` >= a share) without measuring the sentence against every chunk."""

    def __init__(self, pool: Sequence[ChunkRow]) -> None:
        self.ids = [c.chunk_id for c in pool]
        self.facts = [text_facts(_chunk_text(c)) for c in pool]
        self.by_stem: dict[str, list[int]] = {}
        for i, facts in enumerate(self.facts):
            for word_stem in facts.stems:
                self.by_stem.setdefault(word_stem, []).append(i)

    def covered_elsewhere(self, text: str, chunk_id: str, share: float) -> bool:
        """Whether a chunk of the pool other than ``chunk_id`` has ``word_coverage(text, its facts) >= share``: the
        same answer as measuring every chunk (a sentence with Hangul words is measured against every chunk; one
        without counts stem hits per chunk, whole numbers summed exactly as :func:`word_coverage` sums them)."""
        words = content_words(text)
        if not words or any(HANGUL_RE.search(w) for w in words):  # no words: 1.0 everywhere; Korean: partial support
            return any(cid != chunk_id and word_coverage(text, facts) >= share for cid, facts in zip(self.ids, self.facts))
        hits: dict[int, int] = {}
        for word in words:
            for i in self.by_stem.get(stem(word), ()):
                hits[i] = hits.get(i, 0) + 1
        return any(self.ids[i] != chunk_id and float(n) / len(words) >= share for i, n in hits.items())


def alter_figure(sentence: str, forbidden: set[str]) -> str | None:
    """The sentence with its first number changed to one that no chunk of the pool holds (None without a number)."""
    match = re.search(r"\d+(?:\.\d+)?", sentence)
    if match is None:
        return None
    value = match.group()
    for factor in (1.37, 1.61, 2.13, 0.71):
        new = f"{float(value) * factor:.1f}" if "." in value else str(int(int(value) * factor) + 3)
        if new not in forbidden and new != value:
            return sentence[: match.start()] + new + sentence[match.end():]
    return None


def _keep_case(original: str, replacement: str) -> str:
    return replacement[:1].upper() + replacement[1:] if original[:1].isupper() else replacement


def paraphrase(sentence: str, language: str, rng: random.Random) -> str:
    """A rule-made paraphrase (synonyms, hedges dropped, Korean polite endings); the sentence itself when no rule applies."""
    if language == "ko":
        text = sentence
        for old, new in KO_ENDINGS:
            if text.endswith(old):
                text = text[: -len(old)] + new
                break
        for old, new in KO_SYNONYMS.items():
            if old in text and rng.random() < 0.8:
                text = text.replace(old, new, 1)
        return text
    text = sentence
    for hedge in EN_HEDGES:
        text = re.sub(rf"\b{hedge}", "", text, count=1, flags=re.IGNORECASE)
    words = re.split(r"(\W+)", text)
    changed = 0
    for i, word in enumerate(words):
        if word.lower() in EN_SYNONYMS and changed < 3 and rng.random() < 0.8:
            words[i] = _keep_case(word, EN_SYNONYMS[word.lower()])
            changed += 1
    return "".join(words)


def _question(chunk: ChunkRow, language: str) -> str:
    document = Path(chunk.source_path).stem.replace("_", " ")
    title = chunk.title.strip() or document
    if language == "ko":
        return f"{document} 자료에서 '{title}'에 대해 무엇이라고 하나요?"
    return f"What does {document} say about {title}?"


def _pick_sources(rng: random.Random, usable: list[ChunkRow], first: ChunkRow, n_chunks: int) -> list[ChunkRow]:
    chosen = [first]
    for _ in range(n_chunks - 1):
        same_doc = [c for c in usable if c.doc_id == first.doc_id and c not in chosen]
        others = [c for c in usable if c not in chosen]
        pool = same_doc if same_doc and rng.random() < 0.5 else others
        if pool:
            chosen.append(rng.choice(pool))
    return chosen


def _compose(rng: random.Random, sources: list[ChunkRow], eligible: dict[str, list[str]], language: str,
             paraphrase_share: float) -> list[EvalSentence]:
    sentences: list[EvalSentence] = []
    for chunk in sources:
        lines = eligible[chunk.chunk_id]
        take = min(len(lines), rng.choice((1, 2)))
        start = rng.randrange(0, len(lines) - take + 1)
        for text in lines[start:start + take]:
            if rng.random() < paraphrase_share:
                changed = paraphrase(text, language, rng)
                if changed != text:
                    sentences.append(EvalSentence(changed, chunk.chunk_id, "paraphrase"))
                    continue
            sentences.append(EvalSentence(text, chunk.chunk_id, "verbatim"))
    return sentences


def _place(chunk: ChunkRow) -> tuple:
    """Where a chunk lies, by file name (not folder): the same set whatever order or path the chunks came in."""
    return Path(chunk.source_path).name, chunk.slide or 0, chunk.page_start or 0, chunk.part_index, chunk.chunk_id


def build_items(
    chunks: Sequence[ChunkRow], language: str, n_items: int, *, k: int = 4, seed: int = 13,
    rank: Callable[[str, list[ChunkRow]], list[str]] | None = None,
) -> list[EvalItem]:
    """``n_items`` labelled items in ``language`` (``en`` | ``ko``) from ``chunks`` (see the module doc).

    ``rank(answer, pool)`` orders chunk ids by similarity to an answer (default: BM25 over the pool).
    """
    rng = random.Random(f"{seed}-{language}")
    pool = sorted((c for c in chunks if (language == "ko") == is_korean(_chunk_text(c))), key=_place)
    facts = PoolFacts(pool)
    eligible = {c.chunk_id: eligible_sentences(c, pool, facts) for c in pool}
    usable = [c for c in pool if eligible[c.chunk_id]]
    if not usable:
        return []
    rank = rank or bm25_ranker(pool)
    figures = {n for c in pool for n in text_facts(_chunk_text(c)).numbers}
    distractors = list(DISTRACTORS[language])
    rng.shuffle(distractors)
    items = []
    for n in range(n_items):
        sources = _pick_sources(rng, usable, usable[n % len(usable)] if n < len(usable) else rng.choice(usable), 1 + n % 3)
        sentences = _compose(rng, sources, eligible, language, PARAPHRASE_SHARE)
        if rng.random() < DISTRACTOR_SHARE:
            sentences.insert(rng.randrange(0, len(sentences) + 1), EvalSentence(distractors[n % len(distractors)], None, "distractor"))
        elif rng.random() < ALTERED_SHARE and sum(1 for s in sentences if s.source) > 1:
            # a source sentence whose figure was changed: no chunk states it now; only where another sourced sentence
            # remains, so every item keeps at least one sentence some chunk supports
            at = next((i for i, s in enumerate(sentences) if s.source and alter_figure(s.text, figures)), None)
            if at is not None:
                sentences[at] = EvalSentence(alter_figure(sentences[at].text, figures) or "", None, "altered_figure")
        item = EvalItem(f"{language}-{n:03d}", language, _question(sources[0], language), sentences)
        by_id = {c.chunk_id: c for c in pool}
        source_ids = list(dict.fromkeys(s.chunk_id for s in sources))
        negatives = [c for c in rank(item.answer, pool) if c not in source_ids][: max(0, k - len(source_ids))]
        chosen = source_ids + negatives
        rng.shuffle(chosen)
        item.candidates = [Candidate(c, _chunk_text(by_id[c]), by_id[c].title) for c in chosen]
        items.append(item)
    return items


def bm25_ranker(pool: Sequence[ChunkRow]) -> Callable[[str, list[ChunkRow]], list[str]]:
    """Chunk ids of ``pool`` by BM25 over an answer (``ragprep/retrieval.py``'s ranking), best first."""
    from ragprep.retrieval import Retriever
    from ragprep.text import word_tokens

    # the set's distractors stay those it was measured with: the word rule, not the search index's bigrams
    retriever = Retriever([c.chunk_id for c in pool], [_chunk_text(c) for c in pool], None)
    retriever.tokenize = word_tokens

    def rank(answer: str, _pool: list[ChunkRow]) -> list[str]:
        return [h.chunk_id for h in retriever.search(answer, k=len(pool), mode="bm25")]

    return rank


# -- scoring -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SentenceScores:
    """Sentence-level precision and recall at one threshold (the seed's definition)."""

    threshold: float
    precision: float
    recall: float
    attributed: int
    correct: int
    gold: int
    distractors_rejected: float
    """Share of distractor sentences left unsupported."""


def predicted_labels(item: EvalItem, result: MatchResult, threshold: float) -> list[str | None]:
    """Per item sentence, the chunk the matcher attributes it to at ``threshold``: the segment covering its middle."""
    labels = []
    for start, end in item.offsets():
        middle = (start + end) // 2
        cited = None
        for segment in result.segments:
            if segment.char_start <= middle < segment.char_end + 1:
                cited = segment.chunk_id if segment.chunk_id is not None and segment.score >= threshold else None
                break
        labels.append(cited)
    return labels


def sentence_scores(items: Sequence[EvalItem], results: Sequence[MatchResult], threshold: float) -> SentenceScores:
    """Precision = right attributions / attributions; recall = right attributions / sentences that have a source."""
    attributed = correct = gold = distractors = rejected = 0
    for item, result in zip(items, results):
        for sentence, label in zip(item.sentences, predicted_labels(item, result, threshold)):
            gold += sentence.source is not None
            attributed += label is not None
            correct += label is not None and label == sentence.source
            if sentence.source is None:
                distractors += 1
                rejected += label is None
    return SentenceScores(
        threshold, correct / attributed if attributed else 0.0, correct / gold if gold else 0.0, attributed, correct, gold,
        rejected / distractors if distractors else 1.0,
    )
