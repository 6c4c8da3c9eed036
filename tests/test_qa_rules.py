"""The offline QA generator's rules (tasks/qa/rules/, tasks/mmdoc/multi_quote.py): each rule on a crafted case,
and the whole generator over sample_docs/ and the shared corpus (no file names, no "Slide N"/"Series N")."""

from __future__ import annotations

import asyncio
import re

import pytest

from ragprep.engines.generator import Generator
from ragprep.prompts import load_prompt
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.chunks import ChunkRow
from schemas.qa_pairs import FLAG_CODES, QaPairRow
from schemas.quotes import QuoteRow
from tasks.enrich.run import run_headers
from tasks.mmdoc import multi_quote
from tasks.qa import handles, rules
from tasks.qa.flags import ambiguous_gold_flags, support_share
from tasks.qa.generate import QUESTION_TYPES, chunk_view, document_handles, flag_pairs, prompt_variables
from tasks.qa.run import run_qa
from tests.conftest import CORPUS, SAMPLE_DOCS

FO = rules.Handle(test_name="FO-2024-017 ODB 64 km/h", stage="Prototype P2", title="Frontal Offset Crash Test Report",
                  kind="report", section="Test Setup", section_kind="slide")
BOOK = rules.Handle(title="Vehicle Passive Safety", kind="document", section="Crash Pulse Basics")
MEETING_KO = rules.Handle(title="설계 검토 회의", kind="meeting", date="2024년 11월 28일", section="검토 안건", section_kind="slide")


def view(markdown: str, handle: rules.Handle = BOOK, language: str = "en", **parts) -> rules.ChunkView:
    title = markdown.splitlines()[0].lstrip("# ") if markdown.startswith("#") else "Chapter"
    return rules.ChunkView(title=title, language=language, markdown=markdown, handle=handle, heading_path=[title], **parts)


def questions(v: rules.ChunkView, n: int = 15) -> list[rules.Candidate]:
    return rules.generate(v, n)


# --- Korean particles -------------------------------------------------------------------------


@pytest.mark.parametrize(("word", "pair", "expected"), [
    ("일시", "은/는", "일시는"), ("결과", "은/는", "결과는"), ("시험명", "은/는", "시험명은"), ("속도", "을/를", "속도를"),
    ("속도", "은/는", "속도는"), ("회의", "이/가", "회의가"), ("시간", "이/가", "시간이"), ("결과", "과/와", "결과와"),
    ("흉부 변위", "은/는", "흉부 변위는"), ("참석자", "을/를", "참석자를"), ("HIC15", "은/는", "HIC15는"), ("10", "은/는", "10은"),
    ("NIC", "이/가", "NIC가"), ("'설계 검토 회의'", "은/는", "'설계 검토 회의'는"), ("서울", "으로/로", "서울로"),
    ("부산", "으로/로", "부산으로"), ("회의", "으로/로", "회의로"),
])
def test_korean_particles_follow_the_last_syllable(word, pair, expected):
    assert rules.josa(word, pair) == expected


def test_final_consonant_by_hangul_arithmetic():
    assert rules.has_final_consonant("명") and rules.has_final_consonant("결과값") and not rules.has_final_consonant("일시")
    assert (ord("명") - 0xAC00) % 28 != 0 and (ord("시") - 0xAC00) % 28 == 0


def test_korean_templates_never_write_both_particles():
    doc = rules.doc_phrase(view("# 검토 안건", MEETING_KO, "ko"))
    assert doc == "2024년 11월 28일 '설계 검토 회의'"
    asked = [rules.key_value_question(key, doc, "ko") for key in ("일시", "참석자", "부서", "시험명", "속도", "결과", "다음 회의")]
    assert asked[0] == "2024년 11월 28일 '설계 검토 회의'는 언제 열렸나요?"
    assert "시험명은 무엇인가요" in asked[3] and "속도는 무엇인가요" in asked[4] and "결과는" in asked[5]
    assert all("(는)" not in q and "(가)" not in q and "(를)" not in q for q in asked)
    table = "| 항목 | 결과 | 비고 |\n|---|---|---|\n| 전개 시간 (ms) | 32.5 | 목표 30 이하 |\n| 흉부 변위 (mm) | 28.7 | 기준 충족 |"
    made = questions(view("# 시험 결과 요약\n\n" + table, MEETING_KO, "ko", tables=[("t1", table)]))
    assert made and all("(는)" not in c.question for c in made)
    # the row label's unit moves into the question's ending (generate.table.label_unit): "전개 시간 (ms)의 결과" was labelled ill-formed
    assert any(c.question.endswith("전개 시간의 결과는 몇 ms인가요?") and c.answer == "32.5" for c in made)
    assert not any("비고" in c.question for c in made), "remarks columns are not asked about"


