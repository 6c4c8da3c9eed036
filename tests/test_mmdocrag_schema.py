"""MMDocRAG export schema (schemas/mmdocrag.schema.json + schemas/mmdocrag.py): one valid line,
and invalid lines each asserting the specific message, JSON path included."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from schemas.mmdocrag import load_schema, validate_jsonl, validate_line


def valid_line() -> dict:
    return {
        "q_id": 7,
        "doc_name": "crash_report_2023.pdf",
        "domain": "Automotive",
        "question": "How did the frontal offset score change between 2022 and 2023?",
        "evidence_modality_type": ["Text", "Table"],
        "question_type": "Comparison",
        "text_quotes": [
            {"quote_id": "text1", "type": "text", "text": "The 2023 model scored Good.", "page_id": 3, "layout_id": 4},
            {"quote_id": "text2", "type": "text", "text": "Unrelated paragraph.", "page_id": 5, "layout_id": 0},
            {"quote_id": "text3", "type": "text", "text": "The 2022 model scored Acceptable.", "page_id": 2, "layout_id": 7},
        ],
        "img_quotes": [
            {
                "quote_id": "image1",
                "type": "image",
                "img_path": "images/crash_report_2023_3_2.jpg",
                "img_description": "Table of offset scores by year.",
                "page_id": 3,
                "layout_id": 2,
            },
            {
                "quote_id": "image2",
                "type": "image",
                "img_path": "images/crash_report_2023_9_1.jpg",
                "img_description": "Photo of the test vehicle.",
                "page_id": 9,
                "layout_id": 1,
            },
        ],
        "gold_quotes": ["text1", "text3", "image1"],
        "answer_short": "It improved from Acceptable to Good.",
        "answer_interleaved": "It improved from Acceptable [3] to Good [1]. ![](image1)",
    }


def test_schema_is_valid_draft_2020_12() -> None:
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    schema["title"] = "changed"  # a copy: the validator's schema is untouched
    assert load_schema()["title"] != "changed"


def test_valid_line_has_no_errors() -> None:
    assert validate_line(valid_line()) == []


def test_additional_properties_are_allowed() -> None:
    line = valid_line()
    line["doc_id"] = "doc-abc"
    line["text_quotes"][0]["ragprep_quote_id"] = "q-123"
    line["img_quotes"][0]["ocr_text"] = "2022 Acceptable 2023 Good"
    assert validate_line(line) == []


def test_no_quotes_and_no_gold_is_valid() -> None:
    line = valid_line()
    line["text_quotes"], line["img_quotes"], line["gold_quotes"] = [], [], []
    assert validate_line(line) == []


def mutated(change) -> dict:
    line = copy.deepcopy(valid_line())
    change(line)
    return line


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.pop("question"), "$: 'question' is a required property"),
        (lambda d: d.pop("answer_interleaved"), "$: 'answer_interleaved' is a required property"),
        (lambda d: d.update(q_id="7"), "$.q_id: '7' is not of type 'integer'"),
        (lambda d: d.update(evidence_modality_type="Text"), "$.evidence_modality_type: 'Text' is not of type 'array'"),
        (lambda d: d["text_quotes"][1].pop("text"), "$.text_quotes[1]: 'text' is a required property"),
        (lambda d: d["img_quotes"][0].pop("img_description"), "$.img_quotes[0]: 'img_description' is a required property"),
        (lambda d: d["img_quotes"][1].pop("img_path"), "$.img_quotes[1]: 'img_path' is a required property"),
        (lambda d: d["text_quotes"][0].update(type="image"), "$.text_quotes[0].type: 'text' was expected"),
        (lambda d: d["img_quotes"][0].update(type="text"), "$.img_quotes[0].type: 'image' was expected"),
        (lambda d: d["text_quotes"][2].update(page_id=-1), "$.text_quotes[2].page_id: -1 is less than the minimum of 0"),
        (lambda d: d["img_quotes"][1].update(layout_id=1.5), "$.img_quotes[1].layout_id: 1.5 is not of type 'integer'"),
        (lambda d: d["gold_quotes"].append("figure1"), "$.gold_quotes[3]: 'figure1' does not match '^(text|image)[1-9][0-9]*$'"),
        (lambda d: d["gold_quotes"].append("text0"), "$.gold_quotes[3]: 'text0' does not match '^(text|image)[1-9][0-9]*$'"),
        (lambda d: d["gold_quotes"].append("text1"), "$.gold_quotes: ['text1', 'text3', 'image1', 'text1'] has non-unique elements"),
    ],
)
def test_schema_errors_name_the_path(change, expected: str) -> None:
    errors = validate_line(mutated(change))
    assert errors == [expected]


def test_wrong_quote_id_prefix_reports_pattern_numbering_and_dangling_gold() -> None:
    errors = validate_line(mutated(lambda d: d["text_quotes"][0].update(quote_id="image1")))
    assert errors == [
        "$.text_quotes[0].quote_id: 'image1' does not match '^text\\\\d+$'",
        "$.text_quotes: quote_ids must be text1..text3, each exactly once: missing text1; unexpected 'image1'",
        "$.gold_quotes[0]: gold label 'text1' is not among the candidate quote_ids",
    ]


def test_gold_label_not_among_candidates() -> None:
    errors = validate_line(mutated(lambda d: d["gold_quotes"].append("image3")))
    assert errors == ["$.gold_quotes[3]: gold label 'image3' is not among the candidate quote_ids"]


def relabel(quotes: str, index: int, quote_id: str, gold: list[str]):
    """A change giving quote ``index`` of the list ``quotes`` another quote_id, with new gold labels."""

    def change(d: dict) -> None:
        d[quotes][index]["quote_id"] = quote_id
        d["gold_quotes"] = gold

    return change


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            relabel("text_quotes", 2, "text1", ["text1"]),
            [
                "$.text_quotes[2].quote_id: duplicate quote_id 'text1' (first at $.text_quotes[0])",
                "$.text_quotes: quote_ids must be text1..text3, each exactly once: missing text3",
            ],
            id="duplicate_quote_ids",
        ),
        pytest.param(
            relabel("img_quotes", 1, "image1", ["image2"]),
            [
                "$.img_quotes[1].quote_id: duplicate quote_id 'image1' (first at $.img_quotes[0])",
                "$.img_quotes: quote_ids must be image1..image2, each exactly once: missing image2",
                "$.gold_quotes[0]: gold label 'image2' is not among the candidate quote_ids",
            ],
            id="duplicate_image_quote_ids_make_gold_dangling",
        ),
        pytest.param(
            relabel("text_quotes", 2, "text4", ["text1"]),
            ["$.text_quotes: quote_ids must be text1..text3, each exactly once: missing text3; unexpected 'text4'"],
            id="numbering_must_be_consecutive_from_one",
        ),
        pytest.param(
            relabel("text_quotes", 0, "text01", ["text3"]),
            ["$.text_quotes: quote_ids must be text1..text3, each exactly once: missing text1; unexpected 'text01'"],
            id="zero_padded_quote_id_passes_the_pattern_but_not_the_numbering",
        ),
    ],
)
def test_quote_id_errors(change, expected: list[str]) -> None:
    assert validate_line(mutated(change)) == expected


def test_order_of_quotes_is_not_checked() -> None:
    line = valid_line()
    line["text_quotes"].reverse()
    assert validate_line(line) == []


def test_not_an_object() -> None:
    assert validate_line([1, 2]) == ["$: [1, 2] is not of type 'object'"]


def test_validate_jsonl_names_file_and_line(tmp_path: Path) -> None:
    second = valid_line()
    second["q_id"] = 8
    missing = valid_line()
    missing["q_id"] = 9
    del missing["domain"]
    path = tmp_path / "mmdocrag.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps(valid_line()),
                json.dumps(second),
                "",
                "{broken",
                json.dumps(missing),
                json.dumps(valid_line()),  # q_id 7 again
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    assert validate_jsonl(path) == [
        f"{path}:4: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{path}:5: $: 'domain' is a required property",
        f"{path}:6: $.q_id: duplicate q_id 7 (first on line 1)",
    ]


def test_validate_jsonl_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps(valid_line(), ensure_ascii=False) + "\n", encoding="utf-8")
    assert validate_jsonl(path) == []
