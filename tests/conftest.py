"""Shared fixtures: real documents (sample_docs/ and ../shared/corpus/), and one
extraction per (file, OCR on/off) per session so the many content assertions stay fast."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import warnings
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ragprep.engines.ocr import make_ocr_engine
from ragprep.pygc import pace_collector
from ragprep.settings import Settings
from ragprep.storage import Layout
from tasks.ingest.chunking import build_chunks
from tasks.ingest.extract import ExtractContext, extract
from tasks.ingest.run import assemble_tables, discover, ingest_document

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DOCS = REPO / "sample_docs"
CORPUS = REPO.parent / "shared" / "corpus"

pace_collector()  # the test processes' collector paced as ragprep's own processes' (ragprep.pygc)


SLOW_FIXTURES = {
    "prefect_server": "a Prefect API server (every test that runs a flow or the CLI against it)",
    "demo_run": "`ragprep run sample_docs/` as on a fresh machine, under strace (test_no_outbound_network.py, test_cli.py)",
    "pipeline_run": "pipeline_flow over sample_docs/, progress recorded (tests/downstream.py; test_progress.py)",
    "version_root": "the sample_docs/ pipeline up to a published version and an evaluation (tests/downstream.py)",
    "mm_root": "four documents ingested with OCR, through QA, judge, quotes and negatives (test_quotes.py)",
    "real": "sample_docs/ and the whole corpus through headers and QA (test_qa_rules.py)",
    "pool": "sample_docs/ and the whole corpus ingested for reference matching (test_refmatch.py)",
    "evaluated": "the reference-matching evaluation: every sentence and chunk window of 35 items embedded (test_refmatch.py)",
}
"""Expensive set-ups: a test that needs one of these (itself or through another fixture) is ``slow``, so it runs in
``make test`` and not in ``make test-fast``. Tests that are slow on their own carry ``@pytest.mark.slow``."""

SLOW_TESTS = {
    "tests/test_review_report.py::test_report_in_headless_chromium": "a Chromium browser on the built report",
    "tests/test_review_report.py::test_header_values_round_trip_through_the_browser": "Chromium, then the CLI",
    "tests/test_qa_audit.py::test_audit_of_the_working_tables": "four `ragprep qa audit` processes",
    "tests/test_qa_audit.py::test_audit_of_a_dataset_version": "four `ragprep qa audit` processes",
    "tests/reliability/test_index_state.py::test_damaged_index_is_one_line_naming_ragprep_index":
        "per damage, two or three `ragprep search`/`ask` processes and an index rebuild",
    "tests/test_service.py::test_temporary_server_start_failure_is_one_line": "starts Prefect server processes",
    "tests/test_settings_and_ids.py::test_sample_docs_are_reproducible": "generates the sample corpus twice",
}
"""End-to-end tests whose own body is expensive (a browser, console-script processes, servers): ``slow`` too. The
fast lane (``make test-fast``) keeps unit and contract tests; ``make test`` runs these as before."""


SHARED_RUN_MODULES = {
    "test_cli": "demo_run",
    "test_no_outbound_network": "demo_run",
    "test_evaluate": "pipeline_run",
    "test_export_training": "pipeline_run",
    "test_progress": "pipeline_run",
    "test_train": "pipeline_run",
}
"""Modules (by file stem) whose tests share one of the session's expensive runs: under pytest-xdist (``make test``)
each of these groups goes to one worker, so the run happens once per session as without workers (the CLI tests work
on the demo's root in turn). A module that starts to use ``demo_run`` or ``pipeline_run`` belongs here: the
collection warns about one that is missing (the run would then happen once more, on a second worker)."""

SPLIT_UNITS = {"test_refmatch": "[ko]"}
"""Modules (by file stem) split in two work units: their tests whose id ends with the given parameter id form a unit of
their own, ``<stem><id>``. test_refmatch's evaluation set embeds its English half (about 50 CPU s) and its Korean half
(about 15 CPU s) in one module fixture that builds each half on first use; as two units they run on two workers, which
takes the Korean half off the longest unit's critical path."""

HEAVY_FIRST = (
    # sums of the 40 slowest ``--durations`` of a fresh-clone ``make test`` (ci12, 3 workers on 2 cores)
    "demo_run",  # 146 s: test_cli 75 + test_no_outbound_network 72
    "test_serve_supervision",  # 114 s
    "pipeline_run",  # 109 s and more (test_evaluate alone)
    "test_refmatch",  # about 90 s since its Korean half is a unit of its own: the English evaluation set's embedding
    "test_quotes",  # 90 s
    "test_service",  # 81 s
    "test_refmatch_ask",  # 45 s
    "test_pdf_extract",  # 42 s
    "test_packaging",  # 42 s
    "test_refmatch[ko]",  # about 35 s (its Korean evaluation set)
    "test_index_state",  # 34 s
    "test_reruns",  # 31 s
    "test_huge_text",  # 27 s
    "test_qa_audit",  # 20 s
    "test_papercuts",  # 18 s
    "test_scaleout",  # 17 s
    "test_one_line_errors",  # 14 s
    "test_ingest_faults",  # 13 s
    "test_index",  # 13 s
    "test_review_carryover",  # 11 s
    "test_qa_rules",  # 11 s
    "test_memory_limits",  # 10 s
    "test_flow",
    "test_review_report",
)
"""Under pytest-xdist, the groups handed out first, longest first (sums of ``--durations`` per group in a full
``make test``): longest-first is what keeps the workers ending together, the short groups filling in at the end,
rather than one worker still busy with a long group handed out last. The groups not listed follow in collection
order; each is under about 10 s."""


def xdist_group(nodeid: str) -> str:
    """The pytest-xdist work unit of a test: its module's shared run (``SHARED_RUN_MODULES``), else its module (its
    module fixtures are set up once, its tests keep their order, as ``--dist loadfile``), by the file's stem; a
    module of ``SPLIT_UNITS`` is two units."""
    stem = Path(nodeid.split("::", 1)[0]).stem
    split = SPLIT_UNITS.get(stem)
    if split and nodeid.endswith(split):
        return stem + split
    return SHARED_RUN_MODULES.get(stem, stem)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: no error where the plugin is missing
def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist (``-n``), whatever ``--dist`` says: every work unit of :func:`xdist_group` on one worker,
    the units in collection order (``HEAVY_FIRST``). (Not ``xdist_group`` marks: pytest-xdist 3.8 renames test ids
    for those in a way pytest 9 ignores.)"""
    from xdist.scheduler import LoadScopeScheduling

    if config.getvalue("dist") == "each":  # every test on every worker: nothing to group
        return None

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

    config.option.loadscopereorder = False
    return GroupScheduling(config, log)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects
def pytest_collection_modifyitems(config, items) -> None:
    """Mark ``slow`` every test that needs one of ``SLOW_FIXTURES`` or is one of ``SLOW_TESTS`` (the fast lane runs
    none of them); on a pytest-xdist worker, put the heaviest work units first (``HEAVY_FIRST``)."""
    for item in items:
        name = item.nodeid.split("[", 1)[0]
        if SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ())) or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):  # an xdist worker: every worker collects, in the same order
        rank = {group: i for i, group in enumerate(HEAVY_FIRST)}
        items.sort(key=lambda item: rank.get(xdist_group(item.nodeid), len(rank)))  # stable: a unit keeps its order
        for run in ("demo_run", "pipeline_run"):
            strays = sorted({xdist_group(i.nodeid) for i in items if run in getattr(i, "fixturenames", ())} - {run})
            if strays:
                warnings.warn(pytest.PytestWarning(
                    f"{', '.join(strays)} use {run}: add them to SHARED_RUN_MODULES in tests/conftest.py (otherwise "
                    f"{run} runs once more, on another pytest-xdist worker)"), stacklevel=1)


def tesseract_ready() -> bool:
    return make_ocr_engine(Settings(), Layout(Path("/nonexistent"))).unavailable_reason() is None


needs_tesseract = pytest.mark.skipif(not shutil.which("tesseract"), reason="tesseract not installed (make system-deps)")


def ingest_into(root: Path, paths: Sequence[Path]) -> Settings:
    """Ingest ``paths`` into ``root`` with OCR off and assemble the tables; returns the settings used."""
    settings = Settings(root=root, ocr={"enabled": False})
    outcomes = [ingest_document(ref, settings, None) for ref in discover(paths, settings)]
    assemble_tables(outcomes, settings, datetime.now(timezone.utc))
    return settings


def shared_basetemp(tmp_path_factory) -> Path:
    """Where set-ups shared by the whole run live: under pytest-xdist the folder above every worker's basetemp (one per
    run), else this session's basetemp."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def shared_embeddings(tmp_path_factory) -> Path:
    """The run's one embeddings cache folder (``embeddings_cache``, RAGPREP_EMBEDDINGS_CACHE), shared by the pytest-xdist
    workers: set-ups whose assertions do not depend on what gets embedded name it, so a text (a sample_docs/ chunk or
    quote) embedded by one of them, or by a private run that :func:`share_embeddings` copied in, is not embedded
    again. Entries are keyed by model + text hash and every save merges what other processes wrote under a file
    lock (``save_vector_cache``). Tests that count embeddings, read cache files under their root, or check a fresh
    machine keep the default ``<root>/cache/embeddings`` (whether the shared cache already holds a text depends on
    which tests ran before), started with a copy of this one but a fixed few texts (:func:`seed_embeddings`)."""
    folder = shared_basetemp(tmp_path_factory) / "embeddings-cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def share_embeddings(private: Path, shared: Path) -> int:
    """Merge the vector caches of the folder ``private`` (a run's own ``<root>/cache/embeddings``) into the shared
    folder, after that run's tests have what they check from it; returns the vectors copied."""
    from ragprep.engines.embedder import load_vector_cache

    copied = 0
    for file in sorted(private.glob("*.npz")):
        vectors = load_vector_cache(file)
        add_vectors(shared / file.name, vectors)
        copied += len(vectors)
    return copied