# --- handles -----------------------------------------------------------------------------------


@pytest.mark.parametrize("title", ["crash_report_frontal_offset.pptx", "Slide 3", "Pages 1-10", "Report", "sw | \\ +",
                                   "기후위기 대응을 위한", "Chapter II", "Front matter", "crash report frontal offset"])
def test_file_names_and_placeholders_are_not_titles(title):
    assert not rules.real_title(title, "crash_report_frontal_offset.pptx")


@pytest.mark.parametrize("title", ["Vehicle Passive Safety", "설계 검토 회의", "Weekly Safety Meeting", "The SimFil Program v.2"])
def test_real_titles(title):
    assert rules.real_title(title, "some_file.pdf")


def test_handles_come_from_headers_then_titles_then_headings():
    chunk = ChunkRow(chunk_id="c1", doc_id="d1", source_path="x/crash_report_frontal_offset.pptx", unit="slide", slide=3,
                     title="Slide 3", markdown="# Slide 3\n\nHIC15 412.6", token_count=5, has_table=False, has_image=False,
                     has_chart=False, has_ocr=False, element_ids=[])
    handle = document_handles([chunk])["d1"]
    assert handle.title == "" and handle.test_name == ""  # neither the file name nor "Slide 3" names it
    assert rules.where(chunk_view(chunk, {}, handle)) == ""
    assert rules.generate(chunk_view(chunk, {}, handle), 5) == [], "no handle, no question"
    fo = rules.doc_phrase(view("# Test Setup", FO))
    assert fo == "the FO-2024-017 ODB 64 km/h test (Prototype P2)"


@pytest.mark.parametrize("title", ["S9.2 Hybrid and Electric Vehicles manufactured on or after March 1, 2021",
                                   "§ 571.227 Standard No. 227; Bus rollover structural integrity",
                                   "Figure 14a to § 571.213b—HIII–10C Dummy Neck Angle Setting", "5.3 Particular requirements"])
def test_a_paragraph_or_figure_heading_on_page_one_is_no_document_title(title):
    # a regulation extract's first page often ends the standard printed before it: its heading names that one
    def chunk(i, page, heading):
        return ChunkRow(chunk_id=f"c{i}", doc_id="d1", source_path="x/extract.pdf", unit="section", page_start=page,
                        page_end=page, part_index=0, title=heading, heading_path=[heading],
                        markdown=f"# {heading}\n\nS5.1 Each mounting shall not exceed 3.2 mm.", token_count=9,
                        has_table=False, has_image=False, has_chart=False, has_ocr=False, element_ids=[])

    assert handles.section_heading(title)
    chunks = [chunk(0, 1, title)] + [chunk(i, i, f"§ 571.201 Standard No. 201; Occupant protection, part {i}")
                                     for i in (2, 3, 4)]
    handle = document_handles(chunks)["d1"]
    assert handle.title == "FMVSS No. 201" and handle.kind == "standard"


@pytest.mark.parametrize("title", ["Vehicle Passive Safety", "Roof Strength Test Protocol", "Figure It Out",
                                   "CP 008-1 - Child Occupant Protection v1.2.1", "Table Of Contents Guide"])
def test_ordinary_titles_are_no_section_headings(title):
    assert not handles.section_heading(title)


def test_slides_without_a_title_placeholder_take_their_first_heading(extracted):
    chunks = {c.slide: c for c in extracted(CORPUS / "pptx_en_refactor_groups_pictures.pptx").chunks}
    assert chunks[7].title == "Do Programmers Usually Floss Refactor?"
    assert chunks[13].title == "Do Programmers Refactor Often?"
    assert chunks[2].title == "Slide 2"  # pictures only: nothing heading-like, and QA never uses it as a handle
    assert chunks[2].markdown.count("Do Programmers") == 0


# --- definitions -----------------------------------------------------------------------------------

NOT_TERMS = [
    "This is the ride-down benefit: the earlier the occupant is coupled, the more of the crush is shared.",
    "There are practical limits to how stiff the front structure can be made.",
    "If these values are exceeded, the test is repeated with a new dummy.",
    "Whatever velocity the car sheds before the occupant is coupled to it must later be removed from the occupant.",
    "The algorithm must fire early enough that the bag is fully inflated before the occupant reaches it.",
    "Peak deceleration depends on how stiff the front structure is and on how evenly it crushes.",
    "They are derived from biomechanical studies with volunteers at low severity.",
    "Both are designed to work together with the belt rather than to replace it.",
    "It is worth noting that all standard numerical differentiation formulas are FIR operations.",
    "The crash pulse is the single most important input to the design of occupant protection.",
    "Jasmeet Bhatia is an AI on IBM Z Product Manager who supports CP4D on IBM Z.",
]


