"""Rich progress on a terminal (stage bars after ingest too); nothing from the null sink; throttled log lines; every
stage of a pipeline run reports progress."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from ragprep.progress import NullProgress, RichProgress, Throttled


def test_rich_progress_shows_documents_and_units():
    buffer = io.StringIO()
    sink = RichProgress(Console(file=buffer, force_terminal=True, width=120))
    sink.begin_run(2)
    advance = sink.begin_document("deck.pptx")
    for done in range(1, 5):
        advance(done, 4)
    sink.end_document("deck.pptx", "ok")
    sink.end_run()
    out = buffer.getvalue()
    assert "documents" in out and "deck.pptx" in out and "4/4" in out and "1/2" in out


def test_null_progress_is_silent():
    sink = NullProgress()
    sink.begin_run(1)
    sink.begin_document("x")(1, 1)
    sink.end_document("x", "ok")
    sink.end_run()


def test_stage_bars_show_after_ingest_stopped_the_display():
    """Ingest's end_run stopped the live display; the stages after it must bring it back."""
    buffer = io.StringIO()
    sink = RichProgress(Console(file=buffer, force_terminal=True, width=120))
    sink.begin_run(1)
    sink.begin_document("deck.pptx")(1, 1)
    sink.end_document("deck.pptx", "ok")
    sink.end_run()
    before = len(buffer.getvalue())
    advance = sink.begin_stage("negatives", "documents")
    advance(3, 7)
    sink.end_stage("negatives", "102 sets")
    shown = buffer.getvalue()[before:]
    assert "negatives" in shown and "3/7" in shown and "102 sets" in shown
    assert "deck.pptx" not in shown  # ingest's bars were left on screen once, not drawn again with each stage


def test_throttled_logs_first_last_and_at_most_every_interval():
    now = {"t": 0.0}
    lines = []
    log = Throttled(lambda done, total: lines.append((done, total)), every_s=5.0, clock=lambda: now["t"])
    for done in range(1, 101):
        now["t"] = done * 0.2  # 100 ticks over 20 s
        log(done, 100)
    assert lines[0] == (1, 100) and lines[-1] == (100, 100)
    assert 4 <= len(lines) <= 6  # one every 5 s, plus the last
    times = [d * 0.2 for d, _ in lines[:-1]]
    assert all(b - a >= 5.0 for a, b in zip(times, times[1:]))


@pytest.mark.slow
def test_every_stage_reports_progress_and_negatives_logs(pipeline_run):
    """The session's pipeline_flow run over sample_docs/ (conftest ``pipeline_run``, recorded while it ran)."""
    sink, logger = pipeline_run.sink, pipeline_run.logger

    stages = ["describe", "correct", "headers", "qa", "judge", "quotes", "negatives", "negatives: embedding", "dataset"]
    for stage in stages:
        kinds = [e[0] for e in sink.events if e[1:2] == (stage,)]
        assert kinds[0] == "begin_stage" and kinds[-1] == "end_stage" and "advance" in kinds, (stage, kinds)
    documents = [e for e in sink.events if e[0] == "end_document"]
    assert len(documents) == 6 and ("begin_run", 6) in sink.events and ("end_run",) in sink.events
    done = [e for e in sink.events if e[:2] == ("advance", "negatives")]
    assert done[-1][2:] == (done[-1][3], done[-1][3]) and done[-1][3] == 6  # per document, up to all of them
    lines = [line for line in logger.lines if line.startswith("negatives: documents")]
    assert lines and lines[-1] == "negatives: documents 6/6"
    assert any(line.startswith("negatives: embedding: quote texts") for line in logger.lines)
