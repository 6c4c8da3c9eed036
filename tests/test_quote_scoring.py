"""MMDocRAG quote selection scoring (tasks/evaluate/citations.py, scoring.py, files.py): every citation
pitfall citations.py documents, and scores checked against numbers computed by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.evaluate.citations import Citations, extract_citations
from tasks.evaluate.files import ScoringInputError, score_files
from tasks.evaluate.scoring import score_corpus, score_item

HAND_ANSWER = "As shown [1] and [2020] ... ![](image2) [image3]"
HAND_GOLD = ["text1", "text3", "image2"]


def cites(answer: str, n_text: int | None = 10, n_image: int | None = 12) -> tuple[set[str], set[str]]:
    c = extract_citations(answer, n_text, n_image)
    return set(c.text), set(c.image)


# --- extract_citations ------------------------------------------------------------------------


def test_hand_example_citations() -> None:
    c = extract_citations(HAND_ANSWER, n_text=5, n_image=3)
    assert c == Citations(text=("text1",), image=("image2", "image3"), ignored=("2020",))
    assert c.labels == {"text1", "image2", "image3"}


@pytest.mark.parametrize(
    ("answer", "n_text", "text", "ignored"),
    [
        ("Sales rose in [2020].", None, set(), ("2020",)),  # year, no bound given
        ("Sales rose in [2020].", 10, set(), ("2020",)),
        ("See [0].", 10, set(), ("0",)),  # numbering starts at 1
        ("See [11].", 10, set(), ("11",)),  # beyond the candidate set
        ("See [11].", None, {"text11"}, ()),  # no bound: up to 99 count
        ("See [100].", None, set(), ("100",)),
        ("A ratio of [12.5] percent.", 10, set(), ()),  # not a citation list at all
        ("[see 3] and [2020, p. 4] and []", 10, set(), ()),
        ("[1, 3]", 10, {"text1", "text3"}, ()),
        ("[1;3]", 10, {"text1", "text3"}, ()),
        ("[1, 2020]", 10, {"text1"}, ("2020",)),  # items filtered one by one
        ("[12,5]", 10, {"text5"}, ("12",)),  # documented limit: a decimal comma reads as a list
        ("[1-3]", 10, {"text1", "text2", "text3"}, ()),
        ("[2\u20134]", 10, {"text2", "text3", "text4"}, ()),  # en dash
        ("[5-5]", 10, {"text5"}, ()),
        ("[2-20]", 10, set(), ("2-20",)),  # one end invalid: whole range dropped
        ("[1-2020]", None, set(), ("1-2020",)),
        ("[2019-2020]", None, set(), ("2019-2020",)),
        ("[3-1]", 10, set(), ("3-1",)),  # reversed
        ("[0-2]", 10, set(), ("0-2",)),
        ("[1][2]", 10, {"text1", "text2"}, ()),
        ("[1] [2][3]", 10, {"text1", "text2", "text3"}, ()),
        ("[text3] and [Text 4] and [TEXT5]", 10, {"text3", "text4", "text5"}, ()),
        ("[text1-3]", 10, {"text1", "text2", "text3"}, ()),
        ("(1) first, (2) second", 10, set(), ()),  # enumerations are not citations
        ("(text2)", 10, {"text2"}, ()),
        ("(text 2, text 4)", 10, {"text2", "text4"}, ()),
    ],
)
def test_text_citation_rules(answer: str, n_text: int | None, text: set[str], ignored: tuple[str, ...]) -> None:
    c = extract_citations(answer, n_text=n_text)
    assert set(c.text) == text
    assert c.image == ()
    assert c.ignored == ignored


@pytest.mark.parametrize(
    ("answer", "image"),
    [
        ("![](image2)", {"image2"}),
        ("![a chart](image2)", {"image2"}),
        ("![](IMAGE2)", {"image2"}),  # case-insensitive
        ('![Sales](image2 "Figure 3")', {"image2"}),  # title allowed
        ("![](<image2>)", {"image2"}),
        ("[image1]", {"image1"}),
        ("[Image 1]", {"image1"}),
        ("(image1)", {"image1"}),
        ("(Image 1)", {"image1"}),
        ("[image1, image3]", {"image1", "image3"}),
        ("[image1-3]", {"image1", "image2", "image3"}),
        ("[image2-image4]", {"image2", "image3", "image4"}),
        ("[see this](image4)", {"image4"}),  # link without "!"
        ("![](image12)", {"image12"}),  # never image1
        ("![](image1)![](image10)", {"image1", "image10"}),
        ("![](chart.png)", set()),  # not a label
        ("![](image2.png)", set()),
        ("[image0]", set()),
    ],
)
def test_image_citation_rules(answer: str, image: set[str]) -> None:
    text, got = cites(answer)
    assert got == image
    assert text == set()


def test_multi_digit_image_beyond_bound_is_dropped_not_truncated() -> None:
    c = extract_citations("![](image12) and [image13]", n_text=10, n_image=5)
    assert c.image == ()
    assert c.ignored == ("image12", "image13")


def test_images_beyond_n_image_are_ignored_others_kept() -> None:
    c = extract_citations("![](image2) [image4] (IMAGE9) [Image 7]", n_text=10, n_image=4)
    assert c.image == ("image2", "image4")
    assert c.ignored == ("image9", "image 7")  # once each, in order of appearance


def test_text_inside_image_markdown_is_not_a_text_citation() -> None:
    assert cites("![see [3] here](image2)") == (set(), {"image2"})
    # alt text holding a label is not read either
    assert cites("![image3](image2)") == (set(), {"image2"})


def test_markdown_links_and_footnotes_are_not_citations() -> None:
    assert cites("read [the report](https://example.com/r.pdf)") == (set(), set())
    assert cites("read [3](https://example.com/3)") == (set(), set())
    assert cites("a claim[^1]\n\n[^1]: a note") == (set(), set())
    # a link next to a real citation leaves the citation alone
    assert cites("[2] and [docs](http://x/image3)") == ({"text2"}, set())


def test_citations_with_a_space_before_parentheses_are_not_links() -> None:
    assert cites("[1] (image1)") == ({"text1"}, {"image1"})


def test_code_spans_are_not_special() -> None:
    assert cites("the value `[2]` and ``![](image1)``") == ({"text2"}, {"image1"})


@pytest.mark.parametrize(
    ("answer", "text", "image"),
    [
        ("As text3 says, and image2 shows", {"text3"}, {"image2"}),
        ("image2에서 보듯이 text4의 수치", {"text4"}, {"image2"}),  # Korean particles attached
        ("TEXT3.", {"text3"}, set()),
        ("Image 2 shows a decline; text 3 agrees", set(), set()),  # with a space: prose
        ("my_text3 and image2a and subtext4", set(), set()),  # part of a longer word
        ("[text1-image3]", {"text1"}, {"image3"}),  # mixed range: no expansion, ends are bare labels
    ],
)
def test_bare_labels(answer: str, text: set[str], image: set[str]) -> None:
    assert cites(answer) == (text, image)


def test_labels_are_sorted_numerically_and_deduplicated() -> None:
    c = extract_citations("[10] [2] [2] text2 ![](image10) [image9] (image9)", n_text=12, n_image=12)
    assert c.text == ("text2", "text10")
    assert c.image == ("image9", "image10")


def test_bad_bounds_raise() -> None:
    with pytest.raises(ValueError, match="n_text"):
        extract_citations("[1]", n_text=-1)


# --- score_item --------------------------------------------------------------------------------


def test_hand_example_scores() -> None:
    s = score_item(extract_citations(HAND_ANSWER, n_text=5, n_image=3), HAND_GOLD)
    # text: predicted {text1}, gold {text1, text3}
    assert (s.text.n_predicted, s.text.n_gold, s.text.n_correct) == (1, 2, 1)
    assert s.text.precision == 1.0
    assert s.text.recall == 0.5
    assert s.text.f1 == pytest.approx(2 / 3)
    # image: predicted {image2, image3}, gold {image2}
    assert s.image.precision == 0.5
    assert s.image.recall == 1.0
    assert s.image.f1 == pytest.approx(2 / 3)
    # all: predicted {text1, image2, image3}, gold {text1, text3, image2}
    assert s["all"].precision == pytest.approx(2 / 3)
    assert s["all"].recall == pytest.approx(2 / 3)
    assert s["all"].f1 == pytest.approx(2 / 3)


def test_both_empty_modality_is_not_scored() -> None:
    s = score_item({"text1"}, ["text1"])
    assert not s.image.scored
    assert (s.image.precision, s.image.recall, s.image.f1) == (None, None, None)
    assert (s.text.precision, s.text.recall, s.text.f1) == (1.0, 1.0, 1.0)


def test_nothing_predicted_scores_zero() -> None:
    s = score_item(set(), ["image1"])
    assert s.image.scored
    assert (s.image.precision, s.image.recall, s.image.f1) == (0.0, 0.0, 0.0)
    assert not s.text.scored


def test_predictions_without_gold_score_zero() -> None:
    s = score_item({"text1", "image1"}, ["text1"])
    assert (s.image.precision, s.image.recall, s.image.f1) == (0.0, 0.0, 0.0)
    assert s["all"].precision == 0.5
    assert s["all"].recall == 1.0


def test_no_overlap_f1_is_zero_not_division_error() -> None:
    s = score_item({"text2"}, ["text1"])
    assert (s.text.precision, s.text.recall, s.text.f1) == (0.0, 0.0, 0.0)


def test_labels_are_normalized_and_validated() -> None:
    s = score_item({" Text1", "IMAGE2"}, ["text1", "image2", "image2"])
    assert s["all"].n_gold == 2
    assert s["all"].f1 == 1.0
    with pytest.raises(ValueError, match="fig1"):
        score_item({"fig1"}, ["text1"])
    with pytest.raises(ValueError, match="text0"):
        score_item(set(), ["text0"])
    with pytest.raises(TypeError, match="expected a string"):
        score_item({1}, ["text1"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="extract_citations"):
        score_item("[1]", ["text1"])  # type: ignore[arg-type]


# --- score_corpus ------------------------------------------------------------------------------


def three_items():
    a = score_item(extract_citations(HAND_ANSWER, 5, 3), HAND_GOLD)  # text (1,2,1) image (2,1,1) all (3,3,2)
    b = score_item({"text2", "text4"}, ["text2"])  # text (2,1,1), image unscored, all (2,1,1)
    c = score_item(set(), ["image1"])  # text unscored, image (0,1,0), all (0,1,0)
    return [a, b, c]


def assert_three_item_corpus(corpus) -> None:
    assert corpus.n_items == 3
    text, image, both = corpus.text, corpus.image, corpus["all"]
    assert (text.n_scored, text.n_unscored) == (2, 1)
    assert (text.n_predicted, text.n_gold, text.n_correct) == (3, 3, 2)
    assert text.micro.precision == pytest.approx(2 / 3)
    assert text.micro.recall == pytest.approx(2 / 3)
    assert text.micro.f1 == pytest.approx(2 / 3)
    assert text.macro.precision == pytest.approx((1 + 0.5) / 2)
    assert text.macro.recall == pytest.approx((0.5 + 1) / 2)
    assert text.macro.f1 == pytest.approx(2 / 3)

    assert (image.n_scored, image.n_unscored) == (2, 1)
    assert (image.n_predicted, image.n_gold, image.n_correct) == (2, 2, 1)
    assert (image.micro.precision, image.micro.recall, image.micro.f1) == (0.5, 0.5, 0.5)
    assert image.macro.precision == pytest.approx((0.5 + 0) / 2)
    assert image.macro.recall == pytest.approx((1 + 0) / 2)
    assert image.macro.f1 == pytest.approx((2 / 3 + 0) / 2)

    assert (both.n_scored, both.n_unscored) == (3, 0)
    assert (both.n_predicted, both.n_gold, both.n_correct) == (5, 5, 3)
    assert both.micro.f1 == pytest.approx(0.6)
    assert both.macro.precision == pytest.approx((2 / 3 + 1 / 2 + 0) / 3)
    assert both.macro.recall == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert both.macro.f1 == pytest.approx((2 / 3 + 2 / 3 + 0) / 3)


def test_corpus_micro_and_macro_by_hand() -> None:
    assert_three_item_corpus(score_corpus(three_items()))


def test_empty_corpus_has_no_averages() -> None:
    corpus = score_corpus([])
    assert corpus.n_items == 0
    assert corpus["all"].micro.f1 is None
    assert corpus["all"].macro.f1 is None
    json.dumps(corpus.as_dict())


def test_modality_never_scored_has_no_macro() -> None:
    corpus = score_corpus([score_item({"text1"}, ["text1"])])
    assert corpus.image.n_scored == 0
    assert corpus.image.macro.f1 is None
    assert corpus.image.micro.f1 is None


# --- score_files -------------------------------------------------------------------------------


def gold_line(q_id: int, n_text: int, n_image: int, gold: list[str]) -> dict:
    return {
        "q_id": q_id,
        "question": f"question {q_id}",
        "text_quotes": [
            {"quote_id": f"text{i}", "type": "text", "text": f"t{i}", "page_id": 0, "layout_id": i}
            for i in range(1, n_text + 1)
        ],
        "img_quotes": [
            {
                "quote_id": f"image{i}",
                "type": "image",
                "img_path": f"images/{i}.jpg",
                "img_description": f"figure {i}",
                "page_id": 1,
                "layout_id": i,
            }
            for i in range(1, n_image + 1)
        ],
        "gold_quotes": gold,
    }


def write_jsonl(path: Path, lines: list) -> Path:
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines), encoding="utf-8")
    return path


@pytest.fixture
def gold_file(tmp_path: Path) -> Path:
    return write_jsonl(
        tmp_path / "gold.jsonl",
        [gold_line(1, 5, 3, HAND_GOLD), gold_line(2, 5, 2, ["text2"]), gold_line(3, 5, 2, ["image1"])],
    )


def test_score_files_by_hand(tmp_path: Path, gold_file: Path) -> None:
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [
            {"q_id": 1, "answer": HAND_ANSWER},
            "",  # blank lines are skipped
            {"q_id": "2", "selected": ["text2", "TEXT4"]},  # q_id matched as a string
            {"q_id": 99, "answer": "[1]"},
        ],
    )
    result = score_files(preds, gold_file)
    assert_three_item_corpus(result.corpus)
    assert result.missing_predictions == (3,)
    assert result.unmatched_predictions == (99,)
    assert result.out_of_candidates == {}
    by_q = {r.q_id: r for r in result.items}
    assert by_q[1].predicted == ("text1", "image2", "image3")
    assert by_q[1].ignored == ("2020",)
    assert by_q[3].missing_prediction and by_q[3].predicted == ()
    json.dumps(result.as_dict())


def test_answers_are_bounded_by_each_items_candidates(tmp_path: Path, gold_file: Path) -> None:
    preds = write_jsonl(tmp_path / "p.jsonl", [{"q_id": 2, "answer": "[2] [6] ![](image3)"}])
    item = {r.q_id: r for r in score_files(preds, gold_file).items}[2]
    assert item.predicted == ("text2",)  # 5 text and 2 image candidates
    assert item.ignored == ("6", "image3")


def test_selected_beyond_candidates_is_reported_and_wrong(tmp_path: Path, gold_file: Path) -> None:
    preds = write_jsonl(tmp_path / "p.jsonl", [{"q_id": 2, "selected": ["text2", "text9"]}])
    result = score_files(preds, gold_file)
    assert result.out_of_candidates == {"2": ("text9",)}
    item = {r.q_id: r for r in result.items}[2]
    assert item.score.text.precision == 0.5


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ({"answer": "[1]"}, "missing 'q_id'"),
        ({"q_id": 1}, "exactly one of 'answer'"),
        ({"q_id": 1, "answer": "[1]", "selected": []}, "exactly one of 'answer'"),
        ({"q_id": 1, "answer": 3}, "'answer' must be a string"),
        ({"q_id": 1, "selected": "text1"}, "'selected' must be a list"),
        ({"q_id": 1, "selected": ["text1", "fig2"]}, "non-labels ['fig2']"),
        ({"q_id": True, "answer": ""}, "'q_id' must be an int or a string"),
    ],
)
def test_malformed_prediction_lines_name_file_and_line(tmp_path: Path, gold_file: Path, line, message: str) -> None:
    preds = write_jsonl(tmp_path / "p.jsonl", [{"q_id": 2, "answer": ""}, line])
    with pytest.raises(ScoringInputError) as info:
        score_files(preds, gold_file)
    assert len(info.value.errors) == 1
    assert info.value.errors[0].startswith(f"{preds}:2: ")
    assert message in info.value.errors[0]


def test_duplicate_prediction_q_id(tmp_path: Path, gold_file: Path) -> None:
    preds = write_jsonl(tmp_path / "p.jsonl", [{"q_id": 1, "answer": ""}, {"q_id": 2, "answer": ""}, {"q_id": 1, "answer": ""}])
    with pytest.raises(ScoringInputError, match=r"p\.jsonl:3: duplicate q_id 1 \(first on line 1\)"):
        score_files(preds, gold_file)


def test_malformed_gold_lines_are_all_reported(tmp_path: Path) -> None:
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            gold_line(1, 2, 1, ["text1"]),
            {"q_id": 2, "text_quotes": [], "gold_quotes": []},  # img_quotes missing
            gold_line(3, 2, 1, ["text3"]),  # beyond the 2 text quotes
            gold_line(4, 2, 1, ["figure1", 2]),
            gold_line(1, 2, 1, ["text2"]),
        ],
    )
    preds = write_jsonl(tmp_path / "p.jsonl", [])
    with pytest.raises(ScoringInputError) as info:
        score_files(preds, gold)
    assert info.value.errors == [
        f"{gold}:2: 'img_quotes' must be a list (missing)",
        f"{gold}:3: gold_quotes[0] = 'text3' but text_quotes has only 2 quote(s)",
        f"{gold}:4: gold_quotes[0] = 'figure1' is not a label like 'text1' or 'image2'",
        f"{gold}:4: gold_quotes[1] = 2 is not a label like 'text1' or 'image2'",
        f"{gold}:5: duplicate q_id 1 (first on line 1)",
    ]
    assert str(gold) in str(info.value)


def test_empty_predictions_file_scores_everything_as_missing(tmp_path: Path, gold_file: Path) -> None:
    result = score_files(write_jsonl(tmp_path / "p.jsonl", []), gold_file)
    assert result.missing_predictions == (1, 2, 3)
    assert result.corpus["all"].micro.recall == 0.0
    assert result.corpus["all"].macro.f1 == 0.0