@pytest.mark.parametrize("sentence", NOT_TERMS)
def test_pronouns_clause_openers_and_non_definitions_give_no_definition(sentence):
    assert rules.definition_question(sentence, sentence, 'the "Vehicle Passive Safety" document') is None


def test_definitions_of_real_terms_agree_and_answer_with_the_whole_sentence():
    markdown = (
        "# 2 Occupant Restraint Systems\n\n"
        "An airbag is a fabric cushion that is filled by an inflator within 20 to 40 ms and then vents gas through "
        "calibrated holes as the occupant loads it. Crash pulses are recorded with piezoresistive accelerometers mounted "
        "on rigid brackets. Pretensioners are the devices that remove belt slack in the first 10 to 15 ms.\n\n"
        "The change in velocity is spread over a short interval, and the history of deceleration over that interval "
        "is called the crash pulse."
    )
    made = {c.question: c.answer for c in questions(view(markdown))}
    airbag = 'According to the "Crash Pulse Basics" section of the "Vehicle Passive Safety" document, what is an airbag?'
    assert made[airbag].startswith("An airbag is a fabric cushion") and made[airbag].endswith("loads it.")
    assert any(q.endswith("what are pretensioners?") for q in made)
    assert any(q.startswith("How are crash pulses recorded") for q in made)
    assert any(q.endswith("what is the crash pulse?") and a.endswith("is called the crash pulse.") for q, a in made.items())
    assert not any(re.search(r"what (?:is|are) [A-Z][a-z]+ ", q) for q in made), "no capitalised sentence openers as terms"


def test_a_sentence_cut_by_a_page_break_is_answered_whole():
    markdown = ("# Ride-Down\n\nThe ride-down benefit is the share of the structural crush that is\n\n"
                "shared with the person inside the cabin.")
    assert rules.sentences(markdown) == [
        "The ride-down benefit is the share of the structural crush that is shared with the person inside the cabin."]
    for candidate in questions(view(markdown)):
        assert candidate.answer.endswith("."), candidate


# --- causal -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sentence", "expected"), [
    ("Because a sled run costs a fraction of a full crash, most restraint tuning happens on the sled, with full-vehicle "
     "tests used to confirm the final configuration.", "Why does most restraint tuning happen on the sled"),
    ("Next meeting is moved to Thursday because of the sled maintenance.", "Why is the next meeting moved to Thursday"),
    ("Belt geometry is fixed early in a programme because the anchor positions are part of the body structure.",
     "Why is belt geometry fixed early in a programme"),
    ("A thorax airbag, mounted in the outboard side of the seat back, deploys between the occupant and the door in "
     "about 10 ms, because there is very little crush space in a side impact.",
     "Why does a thorax airbag deploy between the occupant and the door in about 10 ms"),
    ("Because injury criteria are tied to specific dummies, results cannot be compared directly across dummy types.",
     "Why can't results be compared directly across dummy types"),
])
def test_causal_sentences_become_real_why_questions(sentence, expected):
    effect = rules.causal_effect(sentence)
    assert rules.why_question(effect, sentence) == expected


@pytest.mark.parametrize("sentence", [
    "Because of this effect it is common to remove a line through the tails of a signal.",
    "Due to regulations, more stakeholders adopt the typical AI model lifecycle to protect their brand.",
    "Since data is hosted on Db2, you can expect low latency because Db2 is hosted on the IBM Z platform.",
    "It also explains why a front-loaded pulse is generally kinder to occupants.",
])
def test_causal_sentences_that_cannot_be_asked_well_are_skipped(sentence):
    effect = rules.causal_effect(sentence)
    assert effect is None or rules.why_question(effect, sentence) is None


def test_no_template_artefact_for_causal_sentences():
    markdown = "# 1 Crash Pulse Basics\n\nBecause a sled run costs a fraction of a full crash, most restraint tuning happens on the sled."
    made = [c for c in questions(view(markdown)) if c.question_type == "causal"]
    assert [c.question for c in made] == [
        'Why does most restraint tuning happen on the sled, according to the "Crash Pulse Basics" section of the '
        '"Vehicle Passive Safety" document?']
    assert made[0].answer.startswith("Because a sled run") and "statement beginning" not in made[0].question


# --- reference lists, contents, boilerplate ---------------------------------------------------------------


def test_reference_sections_give_no_questions():
    refs = ("# References\n\n[1] Luenberger, D.G. (1973). Introduction to Linear and Nonlinear Programming.\n\n"
            "[2] Mentzer, S.G. (1991). The SIMFIL Program: Simultaneous Filtering is a report of the DOT.")
    assert questions(view(refs)) == []
    korean = "# 참고문헌\n\n[1] 김민수 (2020). 에어백 전개 시간이란 인플레이터가 작동하는 시간을 말한다."
    assert questions(view(korean, MEETING_KO, "ko")) == []
    unheaded = "# Further Reading\n\n" + "\n\n".join(f"[{i}] Author{i}, A. (2001). Title {i}. Publisher." for i in range(1, 6))
    assert rules.skipped_chunk(view(unheaded)) and questions(view(unheaded)) == []


