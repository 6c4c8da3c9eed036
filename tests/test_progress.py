"""Rich progress on a terminal; nothing from the null sink."""

from __future__ import annotations

import io

from rich.console import Console

from ragprep.progress import NullProgress, RichProgress


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
