"""dataset: immutable, content-addressed dataset versions with train/val/test splits.

A build takes the current tables, assigns every chunk a split by hashing its id (or its
document's id) — so an item's split never changes across versions and nightly
re-ingestion cannot leak a test chunk into train — lets QA pairs follow their chunk,
keeps only approved QA pairs, and derives the version id from the content, the
settings and the code version. The version is written to a staging directory and
committed when complete; the ``LATEST`` pointer moves only when the quality gate
passes; a version that fails the gate is kept under ``rejected/`` with its report.

Versions live in a dataset store (``ragprep/dataset_store.py``): ``<root>/datasets`` or
``settings.dataset_uri`` (a local path or ``s3://bucket/prefix``). Layout there::

    versions/<id>/<table>/<split>.parquet, manifest.json, quality/...
    rejected/<id>/...                      same, for versions that failed the gate
    LATEST                                 id of the newest published version

A version exists once its ``manifest.json`` exists (locally: renamed into place with
it under a lock; on S3: uploaded last, and LATEST moves by compare-and-swap). The manifest
records the size and SHA-256 of every other file (``files``), which ``verify_versions``
(``ragprep versions --verify``) checks; the version id does not depend on it.

A build first removes what killed runs left under the root (``.*.tmp`` files, staging folders
under ``parts/`` and, when no other build holds the catalog lock, the store's ``.staging-*``
folders of dead builds).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from ragprep import __version__
from ragprep.dataset_store import (
    DatasetStore,
    DatasetStoreError,
    LocalDatasetStore,
    StoredVersion,
    Verification,
    file_checksums,
    open_store,
)
from ragprep.ids import stable_id
from ragprep.settings import Settings
from ragprep.splits import SPLITS, split_for
from ragprep.storage import Layout, sweep_leftovers, write_parquet
from ragprep.tables import ID_COLUMNS, VERSIONED_TABLES, MissingTablesError, TableStore
from schemas import rows_to_table
from schemas.review import REVIEW_SCHEMA
from tasks.qa.review import load_decisions

log = logging.getLogger("ragprep.dataset")


class LatestMissingError(DatasetStoreError, FileNotFoundError):
    """No version to resolve "the latest" to: nothing is published, or LATEST is missing or dangling (the message says how to restore it)."""


class VersionInfo(BaseModel):
    version_id: str
    status: str  # published | rejected
    created_at: str
    parent: str | None
    rows: dict[str, dict[str, int]]
    gate_passed: bool
    path: str
    is_latest: bool = False
    damaged: int = 0
    """Files of the version that no longer match its manifest (sizes and Parquet footers; ``versions --verify``
    checks the hashes too)."""


class BuildResult(BaseModel):
    version_id: str
    created: bool
    published: bool
    path: str
    failed_expectations: list[str]


def dataset_store(settings: Settings) -> DatasetStore:
    """The store that ``build_version`` writes to and the readers read from for these settings."""
    return open_store(settings.root, settings.dataset_uri)


def _table_digest(table: pa.Table, id_column: str) -> str:
    rows = sorted(table.to_pylist(), key=lambda r: str(r.get(id_column)))
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str, ensure_ascii=False).encode()).hexdigest()


def row_digests(table: pa.Table, id_column: str) -> dict[str, str]:
    """The SHA-256 of every row's content, keyed by its ``id_column`` value."""
    return {
        str(row[id_column]): hashlib.sha256(json.dumps(row, sort_keys=True, default=str, ensure_ascii=False).encode()).hexdigest()
        for row in table.to_pylist()
    }