def test_tables_of_contents_give_no_questions():
    toc = "# Front matter / Contents\n\n" + "\n\n".join(
        f"{i}.{j} Section Title Number {j} . . . . . . . . . . . . . . {10 * i + j}" for i in range(1, 3) for j in range(1, 4))
    toc += "\n\nThe baseline function is a low frequency representation of the motion."
    assert questions(view(toc)) == []
    assert questions(view("# 목차\n\n1. 서론 ······ 3\n\n2. 시험 방법 ······ 5", MEETING_KO, "ko")) == []
    assert rules.is_reference_or_toc_line("1.1 Integral Distortion . . . . . . . . . . 2")
    assert rules.is_reference_or_toc_line("탄소중립녹색성장위원회위원후보추천단체명시························· 3")
    assert rules.is_reference_or_toc_line("[12] Smith, J., Crash testing, 2004.")


# --- pictures ------------------------------------------------------------------------------------------


def test_noisy_ocr_gives_no_picture_question_and_confident_ocr_a_named_one():
    handle = rules.Handle(test_name="FO-2024-017 ODB 64 km/h", kind="report", section="High-Speed Camera Overlay", section_kind="slide")
    noisy = view("# High-Speed Camera Overlay\n\nFrame 412.", handle, pictures=[("p1", "PEAK DECEL 38.2 9\nSLED PULSE OK")])
    assert [c for c in questions(noisy) if c.target_modality == "image"] == []
    for text in ("PEAK DECEL 38.2 9", "=O 11391", "11391 14084", "Acceleration [7 52]", "Configu|", "—— 11391 10SEATLEREOOVEXA"):
        assert rules.picture_text(text) is None, text
    clean = view("# Poverty and Degrees\n\nSource: Brookings.", rules.Handle(title="Positioning HBCUs", kind="presentation",
                 section="Poverty and Degrees", section_kind="slide"),
                 pictures=[("p2", "Promoting Economic Mobility by Increasing Postsecondary Education\nToP 79%")])
    image = [c for c in questions(clean) if c.target_modality == "image"]
    assert len(image) == 1 and image[0].answer == "Promoting Economic Mobility by Increasing Postsecondary Education"
    assert '"Poverty and Degrees" slide' in image[0].question and image[0].evidence_element_id == "p2"


# --- tables -----------------------------------------------------------------------------------------------

DECK_TABLE = (
    "| Metric | Measured | Measured | Limit |\n|---|---|---|---|\n| Metric | Driver | Passenger | Limit |\n"
    "| HIC15 | 412.6 | 388.9 | 700 |\n| Chest deflection (mm) | 31.4 | 27.8 | 42 |\n| Femur load (kN) | 3.87 | 4.12 | 10 |"
)


def test_two_row_header_gives_named_columns_and_measured_against_limit_questions():
    table = rules.parse_table(DECK_TABLE)
    assert table.columns == ["Driver", "Passenger", "Limit"] and table.groups == ["Measured", "Measured", "Limit"]
    handle = rules.Handle(test_name="FO-2024-017 ODB 64 km/h", stage="Prototype P2", kind="report",
                          section="Dummy Measurements (Hybrid III 50th)", section_kind="slide")
    made = {c.question: c for c in questions(view("# Dummy Measurements\n\n" + DECK_TABLE, handle, tables=[("t1", DECK_TABLE)]))}
    hic = made["In the FO-2024-017 ODB 64 km/h test (Prototype P2), what HIC15 was measured for the driver?"]
    assert hic.answer == "412.6" and hic.target_modality == "table" and hic.evidence_element_id == "t1"
    check = made["Did the driver chest deflection (mm) of 31.4 stay within the limit of 42 in the FO-2024-017 ODB 64 km/h test "
                 "(Prototype P2)?"]
    assert check.answer == "Yes: 31.4 vs. limit 42" and check.question_type == "comparative"
    closest = made["In the FO-2024-017 ODB 64 km/h test (Prototype P2), which metric came closest to its limit for the driver?"]
    assert closest.answer == "Chest deflection (mm)"
    assert support_share(check.answer, DECK_TABLE) == 1.0, "a yes/no answer is supported by its numbers"
    assert not any("Measured Driver value" in q or "Metric" in q for q in made)


