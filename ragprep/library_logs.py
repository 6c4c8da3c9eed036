"""Library loggers at a level fit for ragprep's output: no library's DEBUG lines in a normal run.

Some libraries set their own logger's level when they are imported (bm25s sets ``bm25s`` to DEBUG), which overrides
the root level Prefect configures: their debug lines then reach Prefect's console handler ("DEBUG | bm25s - Building
index from tokens" in a piped run). :func:`quiet_library_loggers` raises every such logger outside ragprep and
Prefect to WARNING; the modules that import such a library call it right after the import, and the CLI calls it
before a command runs (for the libraries imported by then).
"""

from __future__ import annotations

import logging

OWN = ("ragprep", "prefect")
"""Logger name prefixes left as configured (ragprep's own, Prefect's: their levels are settings)."""


def quiet_library_loggers() -> list[str]:
    """Every imported library logger whose own level is below INFO, set to WARNING; returns their names."""
    raised = []
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if not isinstance(logger, logging.Logger) or name.split(".")[0] in OWN:
            continue
        if logging.NOTSET < logger.level < logging.INFO:
            logger.setLevel(logging.WARNING)
            raised.append(name)
    return raised
