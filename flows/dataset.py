"""The ``dataset`` flow: splits, a content-addressed version, the quality gate, publish."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.artifacts import create_table_artifact

from flows.artifacts import file_reference
from flows.runtime import building
from ragprep.settings import Settings
from tasks.wrappers import BuildResult, GateResult, build_version_task


def quality_page(result: BuildResult, gate: GateResult, settings: Settings) -> str:
    """Markdown naming the committed version's quality page: the gate wrote it into a staging folder that the
    commit renamed (or, for a version that already existed, deleted), so the same place under the version's folder."""
    staged = Path(gate.data_docs or "")
    names = [i for i, part in enumerate(staged.parts) if part.startswith(".staging")]
    if not names or "://" in result.path:
        return f"`{result.path}` (quality/ inside the version)"
    committed = Path(result.path, *staged.parts[names[-1] + 1:])
    return file_reference(committed, settings, "quality page")


def run_dataset(settings: Settings) -> BuildResult:
    """Build the dataset version, publish the quality gate as the ``quality-gate`` artifact, and return the build result."""
    result, gate = build_version_task(settings)
    if gate is not None:
        create_table_artifact(
            key="quality-gate",
            table=[
                {"table": o.table, "expectation": o.expectation, "column": o.column or "", "result": "pass" if o.success else "FAIL",
                 "details": o.details}
                for o in gate.outcomes
            ],
            description=(
                f"dataset version {result.version_id}: quality gate {'passed, published' if gate.passed else 'FAILED, not published'}"
                + (f"; Data Docs: {quality_page(result, gate, settings)}" if gate.data_docs else "")
            ),
        )
    return result


@flow(name="dataset")
def dataset_flow(root: str | None = None) -> BuildResult:
    """Split the current tables into train/val/test, build a versioned dataset, and publish it if the quality gate passes.

    Args:
        root: Output root holding the tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    with building("dataset", root) as settings:
        return run_dataset(settings)