def test_merged_header_tables_are_handled_or_skipped():
    caption_only = "| Results | Results | Results |\n|---|---|---|\n| Strategy | How | Result |"
    assert rules.parse_table(caption_only) is None
    repeated = "| Results | Results | Results |\n|---|---|---|\n| Alpha | 1 | 2 |\n| Beta | 3 | 4 |"
    assert rules.parse_table(repeated) is None, "its header is one merged cell: no column can be named"
    duplicate_columns = "| Item | Value | Value |\n|---|---|---|\n| Alpha | 1 | 2 |"
    parsed = rules.parse_table(duplicate_columns)
    assert parsed is None or all(c == "" for c in parsed.columns)
    captioned = ("| Faculty as Key Allies | Faculty as Key Allies | Faculty as Key Allies |\n|---|---|---|\n"
                 "| Strategy | How | Result |\n| Thinking beyond standard measures of success. | Examine measures. | More holistic learning. |")
    made = questions(view("# Recommendation 2\n\n" + captioned, rules.Handle(title="Positioning HBCUs", kind="presentation"),
                          tables=[("t2", captioned)]))
    assert [(c.question, c.answer) for c in made] == [
        ('In the "Positioning HBCUs" presentation, what is the result for "Thinking beyond standard measures of success"?',
         "More holistic learning.")]


def test_horizontally_merged_headers_and_tables_named_by_their_caption():
    regional = ("| 구분 | 총인 원 | 구성 |  | 민간현황 |\n|---|---|---|---|---|\n|  |  | 정부 | 민간 | 학 계 |\n"
                "| 서울 | 40 | 10 | 30 | 13 |\n| 부산 | 50 | 6 | 44 | 13 |\n| 대구 | 15 | 6 | 9 | 5 |")
    table = rules.parse_table(regional)
    assert table.columns == ["총인 원", "정부", "민간", "학 계"] and table.groups == ["", "구성", "구성", "민간현황"]
    first = "| 구 분 | 현황 |\n|---|---|\n| 성별비율 | 여성(28명, 35%) |"
    second = "| 구 분 | 현황 |\n|---|---|\n| 성별비율 | 여성(7명, 21%) |"
    markdown = (f"# 참고자료\n\n□ 1기 탄중위 : 위원장(1) + 위촉직(78)\n\n※ 중도 사퇴한 위원 포함\n\n{first}\n\n"
                f"□ 2기 탄중위 : 위원장(1) + 위촉직(32)\n\n{second}\n\n2. 광역위원회 위원 구성현황\n\n※자료: 환경부\n\n{regional}")
    assert [rules.table_caption(markdown, t, "ko") for t in (first, second, regional)] == ["1기 탄중위", "2기 탄중위", "광역위원회 위원 구성현황"]
    handle = rules.Handle(title="탄소중립 기본법 일부개정법률안", kind="report")
    made = questions(view(markdown, handle, "ko", tables=[("t1", first), ("t2", second), ("t3", regional)]))
    asked = {c.question: c.answer for c in made}
    assert asked["'탄소중립 기본법 일부개정법률안' 보고서의 '1기 탄중위' 표에서 성별비율의 현황은 무엇인가요?"] == "여성(28명, 35%)"
    assert asked["'탄소중립 기본법 일부개정법률안' 보고서의 '광역위원회 위원 구성현황' 표에서 서울의 총인원은 얼마인가요?"] == "40"
    unnamed = questions(view(f"# 표\n\n{first}\n\n{second}", handle, "ko", tables=[("t1", first), ("t2", second)]))
    assert unnamed == [], "two tables with the same row labels and nothing naming them: no cell question"


def test_highest_row_of_a_named_numeric_column():
    table = "| Region | Members | Seats |\n|---|---|---|\n| North | 40 | 10 |\n| South | 55 | 6 |\n| East | 20 | 13 |"
    made = questions(view("# Committees\n\n" + table, tables=[("t3", table)]))
    highest = [c for c in made if "highest" in c.question]
    assert highest[0].question == 'In the "Vehicle Passive Safety" document, which region has the highest members?'
    assert highest[0].answer == "South"
    # the highest row's own value is that question's twin: asked once (South's seats, not the highest, still are)
    values = {c.question: c.answer for c in made if "highest" not in c.question}
    assert "55" not in values.values() and "40" in values.values() and "6" in values.values()


