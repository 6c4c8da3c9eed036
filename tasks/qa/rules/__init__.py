"""The heuristic provider's QA generator: well-formed, standalone pairs read straight off a chunk.

Every question names what users know the document by (the test of a report, the title of a
meeting or book, the chapter or slide heading), never the file name or "Slide N". Every answer
is a complete span of the chunk: a measured value, a decision, a definition sentence, a reason.

Sources, in the order they are mixed: requirement and condition sentences (``requirements.py``),
numbered provisions' values, requirements and definitions and Korean limits (``provisions.py``),
table results (a named row's value for a named column, the highest row of a numeric column,
measured values against a limit column), chart results (a named series' peak and its value),
key-value facts (question frames per key), measurements and changes stated in text, definitions of
real terms, real "why" questions, the first step of a named procedure, and the title printed on a
picture whose OCR text reads as words. Reference
lists, tables of contents and boilerplate sections give no questions; when no well-formed
question can be made from a fact, the fact is skipped.
"""


from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace

from ragprep.text import contains_word
from tasks.qa.rules.facts import (
    _AFTER_VERB,
    _APPOSITIVE_RE,
    _AUXILIARIES,
    _BECAUSE_AFTER_RE,
    _BECAUSE_BEFORE_RE,
    _CALLED_RE,
    _CHANGE_BASE,
    _CHANGE_RE,
    _CLAUSE_VALUE_OPENERS,
    _CLAUSE_WORDS,
    _DEFINING_PRED_RE,
    _DEFINITION_RE,
    _DEICTIC_IN_SUBJECT,
    _DESIGNED_RE,
    _DETERMINER_NEEDED,
    _EXPLAINS_WHY_RE,
    _GENERIC_HEADS,
    _KEY_PRIORITY,
    _KEY_RE,
    _KEY_STOPWORDS,
    _KO_DEFINITION_RE,
    _LEADING_ONLY,
    _MEASURE_EN_RE,
    _MEASURE_KO_RE,
    _NEGATED,
    _NOT_IN_SUBJECT,
    _NOT_VERBS,
    _PROCEDURE_RE,
    _PROCESS_RE,
    _PRONOUN_SUBJECTS,
    _QUANTIFIERS,
    _RANKING_PRED_RE,
    _ROLE_RE,
    _SHARE_RE,
    _SO_THAT_RE,
    _STEP_RE,
    KEY_FRAMES_EN,
    KEY_FRAMES_KO,
    SKIPPED_KEYS,
    UNITS,
    _causal_candidates,
    _clause_value,
    _clean_key,
    _complete_item,
    _definition_candidates,
    _handle_echo,
    _key_value_candidates,
    _main_verb_base,
    _measurement_candidates,
    _person,
    _plural,
    _procedure_candidates,
    _subject_ok,
    _subject_phrase,
    _term_phrase,
    _verb_base,
    causal_effect,
    definition_question,
    has_clause_word,
    key_value_question,
    real_term,
    why_question,
)
from tasks.qa.rules.results import results_candidates, results_table
from tasks.qa.rules.tables import (
    _CAPTION_RE,
    _COLUMN_NOUNS,
    _GARBLED_NUMBER_RE,
    _GENERIC_SERIES_RE,
    _KNOWN_UNIT_RE,
    _KO_CAPTION_RE,
    _KO_COUNTERS,
    _LIMIT_RE,
    _MARK_CELL_RE,
    _METRIC_HEADERS,
    _SKIPPED_COLUMNS,
    _TIME_RE,
    _TOTAL_LABEL_RE,
    _WORD_RE,
    _YEAR_RE,
    MAX_CELLS_PER_TABLE,
    Table,
    _cell_ok,
    _cell_question,
    _cell_question_ko,
    _chart_candidates,
    _chart_series,
    _column_phrase,
    _garbled_numbers,
    _interleave,
    _limit_checks,
    _numeric_column,
    _peak_question,
    _picture_candidates,
    _row_label_ok,
    _row_phrase,
    _sub_header,
    _table_candidates,
    _table_cells,
    _table_highest,
    _TableContext,
    _value_question,
    data_columns,
    is_metric_table,
    ko_label,
    limit_column,
    parse_table,
    picture_text,
    table_caption,
    word_like,
)
from tasks.qa.rules.text import (
    _ABBREVIATION_END_RE,
    _ARTICLES,
    _BULLET_RE,
    _COMMON_LABELS,
    _COMMON_NOUN_SUFFIXES,
    _DANGLING_END_RE,
    _DIGIT_FINAL,
    _GENERIC_TITLE_RE,
    _LETTER_FINAL,
    _NOISE_LINE_RE,
    _NUMBERING_RE,
    _REFERENCE_LINE_RE,
    _RIEUL,
    _SENTENCE_SPLIT_RE,
    _TERMINAL_RE,
    _TOC_LINE_RE,
    PARTICLES,
    SKIP_HEADINGS_RE,
    Candidate,
    ChunkView,
    Handle,
    _capitalise,
    _complete,
    _content_blocks,
    _doc_phrase_en,
    _doc_phrase_ko,
    _last_sound,
    _lower_first,
    _section_ok,
    doc_phrase,
    has_final_consonant,
    is_reference_or_toc_line,
    is_skipped_heading,
    josa,
    label_phrase,
    ocr_pages_as_prose,
    paragraphs,
    particle,
    real_title,
    sentences,
    skipped_chunk,
    strip_numbering,
    text_lines,
    where,
)