def add_vectors(path: Path, vectors: dict) -> None:
    """Add ``vectors`` to the cache file ``path``, keeping what it holds. (``save_vector_cache`` writes the dict it is
    given as the whole file, merging in only what other processes wrote since this one last read or wrote it: a
    process that read the file, as a seeded test does, and then saved a few vectors would drop the rest.)"""
    from ragprep.engines.embedder import load_vector_cache, save_vector_cache

    if vectors:
        save_vector_cache(path, {**load_vector_cache(path), **vectors})  # a write since the load is merged under the lock


SEED_EVERY = 8
"""A seeded cache (:func:`seed_embeddings`) leaves out every text whose cache key hashes to 0 modulo this: about one
text in eight, the same texts in every run and on every machine, so a seeded run still loads the model and embeds
those for real."""


def held_out(key: str, every: int = SEED_EVERY) -> bool:
    """Whether seeded caches leave out the cache key ``key`` (a text hash, ``q:`` + one for a question): a fixed one
    key in ``every``, by the key's own hash."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % every == 0


def cache_keys(folder: Path) -> set[str]:
    """Every key of the vector caches (``*.npz``) in ``folder``."""
    from ragprep.engines.embedder import load_vector_cache

    return {key for file in folder.glob("*.npz") for key in load_vector_cache(file)}


class Seed:
    """Private embeddings-cache folders started with a copy of the session's vectors, but the held-out ones
    (:func:`seed_embeddings`)."""

    def __init__(self, folders: Sequence[Path], shared: Path, every: int) -> None:
        self.folders = tuple(folders)
        self.shared = shared
        self.every = every
        self.keys: set[str] = set()
        """The keys copied into each folder (the same in all)."""
        self.used: set[str] = set()
        """Keys this process's cached embedders were asked for while the seed was active (``prune``)."""
        self._read: dict[str, tuple[int, int]] = {}  # the shared files' (mtime, size) when last copied
        self._written = {folder: _npz_stamps(folder) for folder in self.folders}  # the folders as the seed left them

    def top_up(self) -> int:
        """Copy into the folders the vectors the shared cache holds that they were not given yet (but the held-out
        ones), unless a run has written to a folder's cache meanwhile (too late to save it anything); returns the
        vectors copied. Seeding is the first call; a test whose run may start before the session's shared runs are
        done calls it again while its run has not embedded yet (``demo_run``)."""
        from ragprep.engines.embedder import load_vector_cache

        if any(_npz_stamps(folder) != stamps for folder, stamps in self._written.items()):
            return 0
        copied = 0
        for file in sorted(self.shared.glob("*.npz")):
            stamp = _npz_stamps(self.shared, file.name).get(file.name)
            if self._read.get(file.name) == stamp:
                continue
            self._read[file.name] = stamp
            new = {k: v for k, v in load_vector_cache(file).items() if k not in self.keys and not held_out(k, self.every)}
            for folder in self.folders if new else ():
                add_vectors(folder / file.name, new)
            self.keys |= new.keys()
            copied += len(new)
        self._written = {folder: _npz_stamps(folder) for folder in self.folders}
        return copied

    def added(self, folder: Path | None = None) -> set[str]:
        """The keys the folder's caches hold now that were not seeded: what the runs in it embedded (the first
        folder's by default)."""
        return cache_keys(folder or self.folders[0]) - self.keys