def assemble_version_tables(layout: Layout, settings: Settings) -> dict[str, pa.Table]:
    """The current tables with a ``split`` column where items are split; approved QA pairs only.

    Documents ``removed`` since the previous ingest are left out, and so is the documents' per-run ``change``
    column (new/changed/unchanged). QA pairs, quotes, candidate sets (``mm_items``) and review decisions (``review``, the latest
    per QA pair; a decision for a pair that no longer exists has no split) follow their chunk's
    split; candidate sets of QA pairs that are no longer approved are left out."""
    tables: dict[str, pa.Table] = {}
    store = TableStore(layout)
    for name in VERSIONED_TABLES:
        table = store.read_arrow(name) if name != "review" else None  # review: the latest decisions, below
        if table is not None:
            tables[name] = table
    if "documents" in tables:  # removed documents (in the previous run, not found by the last) leave the version
        documents = tables["documents"].filter(pc.not_equal(tables["documents"].column("status"), "removed"))
        if "change" in documents.column_names:  # what the last run did, not what the dataset holds: a no-change
            documents = documents.drop_columns(["change"])  # run must rebuild the same version, not a new one
        tables["documents"] = documents
    if "chunks" not in tables:
        raise MissingTablesError(f"{store.path('chunks')} does not exist; run `ragprep run PATHS --root {layout.root}` first")
    chunks = tables["chunks"]
    chunk_split = {cid: split_for(cid, doc_id, settings)
                   for cid, doc_id in zip(chunks.column("chunk_id").to_pylist(), chunks.column("doc_id").to_pylist())}
    tables["chunks"] = chunks.append_column("split", pa.array([chunk_split[c] for c in chunks.column("chunk_id").to_pylist()]))
    decisions = load_decisions(layout.root)
    if decisions:
        # the latest expert decision per QA pair, following the pair's chunk into its split
        qa_chunk = dict(zip(tables["qa_pairs"].column("qa_id").to_pylist(), tables["qa_pairs"].column("chunk_id").to_pylist())) \
            if "qa_pairs" in tables else {}
        review = rows_to_table([decisions[k] for k in sorted(decisions)], REVIEW_SCHEMA)
        chunk_ids = [qa_chunk.get(q) or c for q, c in zip(review.column("qa_id").to_pylist(), review.column("chunk_id").to_pylist())]
        review = review.set_column(review.schema.get_field_index("chunk_id"), "chunk_id", pa.array(chunk_ids, pa.string()))
        tables["review"] = review.append_column("split", pa.array([chunk_split.get(c) for c in chunk_ids], pa.string()))
    if "qa_pairs" in tables:
        qa = tables["qa_pairs"].filter(pc.equal(tables["qa_pairs"].column("status"), "approved"))
        tables["qa_pairs"] = qa.append_column("split", pa.array([chunk_split.get(c) for c in qa.column("chunk_id").to_pylist()], pa.string()))
    for name in ("quotes", "mm_items"):
        if name in tables:
            table = tables[name]
            if name == "mm_items" and "qa_pairs" in tables:
                # a QA pair rejected in review since the sets were mined takes its sets with it
                approved = set(tables["qa_pairs"].column("qa_id").to_pylist())
                keep = [origin != "qa_pair" or key in approved
                        for origin, key in zip(table.column("origin").to_pylist(), table.column("q_key").to_pylist())]
                table = table.filter(pa.array(keep, pa.bool_()))
            tables[name] = table.append_column(
                "split", pa.array([chunk_split.get(c) for c in table.column("chunk_id").to_pylist()], pa.string())
            )
    if "elements" in tables:
        element_split: dict[str, str] = {}
        for cid, members in zip(chunks.column("chunk_id").to_pylist(), chunks.column("element_ids").to_pylist()):
            for element_id in members:
                element_split.setdefault(element_id, chunk_split[cid])
        elements = tables["elements"]
        tables["elements"] = elements.append_column(
            "split", pa.array([element_split.get(e) for e in elements.column("element_id").to_pylist()], pa.string())
        )
    return tables


def version_id_for(tables: dict[str, pa.Table], settings: Settings) -> str:
    """The version id: a hash of every table's content, the relevant settings and the ragprep version."""
    digests = {name: _table_digest(t, ID_COLUMNS[name]) for name, t in sorted(tables.items())}
    return stable_id("dataset", json.dumps(digests, sort_keys=True), _settings_hash(settings), __version__)


