"""Prefect task wrapper of the dataset build (splits, version, quality gate, publish)."""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from ragprep.settings import Settings
from tasks.dataset import BuildResult, build_version, quality_gate
from tasks.quality import GateResult


@task(name="build-dataset-version", cache_policy=NO_CACHE)
def build_version_task(settings: Settings) -> tuple[BuildResult, GateResult | None]:
    gate, outcome = quality_gate(settings)
    result = build_version(settings, gate)
    logger = get_run_logger()
    if not result.created:
        logger.info("dataset version %s already exists (%s): nothing new", result.version_id,
                    "published" if result.published else "rejected")
    elif result.published:
        logger.info("published dataset version %s at %s", result.version_id, result.path)
    else:
        logger.warning("dataset version %s failed the quality gate (%s); LATEST not moved", result.version_id,
                       ", ".join(result.failed_expectations))
    return result, outcome.get("result")