def _npz_stamps(folder: Path, pattern: str = "*.npz") -> dict[str, tuple[int, int]]:
    """(mtime, size) of each vector cache file in ``folder``, by name."""
    stamps = {}
    for file in folder.glob(pattern):
        with contextlib.suppress(FileNotFoundError):  # replaced meanwhile (an atomic write)
            stat = file.stat()
            stamps[file.name] = (stat.st_mtime_ns, stat.st_size)
    return stamps


@pytest.fixture(scope="session")
def seed_embeddings(shared_embeddings):
    """seed_embeddings(*folders, prune=False) -> a context manager yielding a :class:`Seed`: for the tests that keep a
    private embeddings cache (they count embeddings, or check a fresh root), each folder (empty or missing: a root's
    ``cache/embeddings``) starts with the vectors ``shared_embeddings`` holds (one snapshot for all folders), except
    the held-out ones (:func:`held_out`): the sample_docs/ chunks and quotes that ``demo_run``, ``pipeline_run`` and
    earlier seeded runs embedded are not embedded once more, and every run still embeds the texts held out. On exit
    the folders' vectors are merged into ``shared_embeddings``, so the first seeded test of a run embeds for the ones
    after it. ``prune``: on exit, each folder keeps only the seeded vectors that this process's embedders were asked
    for (a root whose later tests count what gets embedded holds what a cold start would have embedded, no more).

    The shared cache holds what has been embedded so far: a test run alone, or before the shared runs, is seeded
    with less and embeds more, never another shared run (which would cost more than it saves)."""
    from ragprep.engines.embedder import load_vector_cache, save_vector_cache

    @contextlib.contextmanager
    def seed(*folders: Path, prune: bool = False, every: int = SEED_EVERY):
        seeded = Seed(folders, shared_embeddings, every)
        seeded.top_up()
        with asked_keys(seeded.used) if prune else contextlib.nullcontext():
            yield seeded
        for folder in folders:
            if prune:
                for file in folder.glob("*.npz"):
                    kept = {k: v for k, v in load_vector_cache(file).items() if k not in seeded.keys or k in seeded.used}
                    file.unlink()
                    save_vector_cache(file, kept)
            share_embeddings(folder, shared_embeddings)

    return seed


