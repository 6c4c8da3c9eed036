"""Python's cyclic garbage collector, paced for ragprep's processes.

CPython 3.11 runs a young-generation collection every 700 net container allocations. ragprep's processes
allocate millions of short-lived containers (pydantic models, Arrow rows turned into dicts, Prefect's task and
state objects, SQLAlchemy rows in the Prefect API server) and keep large long-lived ones (tables, indexes,
imported modules), so at the default pace the collector keeps re-walking survivors: measured with ``gc.callbacks``
it took 1.2 of 19.5 CPU s of a ``ragprep run sample_docs`` process, 1.4-1.6 of 7.8-8.7 CPU s of a Prefect API
server's start, and 3.6-4.8 of 30 CPU s of a reference-matching evaluation.

:func:`pace_collector` raises the young threshold to :data:`YOUNG_ALLOCATIONS` and the older generations' to
:data:`OLDER_COLLECTIONS`: cycles are still collected, in fewer and larger passes (same runs, same outputs; at most
a few MB more garbage waiting at a time). It runs at the entry points: the CLI callback, the ``flows`` package
(flow-run processes) and the Prefect API servers ragprep starts (:data:`API_SERVER_MAIN`).
"""

from __future__ import annotations

import gc

YOUNG_ALLOCATIONS = 50_000
"""Net container allocations between two young-generation collections (CPython's default: 700)."""
OLDER_COLLECTIONS = 20
"""Collections of the next younger generation between two collections of generation 1 and of generation 2 (10)."""

API_SERVER_MAIN = "import runpy, ragprep.pygc; ragprep.pygc.pace_collector(); runpy.run_module('uvicorn', run_name='__main__')"
"""``python -c`` code that starts uvicorn (its arguments follow on the command line) with the collector paced."""


def pace_collector() -> None:
    """Pace this process's collector (see the module docstring); a threshold already set higher is kept."""
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_ALLOCATIONS), max(older, OLDER_COLLECTIONS), max(oldest, OLDER_COLLECTIONS))