def test_charts_name_series_and_categories_never_series_n():
    chart = "**Chart: Chest acceleration vs time** (line)\n\n| Category | Series 1 | Series 2 |\n|---|---|---|\n| 0 ms | 0 | 0 |\n| 20 ms | 12.4 | 9 |\n| 60 ms | 38.2 | 30 |"
    made = questions(view("# Chest\n\n" + chart, FO, charts=[("c1", "Chest acceleration vs time", chart)]))
    assert [c for c in made if c.target_modality == "chart"] == [], "two anonymous series: nothing names them"
    single = "| Category | Series 1 |\n|---|---|\n| 0 ms | 0 |\n| 20 ms | 12.4 |\n| 60 ms | 38.2 |"
    made = [c for c in questions(view("# Chest\n\n" + single, FO, charts=[("c1", "Chest acceleration vs time", single)]))
            if c.target_modality == "chart"]
    # the peak's own value is the "at what time does it peak" question's twin (the rubric counts it once): the
    # runner-up's value is asked instead
    assert {c.answer for c in made} == {"60 ms", "12.4"}
    assert all("Series" not in c.question and "Chest acceleration vs time" in c.question for c in made)
    assert any(c.question.startswith("In the FO-2024-017 ODB 64 km/h test (Prototype P2), at what time does") for c in made)


# --- key-value facts ---------------------------------------------------------------------------------------


def test_key_values_become_natural_questions_with_agreement():
    markdown = ("# Test Setup\n\n- Barrier: offset deformable barrier, 40% overlap\n  - Measured impact speed 64.3 km/h\n"
                "- Dummies: Hybrid III 50th male, driver and passenger\n- Restraints: P2 driver airbag with enlarged 42 mm vent\n\n"
                "Front structure summary: no rail buckling observed\n\nLoad paths: bumper beam and subframe\n\n"
                "Transition: but let's step back a bit")
    made = {c.question: c.answer for c in questions(view(markdown, FO))}
    doc = "the FO-2024-017 ODB 64 km/h test (Prototype P2)"
    assert made[f"Which dummies were used in {doc}?"] == "Hybrid III 50th male, driver and passenger"
    assert made[f"What barrier was used in {doc}?"] == "offset deformable barrier, 40% overlap"
    assert made[f"What was the measured impact speed in {doc}?"] == "64.3 km/h"
    assert made[f"What is the front structure summary of {doc}?"] == "no rail buckling observed"
    assert made[f"What are the load paths of {doc}?"] == "bumper beam and subframe"
    assert not any("the Dummies" in q or "transition" in q.lower() for q in made)


def test_meeting_facts_name_the_meeting_by_title_and_date():
    handle = rules.Handle(title="Weekly Safety Meeting", kind="meeting", date="2024-11-21")
    markdown = "# Weekly Safety Meeting\n\nDate: 2024-11-21\n\nChair: Dana Whitfield\n\nAttendees: Priya Raman, Tomas Keller"
    made = {c.question: c.answer for c in questions(view(markdown, handle))}
    assert made == {"Who chaired the Weekly Safety Meeting of 2024-11-21?": "Dana Whitfield",
                    "Who attended the Weekly Safety Meeting of 2024-11-21?": "Priya Raman, Tomas Keller"}


# --- spread and duplicates -------------------------------------------------------------------------------


def _pair(chunk_id: str, question: str, answer: str) -> QaPairRow:
    return QaPairRow(qa_id=f"{chunk_id}-{len(question)}", chunk_id=chunk_id, doc_id="d", source_path="d.pptx", question=question,
                     answer=answer, generated_question=question, generated_answer=answer, question_type="factual",
                     target_modality="text", language="en", status="pending", provider="heuristic", model="m", prompt="p")


def _chunk(chunk_id: str, markdown: str) -> ChunkRow:
    return ChunkRow(chunk_id=chunk_id, doc_id="d", source_path="d.pptx", unit="slide", slide=1, title="T", markdown=markdown,
                    token_count=20, has_table=False, has_image=False, has_chart=False, has_ocr=False, element_ids=[])


def test_the_same_pair_from_several_chunks_is_kept_once_and_the_repeats_marked_ambiguous_gold():
    assert "ambiguous_gold" in FLAG_CODES
    question = "What was decided in the Weekly Safety Meeting of 2024-11-21?"
    answer = "The P2 airbag calibration is frozen."
    pairs = [_pair("c1", question, answer), _pair("c2", question + " ", answer.lower()), _pair("c3", question, "Something else.")]
    chunks = {c: _chunk(c, f"# T\n\n{answer} Something else.") for c in ("c1", "c2", "c3")}
    flagged = flag_pairs(pairs, chunks, Settings())
    assert flagged[0].flags == []
    assert flagged[1].flags == ["ambiguous_gold"] and "chunk c1" in flagged[1].flag_reasons[0] and flagged[1].status == "pending"
    assert "ambiguous_gold" not in flagged[2].flags  # same question, another answer: a near duplicate, not the same gold
    assert ambiguous_gold_flags([(question, answer), (question, answer)], ["c1", "c1"]) == [None, None]


def test_pairs_per_chunk_are_capped():
    keys = ("Purpose", "Barrier", "Dummies", "Restraints", "Seat", "Region", "Vehicle", "Location")
    markdown = "# Test Setup\n\n" + "\n".join(f"- {key}: value of {key.lower()}" for key in keys)
    assert len(rules.generate(view(markdown, FO), 4)) == 4
    assert rules.generate(view(markdown, FO), 0) == []