@contextlib.contextmanager
def asked_keys(keys: set[str]):
    """While active, the cache keys of every text this process's cached embedders (``CachedEmbedder``: the stages',
    the index's) are asked to embed or find in their cache file are added to ``keys`` (``q:`` + the text hash for a
    question, where the embedder caches questions)."""
    from ragprep.engines.embedders import CachedEmbedder, text_hash

    def recording(method, prefix: str):
        def recorded(self, texts, *args, **kwargs):
            if not prefix or self.cache_queries:
                keys.update(prefix + text_hash(t) for t in texts)
            return method(self, texts, *args, **kwargs)

        return recorded

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CachedEmbedder, "passages", recording(CachedEmbedder.passages, ""))
        patch.setattr(CachedEmbedder, "queries", recording(CachedEmbedder.queries, "q:"))
        yield keys


@pytest.fixture(scope="session")
def ingest_copy(tmp_path_factory):
    """ingest_copy(paths, root) -> Settings: ``paths`` ingested (OCR off, as :func:`ingest_into`) once per run (under
    pytest-xdist the first worker to need it ingests, the others wait on a file lock and reuse it), the prepared root
    copied to ``root`` (which must not exist yet): modules that start from the same documents share one ingest, and
    each still writes to a root of its own."""
    from filelock import FileLock

    shared = shared_basetemp(tmp_path_factory)

    def make(paths: Sequence[Path], root: Path) -> Settings:
        key = "\n".join(str(Path(p).resolve()) for p in paths)
        prepared = shared / f"shared-ingest-{hashlib.sha1(key.encode()).hexdigest()[:12]}"
        with FileLock(f"{prepared}.lock"):
            if not (prepared / "done").exists():
                shutil.rmtree(prepared, ignore_errors=True)  # left half-way by a worker that failed
                (prepared / "root").mkdir(parents=True)
                ingest_into(prepared / "root", paths)
                (prepared / "done").touch()
        shutil.copytree(prepared / "root", root)
        return Settings(root=root, ocr={"enabled": False})

    return make


