"""An error the user can fix is one log line, without its traceback, wherever a flow runs (CLI or worker).

Prefect logs a failed task, then the failed flow, each with the full traceback (two or three per failed run in the
UI). For a :class:`~ragprep.errors.RagprepError`, a missing file or a full disk the message already names the file
and the fix, so :class:`UserErrorsOnOneLine` drops the traceback from those records; every other error keeps it.
"""

from __future__ import annotations

import logging

from ragprep.errors import RagprepError
from ragprep.storage import is_disk_full

RUN_LOGGERS = ("prefect.task_runs", "prefect.flow_runs")


class UserErrorsOnOneLine(logging.Filter):
    """Drops the traceback of a record whose exception the user can fix (the message says what to do)."""

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: D102 - the logging hook
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, (RagprepError, FileNotFoundError)) or (exc is not None and is_disk_full(exc)):
            record.exc_info = None
            record.exc_text = None
        return True


def quiet_user_errors() -> None:
    """Install the filter on Prefect's task-run and flow-run loggers (once per process)."""
    for name in RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, UserErrorsOnOneLine) for f in logger.filters):
            logger.addFilter(UserErrorsOnOneLine())