# --- multi-quote questions -------------------------------------------------------------------------------


def _quote(layout_id: int, page: int, text: str, type_: str = "text") -> QuoteRow:
    modality = "image" if type_ in ("table", "chart", "picture", "figure") else "text"
    return QuoteRow(quote_id=f"q{layout_id}", doc_id="d", source_path="x/crash_report_rear_whiplash.pptx", unit="slide",
                    page_id=page, layout_id=layout_id, modality=modality, type=type_, text=text, bbox=[0, 0, 1, 1],
                    page_size=[10, 10], chunk_id=f"c{page}", layout_backend="python-pptx")


REAR = [
    _quote(0, 0, "Test Name: RW-2024-008 Sled 16 km/h\n\nStage: Design Validation\n\nPurpose: Assess NIC reduction with revised head restraint"),
    _quote(1, 1, "- Sled test, 16 km/h medium pulse\n  - Peak sled acceleration 10.4 g"),
    _quote(2, 2, "| Metric | Driver | Limit |\n|---|---|---|\n| NIC (m2/s2) | 11.7 | 15 |\n| T1 acceleration (g) | 9.63 | 13.1 |", "table"),
    _quote(3, 4, "Frame 62 of the lateral high-speed camera, 1000 fps."),
    _quote(4, 5, "Seat structure summary: recliner rotation 11 degrees"),
]


def test_multi_quote_questions_name_the_connection():
    handle = multi_quote.quote_handle(REAR, "en")
    assert handle == "the RW-2024-008 Sled 16 km/h test (Design Validation)"
    feats = {q.quote_id: multi_quote.features(q) for q in REAR}
    purpose = multi_quote.connect(feats["q0"], feats["q2"], handle, "en")
    assert purpose.kind == "purpose_result" and purpose.answer == "11.7 for the driver, against a limit of 15"
    assert purpose.question.startswith("The RW-2024-008 Sled 16 km/h test (Design Validation) was run to assess NIC reduction")
    comparison = multi_quote.connect(feats["q1"], feats["q2"], handle, "en")
    assert comparison.kind == "comparison"
    assert comparison.question == ("In the RW-2024-008 Sled 16 km/h test (Design Validation), which was higher: "
                                   "the peak sled acceleration or the driver T1 acceleration?")
    assert comparison.answer.startswith("the peak sled acceleration (10.4 g")
    assert multi_quote.connect(feats["q3"], feats["q4"], handle, "en") is None
    groups = multi_quote.pick_groups(REAR, 3, seed=1)
    assert groups and all(g.connection is not None for g in groups)
    assert {q.quote_id for g in groups for q in g} <= {"q0", "q1", "q2"}, "unconnected quotes are never grouped"


def test_an_unconnected_group_gets_no_question(tmp_path):
    settings = Settings(root=tmp_path)

    async def go():
        generator = Generator(settings, "llm")
        try:
            return await multi_quote.write_questions([[REAR[3], REAR[4]], [REAR[1], REAR[2]]], generator, load_prompt("generate_multi_qa"))
        finally:
            await generator.aclose()

    made, flags = asyncio.run(go())
    assert flags == [] and len(made) == 1
    assert "which was higher" in made[0].question and "stated about" not in made[0].question
    assert made[0].gold_ids == ["q1", "q2"] and made[0].prompt.endswith("generate_multi_qa@ragprep-rules-1")


# --- prompts -----------------------------------------------------------------------------------------------


def test_v2_prompts_take_exactly_the_variables_passed():
    prompt = load_prompt("generate_qa")
    assert prompt.version == 2
    variables = prompt_variables(view("# Test Setup\n\nDummy: BioRID II", FO), 3)
    system, user = prompt.render(variables)  # strict: a missing or unused variable raises
    assert "FO-2024-017 ODB 64 km/h test" in user and ".pptx" not in user and "Slide" not in user
    assert all(t in system for t in QUESTION_TYPES) and "일시는" in system and "은(는)" in system  # named as the wrong form
    multi = load_prompt("generate_multi_qa")
    assert multi.version == 2 and multi.variables == {"handle", "connection", "quotes"}


# --- the whole generator on real documents ------------------------------------------------------------------