def copy_root(prepared: Path, tmp_path: Path) -> Path:
    """A private copy of a root prepared once per module, for a test that changes it."""
    target = tmp_path / "root"
    shutil.copytree(prepared, target)
    return target


@pytest.fixture(scope="module")
def fake_llm_server():
    """tests/fake_llm_server.py on loopback, started once for the module that asks for it."""
    from tests.fake_llm_server import FakeLLMServer

    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def server(fake_llm_server):
    """The module's fake LLM server, back to its defaults before and after each test."""
    fake_llm_server.reset(defaults=True)
    yield fake_llm_server
    fake_llm_server.reset(defaults=True)


@pytest.fixture(scope="session")
def corpus() -> Path:
    assert CORPUS.is_dir(), f"the shared corpus is expected at {CORPUS}"
    return CORPUS


class Extracted:
    def __init__(self, doc, chunks, layout: Layout) -> None:
        self.doc = doc
        self.elements = doc.elements
        self.chunks = chunks
        self.layout = layout

    def kind(self, kind: str, number: int | None = None):
        return [e for e in self.elements if e.kind == kind and (number is None or e.number == number)]

    def chunk_text(self) -> str:
        return "\n\n".join(c.markdown for c in self.chunks)


@pytest.fixture(scope="session")
def extracted(tmp_path_factory):
    """extracted(path, ocr=False) -> Extracted; cached per session."""
    cache: dict[tuple[str, bool], Extracted] = {}
    root = tmp_path_factory.mktemp("extract-root")

    def run(path: Path, ocr: bool = False) -> Extracted:
        key = (str(path), ocr)
        if key not in cache:
            settings = Settings(root=root, ocr={"enabled": ocr})
            layout = Layout(root)
            ctx = ExtractContext(
                doc_id="test-" + path.stem, source_path=str(path), settings=settings, layout=layout,
                ocr=make_ocr_engine(settings, layout),
            )
            doc = extract(path, ctx)
            chunks = build_chunks(ctx.doc_id, str(path), doc.format, doc.elements, doc.outline, doc.n_units, settings)
            cache[key] = Extracted(doc, chunks, layout)
        return cache[key]

    return run


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory, seed_embeddings):
    """The session's one ``ragprep run sample_docs/`` as ``make demo`` runs it on a fresh machine (OCR on, Prefect's
    temporary server, a fresh HOME), under ``strace -f`` where the machine allows tracing
    (tests/reliability/test_no_outbound_network.py ``run_demo``). The no-outbound-network test checks its trace;
    the CLI tests read its output and then work on its root. It embeds into its own root as a fresh machine does,
    that cache seeded (``seed_embeddings``) with what the session has embedded, topped up while the run starts
    (``pipeline_run`` embeds the same texts on another worker meanwhile), but the held-out texts: it still loads the
    model and embeds those under the tracer. Its vectors are then copied into ``shared_embeddings``."""
    from tests.reliability.test_no_outbound_network import run_demo

    base = tmp_path_factory.mktemp("demo")
    with seed_embeddings(Layout(base / "data").embeddings_cache_dir) as seed:
        return run_demo(base, seed)