# --- the generator -------------------------------------------------------------------------------

SOURCES = (
    results_candidates,
    _table_candidates,
    _chart_candidates,
    _key_value_candidates,
    _measurement_candidates,
    _definition_candidates,
    _causal_candidates,
    _procedure_candidates,
    _picture_candidates,
)
"""Question sources, in the order a chunk's pairs are mixed (results first)."""


def _well_formed(candidate: Candidate) -> bool:
    question, answer = candidate.question, candidate.answer.strip()
    if not answer or "(는)" in question or "은(는)" in question or re.search(r"\b(\w+) \1\b", question, re.IGNORECASE):
        return False
    if re.search(r"\.(?:pptx|pdf|docx|xlsx)\b|\bSlide \d+\b|\bSeries \d+\b", question, re.IGNORECASE):
        return False
    return not contains_word(question.lower(), answer.lower())  # no answer leak


def generate(view: ChunkView, n: int) -> list[Candidate]:
    """Up to ``n`` well-formed pairs, round-robin over question sources so types stay mixed; none for
    reference lists, tables of contents and boilerplate sections."""
    if n <= 0 or skipped_chunk(view):
        return []
    from tasks.qa.rules.criteria import CRITERIA_SOURCES  # they build on this module's helpers
    from tasks.qa.rules.opinions import OPINION_SOURCES
    from tasks.qa.rules.protocols import PROTOCOL_SOURCES
    from tasks.qa.rules.provisions import PROVISION_SOURCES
    from tasks.qa.rules.requirements import REQUIREMENT_SOURCES
    from tasks.qa.rules.sections import section_views

    sources = (*CRITERIA_SOURCES, *REQUIREMENT_SOURCES, *PROTOCOL_SOURCES, *PROVISION_SOURCES, *OPINION_SOURCES, *SOURCES)
    names = [source_rule(source) for source in sources]
    queues = [list(_round_robin([[replace(c, rule=name) for c in source(part) if _well_formed(c)]
                                 for source, name in zip(sources, names)]))
              for part in section_views(view)]
    out: list[Candidate] = []
    seen: set[str] = set()
    for candidate in _round_robin(queues):  # every section of the chunk gets its first question before any its second
        if len(out) >= n:
            break
        # a sentence answered twice (a limit rule and a provision rule on one requirement) is one fact: asked once
        answer = candidate.answer if len(candidate.answer) >= MIN_TWIN_ANSWER_CHARS else ""
        if candidate.question not in seen and answer not in seen:
            seen.update({candidate.question, answer} - {""})
            out.append(candidate)
    return out


def source_rule(source) -> str:
    """The generator rule name of a question source: its registered rule (``generate.provision.requirement``), else
    ``generate.source.<function name>`` (the older sources of this module, not in the registry by name)."""
    from tasks.qa.registry import RULES

    for item in RULES.values():
        if item.kind == "generate" and item.check is source:
            return item.name
    return f"generate.source.{source.__name__.lstrip('_')}"


MIN_TWIN_ANSWER_CHARS = 40
"""Answers this long (sentences) are asked once per chunk; short values ("10 mm") may answer different questions."""


def _round_robin(groups: Sequence[Sequence[Candidate]]) -> Iterator[Candidate]:
    index = 0
    while any(index < len(g) for g in groups):
        for group in groups:
            if index < len(group):
                yield group[index]
        index += 1