FILE_NAME_RE = re.compile(r"[\w\-.]+\.(?:pptx|pdf)\b", re.IGNORECASE)
SLIDE_RE = re.compile(r"\b(?:Slide|Series)\s*\d+\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def real(tmp_path_factory, ingest_copy):
    """sample_docs/ and the shared corpus ingested (OCR off, shared by the session), headers read, QA generated."""
    root = tmp_path_factory.mktemp("qa-rules-real") / "root"
    settings = ingest_copy([SAMPLE_DOCS, CORPUS], root)
    run_headers(settings)
    run_qa(settings)
    store = TableStore(Layout(root))
    return store.read("qa_pairs"), {c.chunk_id: c for c in store.read("chunks")}


def test_no_question_names_a_file_or_slide_or_series_number(real):
    pairs, _ = real
    assert len(pairs) >= 60
    for pair in pairs:
        assert not FILE_NAME_RE.search(pair.question), pair.question
        assert not SLIDE_RE.search(pair.question), pair.question
        assert "은(는)" not in pair.question and "이(가)" not in pair.question and "을(를)" not in pair.question
        assert not re.search(r"\bwhat (?:is|are) (?:This|There|That|It|They|If|Whatever|Both)\b", pair.question, re.IGNORECASE)
        assert "statement beginning" not in pair.question and "stated about" not in pair.question


def test_real_answers_are_complete_spans_of_their_chunk(real):
    pairs, chunks = real
    for pair in pairs:
        chunk = chunks[pair.chunk_id]
        text = chunk.markdown_v0 or chunk.markdown
        if pair.answer.startswith(("Yes: ", "No: ")) or re.match(r"from \S+ in .+ to \S+ in ", pair.answer):  # composed
            assert all(n in text for n in re.findall(r"\d+(?:\.\d+)?", pair.answer)), pair
        else:
            assert pair.answer in text, pair
        if pair.question_type in ("definitional", "causal"):
            assert re.search(r"[.!?]$|다\.$", pair.answer), pair


def test_sample_results_are_asked_with_their_test_handles(real):
    pairs, _ = real
    by_question = {p.question: p.answer for p in pairs}
    assert by_question["In the FO-2024-017 ODB 64 km/h test (Prototype P2), what HIC15 was measured for the driver?"] == "412.6"
    assert any(q.startswith("Did the driver") and "stay within the limit of" in q for q in by_question)
    assert by_question["What barrier was used in the FO-2024-017 ODB 64 km/h test (Prototype P2)?"] == (
        "offset deformable barrier, 40% overlap")
    assert by_question["What was decided in the Weekly Safety Meeting of 2024-11-21?"].startswith("the P2 airbag calibration is frozen")
    assert "2024년 11월 28일 '설계 검토 회의' 이후 다음 회의는 언제인가요?" in by_question
    references = [p for p in pairs if "References" in p.question or "Contents" in p.question]
    assert references == []


def test_every_content_slide_with_a_fact_gets_a_pair(real):
    pairs, chunks = real
    with_pairs = {p.chunk_id for p in pairs}
    for chunk in chunks.values():
        if "sample_docs" in chunk.source_path and chunk.slide is not None and (chunk.has_table or ": " in chunk.markdown):
            assert chunk.chunk_id in with_pairs, chunk.title


def test_ambiguous_gold_keeps_the_copy_whose_document_owns_the_section():
    pair = ("What is the scope of FMVSS No. 216?", "This standard establishes strength requirements for the roof.")
    assert ambiguous_gold_flags([pair, pair], ["c214", "c216"], [False, True])[1] is None
    flags = ambiguous_gold_flags([pair, pair], ["c214", "c216"], [False, True])
    assert flags[0] is not None and "chunk c216, whose document the section belongs to" in flags[0][1]
    assert ambiguous_gold_flags([pair, pair], ["a", "b"], [False, False])[0] is None  # no owner: the first copy
    assert ambiguous_gold_flags([pair, pair, pair], ["a", "b", "c"], [False, True, True])[1:] == [
        None, ("ambiguous_gold", "the same question and answer were generated from chunk b, whose document the section belongs to")]


def test_a_long_section_split_into_parts_is_no_running_head_but_a_title_opening_two_sections_is():
    # "DEFINITIONS" split into two chunks (part 0 and 1) is one section; a title heading two sections repeats
    from tasks.qa.judge import title_counts

    def chunk(i, title, part):
        return ChunkRow(chunk_id=f"c{i}", doc_id="d1", source_path="x/protocol.pdf", unit="section", page_start=i,
                        page_end=i, part_index=part, title=title, heading_path=[title],
                        markdown=f"# {title}\n\nPartner - a vehicle sold under another brand.", token_count=9,
                        has_table=False, has_image=False, has_chart=False, has_ocr=False, element_ids=[])

    chunks = [chunk(0, "DEFINITIONS", 0), chunk(1, "DEFINITIONS", 1), chunk(2, "Roof Strength Protocol", 0),
              chunk(3, "Roof Strength Protocol", 0)]
    counts = title_counts(chunks)["d1"]
    assert "definitions" not in {t.lower() for t in counts}
    assert [n for t, n in counts.items() if "roof" in t.lower()] == [2]
