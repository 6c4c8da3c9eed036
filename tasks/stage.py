"""What every stage shares: the report type, progress ticks, the async item loop, and
``StageRun`` — the skeleton of a generative stage (table store, prompt, usage meter, one
``Generator`` in a fresh event loop, and the report at the end).

A stage module reads its input tables from ``run.store``, runs its typed step over the items
with ``run.generate(role, step)`` and writes its output tables back through the store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

from pydantic import BaseModel

from ragprep.engines.generator import Generator, UsageMeter
from ragprep.prompts import PromptTemplate, load_prompt
from ragprep.report import Report
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called as items finish."""

Item = TypeVar("Item")
Result = TypeVar("Result")


class StageReport(BaseModel):
    """What one stage did: provider, model, prompt, items, flags and LLM usage."""

    stage: str
    provider: str
    model: str
    prompt: str
    items: int
    flagged: int
    flags: dict[str, int]
    usage: list[dict]
    seconds: float = 0.0
    """Wall time of the stage, reading its tables to writing them."""

    @property
    def calls(self) -> int:
        """Remote calls made (cache hits excluded)."""
        return sum(u.get("calls", 0) for u in self.usage)

    @property
    def cache_hits(self) -> int:
        """Replies answered from the cache."""
        return sum(u.get("cache_hits", 0) for u in self.usage)

    @property
    def repairs(self) -> int:
        """Repair attempts after an unusable structured reply."""
        return sum(u.get("repairs", 0) for u in self.usage)

    @property
    def failures(self) -> int:
        """Calls that failed after the SDK's retries."""
        return sum(u.get("failures", 0) for u in self.usage)

    @property
    def structured_mode(self) -> str:
        """How JSON was asked for (``json_schema``, ``json_object``, ``prompt``), or ``-`` when no call asked for it."""
        return "; ".join(str(u["structured_mode"]) for u in self.usage if u.get("structured_mode")) or "-"

    def flag_summary(self) -> str:
        """``code: count`` pairs, or ``-`` when nothing was flagged."""
        return ", ".join(f"{k}: {v}" for k, v in sorted(self.flags.items())) or "-"


def stages_report(reports: Sequence[StageReport]) -> Report:
    """One table of stage reports, shown by the CLI and published as a Prefect artifact."""
    rows = [
        [r.stage, r.provider, r.model, r.prompt, r.items, r.flagged, r.flag_summary(), r.calls, r.cache_hits,
         r.repairs, r.failures, r.structured_mode, f"{r.seconds:.1f}"]
        for r in reports
    ]
    calls = sum(r.calls for r in reports)
    hits = sum(r.cache_hits for r in reports)
    return Report(
        title="ragprep: generative stages",
        columns=["stage", "provider", "model", "prompt", "items", "flagged", "flags", "calls", "cached",
                 "repairs", "failed", "json mode", "seconds"],
        rows=rows,
        notes=[f"Remote calls: {calls}, answered from cache: {hits}."],
        shared_in_caption=True,  # one provider and model for every stage, as usual: 120 columns hold the rest
    )


def flag_counts(flags: Iterable[str]) -> dict[str, int]:
    """Count flags by their code (the part before the first colon)."""
    counts: dict[str, int] = {}
    for flag in flags:
        key = flag.split(":", 1)[0]
        counts[key] = counts.get(key, 0) + 1
    return counts


def counter(total: int, progress: Progress | None) -> Callable[[object], None]:
    """A tick function that reports ``(done, total)`` to ``progress`` once per finished item."""
    state = {"done": 0}

    def tick(_: object) -> None:
        state["done"] += 1
        if progress:
            progress(state["done"], total)

    return tick


async def run_items(
    items: Iterable[Item],
    work: Callable[[Item], Awaitable[Result]],
    on_done: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Run ``work`` on every item concurrently (the generator limits the calls in flight),
    calling ``on_done`` as each finishes; results in item order."""

    async def one(item: Item) -> Result:
        result = await work(item)
        if on_done:
            on_done(result)
        return result

    return list(await asyncio.gather(*(one(item) for item in items)))


class StageRun:
    """One run of a generative stage over the working tables under ``settings.root``."""

    def __init__(self, settings: Settings, prompt_id: str) -> None:
        self.settings = settings
        self.layout = Layout(settings.root)
        self.store = TableStore(self.layout)
        self.prompt: PromptTemplate = load_prompt(prompt_id)
        self.meter = UsageMeter(prices=settings.llm.prices)
        self.generator: Generator | None = None
        self._started = time.monotonic()

    def generate(self, role: str, step: Callable[[Generator], Awaitable[Result]]) -> Result:
        """Run ``step(generator)`` in a fresh event loop with the ``llm`` or ``vlm`` provider."""

        async def go() -> Result:
            generator = Generator(self.settings, role, cache_dir=self.layout.llm_cache_dir, meter=self.meter)
            self.generator = generator
            try:
                return await step(generator)
            finally:
                await generator.aclose()

        return asyncio.run(go())

    def report(self, stage: str, items: int, flags: Sequence[str]) -> StageReport:
        """The stage's report, after ``generate`` ran."""
        assert self.generator is not None, "generate() must run before report()"
        return StageReport(
            stage=stage,
            provider=self.generator.provider,
            model=self.generator.model,
            prompt=self.generator.prompt_label(self.prompt),
            items=items,
            flagged=len(flags),
            flags=flag_counts(flags),
            usage=self.meter.table(),
            seconds=round(time.monotonic() - self._started, 2),
        )