__all__ = [
    "results_candidates",
    "results_table",
    "Candidate",
    "ChunkView",
    "Handle",
    "KEY_FRAMES_EN",
    "KEY_FRAMES_KO",
    "MAX_CELLS_PER_TABLE",
    "PARTICLES",
    "SKIPPED_KEYS",
    "SKIP_HEADINGS_RE",
    "Table",
    "UNITS",
    "_ABBREVIATION_END_RE",
    "_AFTER_VERB",
    "_APPOSITIVE_RE",
    "_ARTICLES",
    "_AUXILIARIES",
    "_BECAUSE_AFTER_RE",
    "_BECAUSE_BEFORE_RE",
    "_BULLET_RE",
    "_CALLED_RE",
    "_CAPTION_RE",
    "_CHANGE_BASE",
    "_CHANGE_RE",
    "_CLAUSE_VALUE_OPENERS",
    "_CLAUSE_WORDS",
    "_COLUMN_NOUNS",
    "_COMMON_LABELS",
    "_COMMON_NOUN_SUFFIXES",
    "_DANGLING_END_RE",
    "_DEFINING_PRED_RE",
    "_DEFINITION_RE",
    "_DEICTIC_IN_SUBJECT",
    "_DESIGNED_RE",
    "_DETERMINER_NEEDED",
    "_DIGIT_FINAL",
    "_EXPLAINS_WHY_RE",
    "_GARBLED_NUMBER_RE",
    "_GENERIC_HEADS",
    "_GENERIC_SERIES_RE",
    "_GENERIC_TITLE_RE",
    "_KEY_PRIORITY",
    "_KEY_RE",
    "_KEY_STOPWORDS",
    "_KNOWN_UNIT_RE",
    "_KO_CAPTION_RE",
    "_KO_COUNTERS",
    "_KO_DEFINITION_RE",
    "_LEADING_ONLY",
    "_LETTER_FINAL",
    "_LIMIT_RE",
    "_MARK_CELL_RE",
    "_MEASURE_EN_RE",
    "_MEASURE_KO_RE",
    "_METRIC_HEADERS",
    "_NEGATED",
    "_NOISE_LINE_RE",
    "_NOT_IN_SUBJECT",
    "_NOT_VERBS",
    "_NUMBERING_RE",
    "_PROCEDURE_RE",
    "_PROCESS_RE",
    "_PRONOUN_SUBJECTS",
    "_QUANTIFIERS",
    "_RANKING_PRED_RE",
    "_REFERENCE_LINE_RE",
    "_RIEUL",
    "_ROLE_RE",
    "_SENTENCE_SPLIT_RE",
    "_SHARE_RE",
    "_SKIPPED_COLUMNS",
    "_SO_THAT_RE",
    "_STEP_RE",
    "_TERMINAL_RE",
    "_TIME_RE",
    "_TOC_LINE_RE",
    "_TOTAL_LABEL_RE",
    "_TableContext",
    "_WORD_RE",
    "_YEAR_RE",
    "_capitalise",
    "_causal_candidates",
    "_cell_ok",
    "_cell_question",
    "_cell_question_ko",
    "_chart_candidates",
    "_chart_series",
    "_clause_value",
    "_clean_key",
    "_column_phrase",
    "_complete",
    "_complete_item",
    "_content_blocks",
    "_definition_candidates",
    "_doc_phrase_en",
    "_doc_phrase_ko",
    "_garbled_numbers",
    "_handle_echo",
    "_interleave",
    "_key_value_candidates",
    "_last_sound",
    "_limit_checks",
    "_lower_first",
    "_main_verb_base",
    "_measurement_candidates",
    "_numeric_column",
    "_peak_question",
    "_person",
    "_picture_candidates",
    "_plural",
    "_procedure_candidates",
    "_row_label_ok",
    "_row_phrase",
    "_section_ok",
    "_sub_header",
    "_subject_ok",
    "_subject_phrase",
    "_table_candidates",
    "_table_cells",
    "_table_highest",
    "_term_phrase",
    "_value_question",
    "_verb_base",
    "causal_effect",
    "data_columns",
    "definition_question",
    "doc_phrase",
    "has_clause_word",
    "has_final_consonant",
    "is_metric_table",
    "is_reference_or_toc_line",
    "is_skipped_heading",
    "josa",
    "key_value_question",
    "ko_label",
    "label_phrase",
    "limit_column",
    "paragraphs",
    "parse_table",
    "particle",
    "picture_text",
    "real_term",
    "real_title",
    "sentences",
    "skipped_chunk",
    "ocr_pages_as_prose",
    "strip_numbering",
    "table_caption",
    "text_lines",
    "where",
    "why_question",
    "word_like",
]