@pytest.fixture(scope="session")
def pipeline_run(prefect_server, tmp_path_factory, shared_embeddings):
    """The session's one ``pipeline_flow`` over sample_docs/ (OCR off, two workers), every progress event and stage
    log line recorded (tests/downstream.py ``run_sample_pipeline``): test_progress.py reads the record, the
    downstream tests (``version_root``) copy its root. It embeds into its own root (test_progress.py checks the
    negatives stage's embedding progress); its vectors are copied into the session's ``shared_embeddings`` as soon as
    the negatives stage has saved them (``sharing_as_saved``: the demo run, started beside it, is topped up with
    them), and once more at the end."""
    from tests.downstream import run_sample_pipeline

    root = tmp_path_factory.mktemp("pipeline") / "root"
    with sharing_as_saved(Layout(root).embeddings_cache_dir, shared_embeddings):
        run = run_sample_pipeline(root)
    share_embeddings(Layout(run.root).embeddings_cache_dir, shared_embeddings)
    return run


@contextlib.contextmanager
def sharing_as_saved(private: Path, shared: Path, every: float = 1.0):
    """While active, a thread copies the vectors of the folder ``private`` into ``shared`` (:func:`share_embeddings`)
    each time a run in this process saves them there (its cache files change), rather than only after the whole run."""
    import threading

    stop = threading.Event()

    def watch() -> None:
        seen: dict[str, tuple[int, int]] = {}
        while not stop.wait(every):
            stamps = _npz_stamps(private)
            if stamps != seen:
                seen = stamps
                share_embeddings(private, shared)

    watcher = threading.Thread(target=watch, name="sharing-as-saved", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()


@pytest.fixture(scope="session")
def version_root(pipeline_run, shared_embeddings):
    """A root holding a published, evaluated dataset version of sample_docs/ (tests/downstream.py
    ``sample_version``); tests take a private copy (``private_copy``)."""
    from tests.downstream import sample_version

    root = sample_version(pipeline_run)
    share_embeddings(Layout(root).embeddings_cache_dir, shared_embeddings)  # its evaluation's windows and questions
    return root


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A real Prefect API server on loopback (SQLite in a temp dir): under pytest-xdist one for the whole run, shared by
    the workers (:func:`shared_prefect_server`), else ``prefect_test_harness``'s for the session."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    from prefect.settings import PREFECT_API_URL

    if os.environ.get("PYTEST_XDIST_WORKER"):
        with shared_prefect_server(shared_basetemp(tmp_path_factory) / "prefect-server") as url:
            assert PREFECT_API_URL.value() == url
            yield url
        return
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        url = PREFECT_API_URL.value()
        assert url and ("127.0.0.1" in url or "localhost" in url), url
        yield url


@contextlib.contextmanager
def shared_prefect_server(folder: Path):
    """The run's one Prefect API server, shared by the pytest-xdist workers: the first worker to need it starts it
    (uvicorn on a free loopback port, SQLite under ``folder``, as ``prefect_test_harness`` starts its own), each
    worker points its Prefect settings at it while it runs, and the last worker done with it stops it (a later one
    would start it again). One server instead of one per worker: each costs about 12 CPU s to start and keeps
    polling while the tests run. Yields the API URL. Not ``flows.serve.ApiServer``: that one dies with the process
    that starts it, and this one must outlive the worker that started it while other workers still use it."""
    import json
    import signal
    import subprocess
    import time

    from filelock import FileLock
    from prefect.context import _temporary_global_settings_context, get_settings_context
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.serve import api_server_command, free_port, healthy

    folder.mkdir(parents=True, exist_ok=True)
    state_file, lock = folder / "state.json", FileLock(str(folder / "state.lock"))

    with lock:
        state = json.loads(state_file.read_text()) if state_file.exists() else None
        if state is None or not healthy(state["url"], timeout=5):
            port = free_port()
            env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1",
                   "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{folder / 'prefect.db'}"}
            env.pop("PREFECT_API_URL", None)
            with open(folder / "server.log", "ab") as log:
                log.write(f"started by {os.environ['PYTEST_XDIST_WORKER']} on port {port}\n".encode())
                log.flush()
                proc = subprocess.Popen(api_server_command(port), env=env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            state = {"url": f"http://127.0.0.1:{port}/api", "pid": proc.pid, "users": 0}
            deadline = time.monotonic() + 120
            while not healthy(state["url"], timeout=5):
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    raise RuntimeError(f"the shared Prefect server did not start: see {folder / 'server.log'}")
                time.sleep(0.2)
        state["users"] += 1
        state_file.write_text(json.dumps(state))
    try:
        with temporary_settings(updates={PREFECT_API_URL: state["url"]}):
            with _temporary_global_settings_context(get_settings_context()):
                yield state["url"]
                _drain_prefect_workers()
    finally:
        with lock:
            state = json.loads(state_file.read_text())
            state["users"] -= 1
            if state["users"] > 0:
                state_file.write_text(json.dumps(state))
            else:
                state_file.unlink()
                with contextlib.suppress(OSError), open(folder / "server.log", "a") as log:  # what it cost (Linux)
                    ticks = Path(f"/proc/{state['pid']}/stat").read_text().rsplit(")", 1)[1].split()[11:13]
                    log.write(f"stopped by {os.environ['PYTEST_XDIST_WORKER']}: {sum(map(int, ticks)) / os.sysconf('SC_CLK_TCK'):.1f} CPU s\n")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(state["pid"], signal.SIGTERM)  # its own session: the group is the server


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session) -> None:
    """On the pytest-xdist controller: stop the shared Prefect server if a worker that died left it running."""
    import json
    import signal

    factory = getattr(session.config, "_tmp_path_factory", None)
    if hasattr(session.config, "workerinput") or factory is None or factory._basetemp is None:
        return
    state_file = factory.getbasetemp() / "prefect-server" / "state.json"
    if state_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError, KeyError):
            os.killpg(json.loads(state_file.read_text())["pid"], signal.SIGTERM)


