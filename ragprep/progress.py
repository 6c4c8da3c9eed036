"""Progress reporting that the CLI chooses and the pipeline steps feed.

On a terminal the CLI installs a rich progress display (one bar for documents, one
per document for its slides/pages); elsewhere (the Prefect UI, CI, a pipe) the steps'
plain log lines are all there is. Steps only ever see ``current()``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)


class ProgressSink(Protocol):
    def begin_run(self, n_documents: int) -> None:
        """Start showing a run of ``n_documents`` documents."""

    def begin_document(self, name: str) -> Callable[[int, int], None]:
        """Start showing one document; the callback reports (done, total) of its slides/pages."""

    def end_document(self, name: str, status: str) -> None:
        """Finish showing one document, with its status."""

    def end_run(self) -> None:
        """Finish showing the run."""


class NullProgress:
    """Shows nothing; log lines carry the progress."""

    def begin_run(self, n_documents: int) -> None:
        """Show nothing."""
        pass

    def begin_document(self, name: str) -> Callable[[int, int], None]:
        """A callback that ignores (done, total)."""
        return lambda done, total: None

    def end_document(self, name: str, status: str) -> None:
        """Show nothing."""
        pass

    def end_run(self) -> None:
        """Show nothing."""
        pass


class RichProgress:
    """Live bars on a terminal: documents overall, and slides/pages per document."""

    def __init__(self, console: Console | None = None) -> None:
        self._progress = Progress(
            TextColumn("{task.description}", justify="left"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            transient=False,
        )
        self._overall: TaskID | None = None
        self._tasks: dict[str, TaskID] = {}
        self._lock = threading.Lock()

    def begin_run(self, n_documents: int) -> None:
        """Start the live display with the overall documents bar."""
        self._progress.start()
        self._overall = self._progress.add_task("[bold]documents", total=n_documents, unit="")

    def begin_document(self, name: str) -> Callable[[int, int], None]:
        """Add a bar for the document; the callback sets it to (done, total) units."""
        with self._lock:
            task = self._progress.add_task(f"  {name}", total=None, unit="units")
            self._tasks[name] = task

        def advance(done: int, total: int) -> None:
            self._progress.update(task, completed=done, total=total)

        return advance

    def end_document(self, name: str, status: str) -> None:
        """Stop the document's bar, showing its status, and advance the documents bar."""
        with self._lock:
            task = self._tasks.pop(name, None)
        if task is not None:
            self._progress.update(task, unit=status)
            self._progress.stop_task(task)
        if self._overall is not None:
            self._progress.advance(self._overall)

    def end_run(self) -> None:
        """Stop the live display."""
        self._progress.stop()


_current: ProgressSink = NullProgress()


def current() -> ProgressSink:
    """The installed progress sink (a ``NullProgress`` until another is installed)."""
    return _current


def install(sink: ProgressSink) -> None:
    """Make ``sink`` the progress sink that ``current()`` returns."""
    global _current
    _current = sink
