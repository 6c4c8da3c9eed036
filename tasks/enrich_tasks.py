"""Prefect task wrappers of the generative stages."""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from ragprep import progress
from ragprep.settings import Settings
from tasks.enrich import StageReport, run_correct, run_describe, run_headers, run_qa

_STAGES = {"describe": run_describe, "correct": run_correct, "headers": run_headers, "qa": run_qa}


@task(name="generative-stage", task_run_name="{stage}", cache_policy=NO_CACHE)
def stage_task(stage: str, settings: Settings) -> StageReport:
    logger = get_run_logger()
    show = progress.current().begin_document(stage)
    step = {"last": 0}

    def report(done: int, total: int) -> None:
        show(done, total)
        if done == total or done - step["last"] >= max(10, total // 4):
            step["last"] = done
            logger.info("%s: %d/%d items", stage, done, total)

    result = _STAGES[stage](settings, report)
    progress.current().end_document(stage, f"{result.flagged} flagged")
    logger.info(
        "%s: %d items with %s/%s (%s), %d flagged %s",
        stage, result.items, result.provider, result.model, result.prompt, result.flagged, result.flags or "",
    )
    return result


@task(name="review-report", cache_policy=NO_CACHE)
def review_report_task(settings: Settings) -> str:
    from tasks.review_report import write_review_report

    path = write_review_report(settings.root)
    get_run_logger().info("review report: %s", path)
    return str(path)