def _drain_prefect_workers() -> None:
    """Send the logs and events this process still holds to the server before it may stop (as the harness does)."""
    import inspect

    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def drain() -> None:
        for call in (APILogWorker.instance().drain, EventsWorker.drain_all):
            try:
                result = call()
            except RuntimeError:  # a worker that never started
                continue
            if inspect.isawaitable(result):
                await result

    run_coro_as_sync(drain())


@pytest.fixture(autouse=True, scope="session")
def auto_approval_gate_off():
    """Pipeline tests run with the offline critic's auto-approval gate off (``qa.auto_approve_min_precision`` 0,
    through the environment so that subprocesses see it too): their subject is what happens to approved pairs, and
    with the calibrated gate only a few question types are auto-approved. The gate's own tests
    (``tests/test_judge.py``) pass the setting explicitly."""
    import os

    before = os.environ.get("RAGPREP_QA__AUTO_APPROVE_MIN_PRECISION")
    os.environ["RAGPREP_QA__AUTO_APPROVE_MIN_PRECISION"] = "0"
    yield
    if before is None:
        os.environ.pop("RAGPREP_QA__AUTO_APPROVE_MIN_PRECISION", None)
    else:
        os.environ["RAGPREP_QA__AUTO_APPROVE_MIN_PRECISION"] = before
