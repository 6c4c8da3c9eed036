"""What every flow checks before it writes: the root (not the code checkout under a deployment), the
root's build lock, and the parameter types the Prefect UI form and API validate.

Also the pull step of ``deploy/prefect.yaml`` (:func:`use_checkout`), which names ``RAGPREP_HOME``
when it is missing instead of Prefect's bare ``StepExecutionError``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import prefect.runtime.deployment
from pydantic import Field

from flows import CHECKOUT
from ragprep.buildlock import build_lock
from ragprep.errorlog import quiet_user_errors
from ragprep.errors import RagprepError
from ragprep.settings import MAX_WORKERS, Settings, build_settings
from ragprep.storage import sweep_leftovers

Workers = Annotated[Optional[int], Field(ge=1, le=MAX_WORKERS)]
"""The ``workers`` parameter: the Prefect UI form shows 1-MAX_WORKERS and the API refuses other values."""


class CheckoutRootError(RagprepError):
    """A deployment's root lies inside the code checkout."""


def in_deployment() -> bool:
    """Whether this flow run belongs to a deployment (started by a worker from a schedule, the UI or the API)."""
    return bool(prefect.runtime.deployment.id)


def refuse_checkout_root(root: Path) -> None:
    """Under a deployment, refuse a root inside the code checkout (a nightly run must not write into the code)."""
    if not in_deployment():
        return  # `ragprep run` / `make demo` write ./ragprep-data beside the code on purpose
    resolved = Path(root).resolve()
    for checkout in {CHECKOUT, Path(os.environ.get("RAGPREP_HOME") or CHECKOUT).resolve()}:
        if resolved.is_relative_to(checkout):
            raise CheckoutRootError(
                f"root {resolved} is inside the code checkout {checkout}: a deployment writes outside it; set RAGPREP_ROOT "
                "to a data folder before `prefect deploy` (or pass the root parameter)"
            )


def deployment_settings(root: str | None = None, workers: int | None = None, ocr: bool | None = None, **overrides: object) -> Settings:
    """Settings of a flow that writes under the root but not the working tables (index, evaluate, train, refmatch).

    An empty ``root`` (a deployment made while ``RAGPREP_ROOT`` was unset) means the worker's RAGPREP_ROOT.
    """
    quiet_user_errors()  # under a worker too: a user error is one log line, not two or three tracebacks
    settings = build_settings(root or None, workers, ocr, **overrides)
    refuse_checkout_root(settings.root)
    return settings


@contextmanager
def building(flow: str, root: str | None = None, workers: int | None = None, ocr: bool | None = None,
             **overrides: object) -> Iterator[Settings]:
    """The settings of a flow that writes the working tables, with the root checked and its build lock held;
    what killed runs left under the root (``ragprep.storage.sweep_leftovers``) is removed first. ``overrides``
    are further run options (``task_runner``, ``dask_address``); None leaves the environment's value."""
    settings = deployment_settings(root, workers, ocr, **overrides)
    with build_lock(settings.root, flow):
        sweep_leftovers(settings.root)  # with the lock held, any staging folder or temporary file is a killed run's
        yield settings


def run_trigger(flow_run) -> str:
    """What started a flow run: ``schedule``, ``automation``, ``ui-or-api`` (a deployment run started by hand) or ``cli``."""
    if flow_run is None or not flow_run.deployment_id:
        return "cli"
    if flow_run.auto_scheduled:
        return "schedule"
    created_by = getattr(flow_run, "created_by", None)
    if created_by is not None and str(getattr(created_by, "type", "")).upper() == "AUTOMATION":
        return "automation"
    return "ui-or-api"


def run_name() -> str:
    """The name of a flow run: what it is (deployment, else flow), when it was due (UTC) and what started it,
    e.g. ``nightly-test-reports 2026-12-01 17:00Z schedule``; used as ``flow_run_name`` by the document flows."""
    from datetime import datetime, timezone

    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    what = prefect.runtime.deployment.name or (context.flow.name if context is not None else "ragprep")
    due = (flow_run.expected_start_time if flow_run is not None else None) or datetime.now(timezone.utc)
    return f"{what} {due.astimezone(timezone.utc):%Y-%m-%d %H:%M}Z {run_trigger(flow_run)}"


class MissingHomeError(RagprepError):
    """RAGPREP_HOME is not set on the worker."""


def use_checkout(directory: str | None = None) -> dict[str, str]:
    """Pull step: make ``directory`` (``{{ $RAGPREP_HOME }}``, the ragprep code checkout) the working directory.

    Prefect drops the argument when the variable is unset; this step then names the variable.
    """
    if not directory or "{{" in directory:
        raise MissingHomeError(
            "RAGPREP_HOME is not set on the worker: set it to the ragprep code checkout (the folder holding deploy/prefect.yaml) "
            "in the worker's environment (`ragprep serve` sets it)"
        )
    path = Path(directory)
    if not (path / "flows").is_dir():
        raise MissingHomeError(f"RAGPREP_HOME={directory} is not a ragprep code checkout (no flows/ folder there); fix the variable")
    os.chdir(path)
    return {"directory": str(path)}
