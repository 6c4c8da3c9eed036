"""Progress reporting that the CLI chooses and the pipeline steps feed.

On a terminal the CLI installs a rich progress display (one bar for documents, one
per document for its slides/pages, one per stage after ingest: describe ... negatives,
dataset, index); elsewhere (the Prefect UI, CI, a pipe) the steps' log lines are all
there is, at most one every ``LOG_EVERY_S`` seconds per stage (``Throttled``). Steps only
ever see ``current()``.
"""

from __future__ import annotations

import threading
import time
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

    def begin_stage(self, name: str, unit: str) -> Callable[[int, int], None]:
        """Start showing one stage (or one phase of it); the callback reports (done, total) ``unit``."""

    def end_stage(self, name: str, status: str) -> None:
        """Finish showing one stage, with its status."""


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

    def begin_stage(self, name: str, unit: str) -> Callable[[int, int], None]:
        """A callback that ignores (done, total)."""
        return lambda done, total: None

    def end_stage(self, name: str, status: str) -> None:
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
        self._stages: dict[str, TaskID] = {}
        self._live = False
        self._lock = threading.Lock()

    def _start(self) -> None:
        if not self._live:
            self._progress.start()
            self._live = True

    def _stop(self) -> None:
        """Stop the display, leaving its last frame on screen, and forget its bars (the next start shows only its own)."""
        if self._live:
            self._progress.stop()
            self._live = False
        for task in list(self._progress.task_ids):
            self._progress.remove_task(task)
        self._tasks.clear()

    def begin_run(self, n_documents: int) -> None:
        """Start the live display with the overall documents bar."""
        with self._lock:
            self._start()
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
        """Stop the live display (a later stage starts it again)."""
        with self._lock:
            self._overall = None
            if not self._stages:
                self._stop()

    def begin_stage(self, name: str, unit: str) -> Callable[[int, int], None]:
        """Add a bar for the stage (starting the display when ingest has stopped it); the callback sets (done, total)."""
        with self._lock:
            self._start()
            task = self._progress.add_task(f"[bold]{name}", total=None, unit=unit)
            self._stages[name] = task

        def advance(done: int, total: int) -> None:
            self._progress.update(task, completed=done, total=total)

        return advance

    def end_stage(self, name: str, status: str) -> None:
        """Stop the stage's bar, showing its status; the display stops when no stage or run is left."""
        with self._lock:
            task = self._stages.pop(name, None)
            if task is not None:
                self._progress.update(task, unit=status)
                self._progress.stop_task(task)
            if not self._stages and self._overall is None:
                self._stop()


LOG_EVERY_S = 5.0
"""Progress log lines of one stage come at most this often (plus the last one)."""


class Throttled:
    """A ``(done, total)`` callback that passes a line to ``log`` at most every ``every_s`` seconds, and always the last.

    ``log(done, total)`` writes the line (a Prefect run logger in the tasks); ``clock`` is for tests."""

    def __init__(
        self, log: Callable[[int, int], None], every_s: float = LOG_EVERY_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._log = log
        self._every = every_s
        self._clock = clock
        self._last: float | None = None
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        """Log ``done/total`` if the last line is old enough or this is the last tick."""
        now = self._clock()
        with self._lock:
            if done < total and self._last is not None and now - self._last < self._every:
                return
            self._last = now
        self._log(done, total)


_current: ProgressSink = NullProgress()


def current() -> ProgressSink:
    """The installed progress sink (a ``NullProgress`` until another is installed)."""
    return _current


def install(sink: ProgressSink) -> None:
    """Make ``sink`` the progress sink that ``current()`` returns."""
    global _current
    _current = sink
