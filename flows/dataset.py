"""The ``dataset`` flow: splits, a content-addressed version, the quality gate, publish."""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_table_artifact

from ragprep.settings import Settings, build_settings
from tasks.dataset.versions import BuildResult
from tasks.wrappers import build_version_task


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
                + (f"; Data Docs: {gate.data_docs}" if gate.data_docs else "")
            ),
        )
    return result


@flow(name="dataset")
def dataset_flow(root: str | None = None) -> BuildResult:
    """Split the current tables into train/val/test, build a versioned dataset, and publish it if the quality gate passes.

    Args:
        root: Output root holding the tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    return run_dataset(build_settings(root))
