"""Generator rules for what a report concludes: a Korean review opinion, and a chart's change between two stages.

A Korean review report (검토보고서) states its opinion in the "검토의견" section in nominal sentence endings:
"... 법적 근거를 마련하려는 것으로 그 취지는 타당한 방향으로 보임." (the committee's verdict on the bill's aim),
"... 점을 고려할 필요가 있음." (what it asks to consider), "... 의견을 제출하였음." / "... 지적이 제기되고 있음."
(the objections it reports). A user asks for these first; the answer is the whole sentence,
a span of the chunk over its line breaks.

A chart over two stages (two years, two builds "P1"/"P2") has no peak worth asking ("which of two years is
higher" is the value's twin), but its change is the fact: "How did "College Enrollment" change from 2000 to 2008
in the "Change in Highest Level ..." chart?" -> "from 32 in 2000 to 37 in 2008".

Both rules fire only when they can name the document, the section or chart, and the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ragprep.markdown import parse_number, table_rows
from tasks.qa.registry import rule
from tasks.qa.rules.text import Candidate, ChunkView, _section_ok, doc_phrase, where

_REVIEW_SECTION_RE = re.compile(r"검토\s*의견")
_KO_SENTENCE_RE = re.compile(r"\S.*?[임음함됨봄](?:\([^)]{1,20}\))?\.(?=\s|$)")
"""A Korean report sentence: up to its nominal ending ("...보임.", "...있음(참고자료1).")."""
_NOT_PROSE_RE = re.compile(r"^(?:\d{1,2}\)|※|\*|자료\s*:|[|#!>\[]|[-·•□○▣])")
_OPINIONS = (
    (re.compile(r"취지는\s*[^.]{0,30}(?:타당|바람직|적절|공감|긍정)"), "개정안의 취지를 어떻게 평가하나요?"),
    (re.compile(r"(?:고려|검토|논의|보완|마련)할\s*필요가\s*있(?:음|을 것임|을 것으로 보임)$"),
     "무엇을 고려할 필요가 있다고 보나요?"),
    (re.compile(r"(?:우려|반대|신중)[^.]{0,30}의견을\s*제출하였음$|발생할\s*수\s*있다는\s*의견을\s*제출하였음$"),
     "어떤 우려 의견이 제출되었나요?"),
    (re.compile(r"(?:지적|비판)이\s*제기되고\s*있(?:음|는 상황임)(?:\(참고자료\s*\d\))?$"), "어떤 지적이 제기되고 있나요?"),
)
"""(the sentence's ending, the question it answers): the review's verdict, what it asks to consider, the objection
submitted, the criticism raised."""
MAX_OPINION_CHARS = 300
_TOPIC_RE = re.compile(r"^(?:(?:그러나|또한|다만|한편|이에),?\s*)?(?P<topic>[^,\s][^,]{3,40}?)의\s경우\b")
"""The body the sentence is about ("또한, 2050 지방탄소중립‧녹색성장위원회의 경우 ..."): named in the question so that two
criticisms of one section are two questions."""


def _ko_prose(markdown: str) -> str:
    """The chunk's Korean prose with the PDF's hard line breaks undone (a break after punctuation is a space, a break
    inside a word joins it: "비\\n판이" -> "비판이"); tables, footnotes, sources and headings left out."""
    blocks = []
    for block in re.split(r"\n\s*\n", markdown):
        block = block.strip()
        if block and not _NOT_PROSE_RE.match(block):
            blocks.append(block)
    lines = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    text = ""
    for line in lines:
        text += ("" if text and (_inside_word(text, line) or _seen_joined(text, line, markdown)) else " ") + line
    return text.strip()


def _seen_joined(before: str, line: str, markdown: str) -> bool:
    """True when the two syllables either side of the break stand together elsewhere in the chunk ("지방탄소중" / "립‧"
    where "탄소중립" is written whole on another line): the break cut that word."""
    pair = before[-2:] + line[:1]
    return bool(re.match(r"[가-힣]{3}$", pair)) and markdown.count(pair) > 0


_PARTICLE_END_RE = re.compile(r"^[가-힣][의이가을를은는에도와과로]$")


def _inside_word(before: str, line: str) -> bool:
    """True when the PDF broke a word at this line end: the line before ends in one syllable or digit cut off ("비" /
    "판이", "205" / "0"), or the new line starts with one syllable or a syllable and its particle ("사회계" / "층의")."""
    last, first = before.split()[-1], line.split()[0]
    if re.search(r"[.,;:)]$", last) or not re.match(r"[가-힣\d]", first):
        return False
    return len(last) == 1 or len(first) == 1 or bool(_PARTICLE_END_RE.match(first)) or bool(
        re.search(r"\d$", last) and re.match(r"\d", first))


def _verbatim_ko(sentence: str, markdown: str) -> str:
    """``sentence`` as the chunk writes it, over the PDF's line breaks (an answer is a span of its chunk), or ''."""
    pattern = r"\s*".join(re.escape(ch) for ch in re.sub(r"\s+", "", sentence))
    found = re.search(pattern, markdown)
    return found.group(0) if found else ""


@rule("generate.opinion.review_ko", "generate", "a Korean review report's '검토의견' section (prose sentences)",
      "a sentence that ends as the review's verdict on the bill's aim ('그 취지는 타당한 방향으로 보임'), what it asks to "
      "consider ('고려할 필요가 있음'), an objection submitted ('... 발생할 수 있다는 의견을 제출하였음') or a criticism "
      "raised ('지적이 제기되고 있음') is asked as that, naming the document and the section; the answer is the sentence",
      "factual")
def review_opinion_candidates(view: ChunkView) -> Iterator[Candidate]:
    """'<문서>의 '<섹션>' 검토의견은 개정안의 취지를 어떻게 평가하나요?' -> the verdict sentence."""
    path = " ".join([view.title, *view.heading_path])
    if view.language != "ko" or not doc_phrase(view) or not _section_ok(view) or not _REVIEW_SECTION_RE.search(path):
        return
    place = where(view)
    asked: set[str] = set()
    for found in _KO_SENTENCE_RE.finditer(_ko_prose(view.markdown)):
        sentence = found.group(0).strip()
        answer = _verbatim_ko(sentence, view.markdown) if len(sentence) <= MAX_OPINION_CHARS else ""
        if not answer:
            continue
        sentence = sentence[:-1]
        for ending, asks in _OPINIONS:
            topic = _TOPIC_RE.match(sentence)
            reported = asks.startswith("어떤")  # an objection or criticism the review reports, not its own view
            lead = f"{place} 검토의견에 따르면 " if reported or topic else f"{place} 검토의견은 "
            question = lead + (f"{topic.group('topic')}에 대해 " if topic else "") + asks
            if ending.search(sentence) and question not in asked:
                asked.add(question)
                yield Candidate(question, answer, "factual", "text")
                break


_YEAR_RE = re.compile(r"^(?:19|20)\d\d$")
_STAGE_RE = re.compile(r"^(?:P|DV|PV|PP|EP|MP|Proto(?:type)?|Build|Rev\.?|V)\s?\d{1,2}[a-z]?$", re.IGNORECASE)
_GENERIC_SERIES_RE = re.compile(r"^(?:series|계열)\s*\d+$", re.IGNORECASE)


def _stages(categories: list[str]) -> bool:
    """True when the two categories are ordered stages: two increasing years, or two build stages ('P1', 'P2')."""
    if len(categories) != 2:
        return False
    first, second = categories
    if _YEAR_RE.match(first) and _YEAR_RE.match(second):
        return int(first) < int(second)
    return bool(_STAGE_RE.match(first) and _STAGE_RE.match(second))


@rule("generate.chart.stage_change", "generate", "a chart whose categories are exactly two ordered stages (two years, "
      "two builds 'P1'/'P2') and whose series are named",
      "each named series whose value differs between the stages is asked how it changed, naming the chart and the "
      "document; the answer gives both values with their stage ('from 32 in 2000 to 37 in 2008')", "comparative")
def stage_change_candidates(view: ChunkView) -> Iterator[Candidate]:
    """'How did "College Enrollment" change from 2000 to 2008 in the "..." chart of the "..." presentation?'"""
    doc = doc_phrase(view) or where(view, with_section=False)
    if not doc or view.language != "en":
        return
    for element_id, chart_title, markdown in view.charts:
        rows = table_rows(markdown)
        chart = chart_title or (view.handle.section if _section_ok(view) else "")
        if len(rows) != 3 or not chart:
            continue
        header, body = rows[0], rows[1:]
        categories = [r[0].strip() for r in body if r]
        if not _stages(categories):
            continue
        for col, series in enumerate(header):
            if col == 0 or not series.strip() or _GENERIC_SERIES_RE.match(series.strip()):
                continue
            values = [r[col].strip() if col < len(r) else "" for r in body]
            numbers = [parse_number(v) for v in values]
            if None in numbers or numbers[0] == numbers[1]:
                continue
            (a, b), (x, y) = categories, values
            question = f'In {doc}, how did "{series.strip()}" change from {a} to {b} in the "{chart}" chart?'
            yield Candidate(question, f"from {x} in {a} to {y} in {b}", "comparative", "chart", element_id)


OPINION_SOURCES = (review_opinion_candidates, stage_change_candidates)
"""A review's conclusions and a chart's change between two stages: asked beside the chunk's other facts."""
