"""Where per-document work runs: the flow's thread pool, or the processes of a Dask cluster.

``settings.task_runner`` chooses, at the time a flow runs (CLI ``--task-runner dask``, ``RAGPREP_TASK_RUNNER=dask``
for a deployment): ``threads`` submits to the flow's own ``ThreadPoolTaskRunner``; ``dask`` opens a
``prefect_dask.DaskTaskRunner`` for the per-document tasks, on the cluster at ``settings.dask_address`` or on a
local cluster of ``settings.workers`` processes with one thread each (python-pptx, PyMuPDF and OCR hold the GIL,
so only processes scale with cores). The local cluster binds 127.0.0.1 only and runs no dashboard (no bokeh
import; the scheduler's health endpoint takes a free loopback port instead of :8787).

Everything a task takes and returns (settings, document refs, outcomes) is pydantic, so it pickles to the workers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from ragprep import progress
from ragprep.errors import RagprepError
from ragprep.settings import Settings


class DaskUnavailableError(RagprepError):
    """``task_runner = dask`` without the prefect-dask package."""


def local_cluster_kwargs(workers: int) -> dict[str, Any]:
    """The ``LocalCluster`` of a ``dask`` run without an address: ``workers`` processes, 1 thread each, on loopback,
    no dashboard. The worker processes report their task runs to this process's Prefect API (the temporary server
    of a CLI run included), so they start none of their own."""
    from prefect.context import FlowRunContext
    from prefect.settings import PREFECT_API_URL

    flow_run = FlowRunContext.get()
    api_url = PREFECT_API_URL.value() or (flow_run.client.api_url if flow_run is not None else None)
    return {
        "n_workers": workers, "threads_per_worker": 1, "processes": True, "host": "127.0.0.1",
        "dashboard_address": None, "scheduler_port": 0, "silence_logs": logging.ERROR,
        # The scheduler serves /health and /metrics even without its dashboard, by default on :8787; keep that on
        # a free loopback port, with no bokeh dashboard.
        "scheduler_kwargs": {"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        "env": {"DASK_LOGGING__DISTRIBUTED": "warning", **({"PREFECT_API_URL": str(api_url)} if api_url else {})},
    }


def dask_task_runner(settings: Settings):
    """A ``DaskTaskRunner`` for ``settings`` (the cluster at ``dask_address``, else a local one)."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError as exc:  # pragma: no cover - a dependency of ragprep
        raise DaskUnavailableError("task_runner = dask needs prefect-dask: pip install prefect-dask") from exc
    for name in ("distributed", "prefect.task_runner.dask"):  # cluster start/stop chatter (and a dashboard link
        logging.getLogger(name).setLevel(logging.WARNING)  # printed even with no dashboard) is not the run's news
    if settings.dask_address:
        return DaskTaskRunner(address=settings.dask_address)
    return DaskTaskRunner(cluster_class="distributed.LocalCluster", cluster_kwargs=local_cluster_kwargs(settings.workers))


class DocumentRunner:
    """Submits per-document tasks and collects their outcomes, showing progress for those that ran elsewhere."""

    def __init__(self, submit: Callable[[Any, dict[str, Any]], Any], remote: bool) -> None:
        self._submit = submit
        self.remote = remote

    def submit(self, task: Any, **parameters: Any) -> Any:
        """Submit ``task(**parameters)``; returns its Prefect future."""
        return self._submit(task, parameters)

    def result(self, future: Any) -> Any:
        """The outcome of a finished future; a document that ran on a Dask worker (where the progress bars of this
        process cannot reach) is shown as done here."""
        outcome = future.result()
        document = getattr(outcome, "document", None)
        if self.remote and document is not None:
            sink = progress.current()
            sink.begin_document(document.file_name)(document.n_units, document.n_units)
            sink.end_document(document.file_name, document.status)
        return outcome


@contextmanager
def document_runner(settings: Settings) -> Iterator[DocumentRunner]:
    """The runner of per-document tasks: the flow's threads, or a Dask cluster kept open for the block (a local one
    is shut down at its end)."""
    if settings.task_runner != "dask":
        yield DocumentRunner(lambda task, parameters: task.submit(**parameters), remote=False)
        return
    with dask_task_runner(settings) as runner:
        yield DocumentRunner(runner.submit, remote=True)


@contextmanager
def _dask_pool(settings: Settings) -> Iterator[Executor]:
    with dask_task_runner(settings) as runner:
        yield runner.client.get_executor()


def embedding_pool(settings: Settings) -> Callable[[], AbstractContextManager[Executor]] | None:
    """Where ``negatives`` embeds new quote texts: None (the flow's process) for threads; for dask, an opener of the
    cluster's executor, which the stage calls only when some text is not in the cache (so a no-change run starts
    no cluster)."""
    if settings.task_runner != "dask":
        return None
    return lambda: _dask_pool(settings)