def _counts(tables: dict[str, pa.Table]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for name, table in tables.items():
        if "split" in table.column_names:
            values = table.column("split").to_pylist()
            counts[name] = {split: values.count(split) for split in SPLITS} | {"total": table.num_rows}
        else:
            counts[name] = {"total": table.num_rows}
    return counts


def _settings_hash(settings: Settings) -> str:
    """Every setting that can change what a version holds (not where it lives or how fast it was built)."""
    return stable_id("settings", settings.fingerprint())


def _source_documents(tables: dict[str, pa.Table]) -> list[dict[str, str]]:
    documents = tables.get("documents")
    if documents is None:
        return []
    return sorted(
        ({"path": r["path"], "sha256": r["content_sha256"]} for r in documents.to_pylist() if r["status"] != "failed"),
        key=lambda d: d["path"],
    )


def _provenance(tables: dict[str, pa.Table]) -> dict[str, list[str]]:
    """Prompt id@version and provider/model pairs that produced the generated rows."""
    columns = {"chunks": ("correct_prompt", "correct_provider", "correct_model"), "qa_pairs": ("prompt", "provider", "model"),
               "elements": ("vlm_prompt", "vlm_provider", "vlm_model"), "headers": ("prompt", "provider", "model"),
               "quotes": ("vlm_prompt", "vlm_provider", "vlm_model"), "mm_items": ("prompt", "provider", "model")}
    prompts: set[str] = set()
    models: set[str] = set()
    for name, (prompt, provider, model) in columns.items():
        table = tables.get(name)
        if table is None or prompt not in table.column_names:
            continue
        prompts.update(p for p in table.column(prompt).to_pylist() if p)
        models.update(f"{a}/{b}" for a, b in zip(table.column(provider).to_pylist(), table.column(model).to_pylist()) if a)
    return {"prompts": sorted(prompts), "models": sorted(models)}


@contextmanager
def catalog_lock(root: Path) -> Iterator[None]:
    """An exclusive lock on the local catalog under ``root``: two builds never commit or move LATEST at once."""
    with LocalDatasetStore(Layout(root).datasets_dir).lock():
        yield


def latest_version(root: Path, uri: str | None = None) -> str | None:
    """The newest published version of the store (``uri``, default ``<root>/datasets``)."""
    return open_store(root, uri).latest()


def _write_split_tables(tables: dict[str, pa.Table], target: Path) -> None:
    for name, table in tables.items():
        folder = target / name
        folder.mkdir(parents=True, exist_ok=True)
        if "split" in table.column_names:
            for split in SPLITS:
                part = table.filter(pc.equal(table.column("split"), split))
                write_parquet(part, folder / f"{split}.parquet")
            orphans = table.filter(pc.is_null(table.column("split")))
            if orphans.num_rows:
                write_parquet(orphans, folder / "unassigned.parquet")
        else:
            write_parquet(table, folder / "all.parquet")


def build_version(settings: Settings, gate=None) -> BuildResult:
    """Build (or find) the dataset version of the current tables and publish it if it passes the gate.

    ``gate(tables, out_dir) -> (passed, failed_expectation_names)``; None means no gate.
    """
    layout = Layout(settings.root)
    tables = assemble_version_tables(layout, settings)
    version_id = version_id_for(tables, settings)
    store = dataset_store(settings)
    sweep_leftovers(settings.root)
    if isinstance(store, LocalDatasetStore):
        with store.lock_if_free() as free:  # never while another build holds the catalog: its staging may be live
            if free:
                store.sweep_staging()
    existing = store.find(version_id)
    if existing is not None:
        _restore_latest(store, existing)
        return _existing(existing)
    with store.staging() as staging:
        _write_split_tables(tables, staging)
        passed, failed = gate(tables, staging / "quality") if gate else (True, [])
        files = file_checksums(staging)  # everything but the manifest: recorded for `ragprep versions --verify`

        def manifest_for(parent: str | None) -> dict:  # called at commit time, after the parent is known
            return {
                "version_id": version_id,
                "parent": parent,
                "created_at": datetime.now(UTC).isoformat(),
                "source_documents": _source_documents(tables),
                "settings_hash": _settings_hash(settings),
                **_provenance(tables),
                "ragprep_version": __version__,
                "split_ratios": settings.dataset.split_ratios,
                "split_by": settings.dataset.split_by,
                "rows": _counts(tables),
                "validation": {"passed": passed, "failed": failed},
                "files": files,
            }

        commit = store.commit(staging, version_id, passed, manifest_for)
    if not commit.created:  # a concurrent build of the same inputs committed it first
        return _existing(commit.version)
    return BuildResult(version_id=version_id, created=True, published=passed, path=commit.version.location,
                       failed_expectations=failed)


def _restore_latest(store: DatasetStore, version: StoredVersion) -> None:
    """A rebuild of a published version whose LATEST is missing or dangling points LATEST at it again."""
    if version.status != "published" or store.latest_problem() is None:
        return
    pointer = store.latest()
    log.warning("%s %s; pointing it at %s, the version these tables build", store.location("LATEST"),
                "was missing" if pointer is None else f"named {pointer}, which is not committed", version.version_id)
    store.set_latest(version.version_id)


def _existing(version: StoredVersion) -> BuildResult:
    return BuildResult(version_id=version.version_id, created=False, published=version.status == "published",
                       path=version.location, failed_expectations=version.manifest["validation"]["failed"])


def list_versions(root: Path, uri: str | None = None) -> list[VersionInfo]:
    """Committed versions (published and rejected) of the store (``uri``, default ``<root>/datasets``), oldest first."""
    store = open_store(root, uri)
    latest = store.latest()
    out = [
        VersionInfo(version_id=v.version_id, status=v.status, created_at=v.manifest["created_at"], parent=v.manifest["parent"],
                    rows=v.manifest["rows"], gate_passed=v.manifest["validation"]["passed"], path=v.location,
                    is_latest=v.version_id == latest, damaged=len(store.verify(v, quick=True).problems))
        for v in store.versions()
    ]
    return sorted(out, key=lambda v: v.created_at)


def find_version(store: DatasetStore, version_id: str | None) -> StoredVersion:
    """A committed version (latest published when None); raises with the fix when absent."""
    if version_id is None:
        problem = store.latest_problem()
        if problem is not None:
            raise LatestMissingError(problem)
    chosen = version_id or store.latest()
    if chosen is None:
        raise LatestMissingError(f"no published dataset version in {store.uri}; run `ragprep dataset`")
    found = store.find(chosen)
    if found is None:
        raise FileNotFoundError(f"dataset version {chosen} not found in {store.uri}; `ragprep versions` lists them")
    return found


def latest_warning(root: Path, uri: str | None = None) -> str | None:
    """One line when LATEST is missing or dangling although published versions exist (with the command that restores it)."""
    return open_store(root, uri).latest_problem()


def set_latest(root: Path, version_id: str, uri: str | None = None) -> None:
    """Point LATEST at a committed published version (``ragprep versions --set-latest``)."""
    open_store(root, uri).set_latest(version_id)


def verify_versions(root: Path, version_id: str | None = None, uri: str | None = None) -> list[Verification]:
    """Check the files of one version (every committed version when None) against their manifests."""
    store = open_store(root, uri)
    if version_id is not None:
        found = store.find(version_id)
        if found is None:
            raise FileNotFoundError(f"dataset version {version_id} not found in {store.uri}; `ragprep versions` lists them")
        return [store.verify(found)]
    return [store.verify(v) for v in sorted(store.versions(), key=lambda v: str(v.manifest.get("created_at")))]


def version_path(root: Path, version_id: str | None, uri: str | None = None) -> str:
    """Where a version lives (latest published when None): a local path or an s3:// URI."""
    return find_version(open_store(root, uri), version_id).location


def read_version_table(store: DatasetStore, version: StoredVersion, name: str) -> pa.Table | None:
    """One table of a version, all splits concatenated (None when the version lacks it)."""
    return store.read_table(version, name)


class TableDiff(BaseModel):
    table: str
    added: int
    removed: int
    changed: int
    added_ids: list[str]
    removed_ids: list[str]
    changed_ids: list[str]


def diff_versions(root: Path, old: str, new: str, uri: str | None = None) -> list[TableDiff]:
    """Rows added, removed and changed per table between two versions (at most 50 ids of each listed)."""
    store = open_store(root, uri)
    a, b = find_version(store, old), find_version(store, new)
    out = []
    for name in VERSIONED_TABLES:
        ta, tb = read_version_table(store, a, name), read_version_table(store, b, name)
        if ta is None and tb is None:
            continue
        da = row_digests(ta, ID_COLUMNS[name]) if ta is not None else {}
        db = row_digests(tb, ID_COLUMNS[name]) if tb is not None else {}
        added = sorted(db.keys() - da.keys())
        removed = sorted(da.keys() - db.keys())
        changed = sorted(k for k in da.keys() & db.keys() if da[k] != db[k])
        out.append(TableDiff(table=name, added=len(added), removed=len(removed), changed=len(changed),
                             added_ids=added[:50], removed_ids=removed[:50], changed_ids=changed[:50]))
    return out


def quality_gate(settings: Settings):
    """The Great Expectations gate bound to the settings: (gate function, holder of its result)."""
    from schemas.qa_pairs import FLAG_CODES
    from tasks.dataset.quality import GateRules, run_quality_gate

    holder: dict = {}

    def gate(tables: dict[str, pa.Table], out_dir: Path) -> tuple[bool, list[str]]:
        rules = GateRules(
            ratios=settings.dataset.split_ratios, tolerance=settings.dataset.split_share_tolerance,
            token_bounds=settings.dataset.chunk_token_bounds, allowed_flags=FLAG_CODES,
            candidate_sets=[tuple(b) for b in settings.negatives.candidate_sets],
        )
        result = run_quality_gate(tables, rules, out_dir, image_root=settings.root)
        holder["result"] = result
        failed = [f"{o.table}: {o.expectation}" + (f" ({o.column})" if o.column else "") for o in result.outcomes if not o.success]
        return result.passed, failed

    return gate, holder
