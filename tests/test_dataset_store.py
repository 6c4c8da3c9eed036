"""Dataset stores: versions in s3:// (a real moto S3 server on loopback) and in a local folder,
manifest-last commits, compare-and-swap on LATEST, and builds running at the same time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import boto3
import pyarrow.fs as pafs
import pytest
from moto.server import ThreadedMotoServer

from ragprep.catalog import run_query
from ragprep.dataset_store import (
    CorruptVersionError,
    DatasetStoreError,
    LocalDatasetStore,
    S3DatasetStore,
    open_store,
)
from ragprep.settings import Settings
from ragprep.splits import SPLITS
from ragprep.storage import Layout
from tasks.dataset.versions import (
    assemble_version_tables,
    build_version,
    catalog_lock,
    diff_versions,
    latest_version,
    list_versions,
    version_id_for,
)
from tests.conftest import REPO, SAMPLE_DOCS
from tests.test_dataset import ALL_BUT_ONE, ingest

SIXTH = SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx"


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    """Two roots with real tables: ``a`` holds five sample documents, ``b`` the same five plus one."""
    a = tmp_path_factory.mktemp("store") / "a"
    ingest(a, ALL_BUT_ONE)
    b = a.parent / "b"
    shutil.copytree(a, b)
    ingest(b, ALL_BUT_ONE + [SIXTH])  # unchanged documents come from their cached parts
    return a, b


@pytest.fixture(scope="module")
def s3_server():
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_uri(s3_server, monkeypatch):
    """A fresh versioned bucket on the loopback S3 server; the dataset URI under it. Connection from the standard env."""
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    bucket = f"ragprep-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=s3_server)
    client.create_bucket(Bucket=bucket)
    # every PUT makes an object version: counting them shows whether anything was uploaded
    client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    return f"s3://{bucket}/teams/safety"


def _client():
    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])


def _objects(uri: str) -> dict[str, int]:
    """Key (relative to the dataset URI) -> number of stored versions of it."""
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    counts: dict[str, int] = {}
    for page in _client().get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for version in page.get("Versions", []):
            key = version["Key"][len(prefix) + 1:]
            counts[key] = counts.get(key, 0) + 1
    return counts


def test_s3_build_publish_list_sql_and_diff(roots, s3_uri):
    a, b = roots
    settings_a = Settings(root=a, dataset_uri=s3_uri)
    v1 = build_version(settings_a)
    assert v1.created and v1.published and v1.path == f"{s3_uri}/versions/{v1.version_id}"
    assert v1.version_id == version_id_for(assemble_version_tables(Layout(a), settings_a), Settings(root=a)), \
        "where versions are stored does not change the version id"
    objects = _objects(s3_uri)
    assert objects["LATEST"] == 1 and f"versions/{v1.version_id}/manifest.json" in objects
    for split in SPLITS:
        assert f"versions/{v1.version_id}/chunks/{split}.parquet" in objects
    assert f"versions/{v1.version_id}/quality/data_docs/index.html" not in objects  # no gate given
    assert not (a / "datasets").exists(), "nothing is written to the local default store"
    assert latest_version(a, s3_uri) == v1.version_id

    again = build_version(settings_a)
    assert again.version_id == v1.version_id and not again.created and again.published
    assert _objects(s3_uri) == objects, "the same inputs upload nothing"

    v2 = build_version(Settings(root=b, dataset_uri=s3_uri))
    assert v2.created and v2.published and v2.version_id != v1.version_id
    assert latest_version(a, s3_uri) == v2.version_id and _objects(s3_uri)["LATEST"] == 2
    listed = list_versions(a, s3_uri)
    assert [(v.version_id, v.status, v.is_latest) for v in listed] == [(v1.version_id, "published", False),
                                                                       (v2.version_id, "published", True)]
    assert listed[1].parent == v1.version_id and listed[1].path == f"{s3_uri}/versions/{v2.version_id}"

    columns, rows = run_query(Layout(a), "select split, count(*) as n from chunks group by 1 order by 1", uri=s3_uri)
    assert columns == ["split", "n"] and {r[0] for r in rows} <= set(SPLITS)
    assert sum(r[1] for r in rows) == listed[1].rows["chunks"]["total"]
    _, rows = run_query(Layout(a), "select count(*) from chunks", version=v1.version_id, uri=s3_uri)
    assert rows == [(listed[0].rows["chunks"]["total"],)]
    _, rows = run_query(Layout(a), "select count(*) from qa_pairs where split is null", uri=s3_uri)
    assert rows == [(0,)]

    diffs = {d.table: d for d in diff_versions(a, v1.version_id, v2.version_id, s3_uri)}
    assert diffs["chunks"].added == 4 and diffs["chunks"].removed == 0 and diffs["chunks"].changed == 0
    assert diffs["documents"].added == 1
    with pytest.raises(FileNotFoundError, match="not found"):
        diff_versions(a, v1.version_id, "0000000000000000", s3_uri)


class FailingUploads:
    """A real S3 file system whose uploads fail after ``allowed`` files (a connection lost mid-publish)."""

    def __init__(self, real: pafs.FileSystem, allowed: int) -> None:
        self.real, self.allowed, self.uploaded = real, allowed, 0

    def open_output_stream(self, path, *args, **kwargs):
        if self.uploaded >= self.allowed:
            raise OSError(f"connection reset while uploading {path}")
        self.uploaded += 1
        return self.real.open_output_stream(path, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_s3_partial_upload_is_no_version_and_latest_stays(roots, s3_uri, monkeypatch):
    a, b = roots
    v1 = build_version(Settings(root=a, dataset_uri=s3_uri))
    real = pafs.S3FileSystem
    monkeypatch.setattr(pafs, "S3FileSystem", lambda **kwargs: FailingUploads(real(**kwargs), allowed=5))
    settings_b = Settings(root=b, dataset_uri=s3_uri)
    with pytest.raises(OSError, match="connection reset"):
        build_version(settings_b)
    monkeypatch.setattr(pafs, "S3FileSystem", real)
    v2_id = version_id_for(assemble_version_tables(Layout(b), settings_b), settings_b)
    left = [k for k in _objects(s3_uri) if k.startswith(f"versions/{v2_id}/")]
    assert len(left) == 5 and f"versions/{v2_id}/manifest.json" not in left, "files were uploaded, the commit marker not"
    assert [v.version_id for v in list_versions(a, s3_uri)] == [v1.version_id]
    assert latest_version(a, s3_uri) == v1.version_id
    assert open_store(a, s3_uri).find(v2_id) is None
    with pytest.raises(FileNotFoundError, match="not found"):
        diff_versions(a, v1.version_id, v2_id, s3_uri)
    _, rows = run_query(Layout(a), "select count(*) from chunks", uri=s3_uri)
    assert rows == [(list_versions(a, s3_uri)[0].rows["chunks"]["total"],)]

    v2 = build_version(settings_b)  # the next build overwrites the leftovers and commits
    assert v2.version_id == v2_id and v2.created and v2.published and latest_version(a, s3_uri) == v2_id


def test_s3_versions_are_verified_and_a_lost_latest_is_reported_and_restored(roots, s3_uri):
    a, _ = roots
    v1 = build_version(Settings(root=a, dataset_uri=s3_uri))
    store = open_store(a, s3_uri)
    version = store.find(v1.version_id)
    files = version.manifest["files"]
    assert set(files) == {k.split("/", 2)[2] for k in _objects(s3_uri) if k.startswith("versions/")} - {"manifest.json"}
    assert store.verify(version).ok

    bucket, _, prefix = s3_uri.removeprefix("s3://").partition("/")
    name = sorted(n for n in files if n.startswith("chunks/"))[0]
    key = f"{prefix}/versions/{v1.version_id}/{name}"
    body = _client().get_object(Bucket=bucket, Key=key)["Body"].read()
    _client().put_object(Bucket=bucket, Key=key, Body=body[:64])
    result = store.verify(version)
    assert [(p.path, p.problem) for p in result.problems] == [(f"{s3_uri}/versions/{v1.version_id}/{name}", "truncated")]
    with pytest.raises(CorruptVersionError, match=f"{s3_uri}/versions/{v1.version_id}/{name} of dataset version"):
        store.read_table(version, "chunks")

    _client().delete_object(Bucket=bucket, Key=f"{prefix}/LATEST")
    assert store.latest_problem() == (f"{s3_uri}/LATEST is missing but 1 published version exists; newest published is "
                                      f"{v1.version_id}; restore with `ragprep versions --set-latest {v1.version_id}`")
    store.set_latest(v1.version_id)
    assert store.latest() == v1.version_id and store.latest_problem() is None


def test_s3_latest_moves_by_compare_and_swap(roots, s3_uri):
    a, _ = roots
    store = open_store(a, s3_uri)
    assert isinstance(store, S3DatasetStore) and store.latest() is None
    empty_1, empty_2 = store.read_pointer(), store.read_pointer()
    assert empty_1.version_id is None and empty_1.etag is None
    assert store.swap_pointer(empty_1, "aaaa") is True
    assert store.swap_pointer(empty_2, "bbbb") is False, "a second writer that saw no pointer loses"
    seen_1, seen_2 = store.read_pointer(), store.read_pointer()
    assert seen_1.version_id == "aaaa" and seen_1.etag
    assert store.swap_pointer(seen_1, "cccc") is True
    assert store.swap_pointer(seen_2, "dddd") is False, "a writer holding a stale ETag loses"
    assert store.latest() == "cccc" and _objects(s3_uri)["LATEST"] == 2


def _gate_barrier(parties: int):
    barrier = threading.Barrier(parties, timeout=60)

    def gate(tables, out_dir):  # both builds have staged before either commits
        barrier.wait()
        return True, []

    return gate


def test_concurrent_s3_builds_chain_their_parents(roots, s3_uri):
    a, b = roots
    results: dict[str, object] = {}
    gate = _gate_barrier(2)

    def build(name, root):
        try:
            results[name] = build_version(Settings(root=root, dataset_uri=s3_uri), gate)
        except Exception as exc:  # noqa: BLE001 - the assertion below reports it
            results[name] = exc

    threads = [threading.Thread(target=build, args=(n, r)) for n, r in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(not isinstance(r, BaseException) for r in results.values()), results
    ids = {results["a"].version_id, results["b"].version_id}
    assert len(ids) == 2 and all(r.created and r.published for r in results.values())
    listed = {v.version_id: v for v in list_versions(a, s3_uri)}
    latest = latest_version(a, s3_uri)
    (other,) = ids - {latest}
    assert set(listed) == ids and listed[latest].is_latest
    assert listed[latest].parent == other and listed[other].parent is None, "the pointer moved once per build, in order"
    assert [v.version_id for v in list_versions(a, s3_uri)] == [other, latest], "listed in commit order"


def test_concurrent_s3_builds_of_the_same_inputs_commit_once(roots, s3_uri):
    a, _ = roots
    results: list[object] = []
    gate = _gate_barrier(2)

    def build():
        try:
            results.append(build_version(Settings(root=a, dataset_uri=s3_uri), gate))
        except Exception as exc:  # noqa: BLE001 - the assertion below reports it
            results.append(exc)

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == 2 and all(not isinstance(r, Exception) for r in results), results
    assert results[0].version_id == results[1].version_id
    assert sorted(r.created for r in results) == [False, True], "one build commits, the other finds it committed"
    objects = _objects(s3_uri)
    assert objects[f"versions/{results[0].version_id}/manifest.json"] == 1 and objects["LATEST"] == 1
    assert latest_version(a, s3_uri) == results[0].version_id


def test_open_store_accepts_paths_file_and_s3_uris(tmp_path):
    assert isinstance(open_store(tmp_path), LocalDatasetStore) and open_store(tmp_path).uri == str(tmp_path / "datasets")
    assert open_store(tmp_path, str(tmp_path / "elsewhere")).uri == str(tmp_path / "elsewhere")
    assert open_store(tmp_path, f"file://{tmp_path}/x").uri == f"{tmp_path}/x"
    with pytest.raises(DatasetStoreError, match="only a local path"):
        open_store(tmp_path, "ftp://host/datasets")
    with pytest.raises(DatasetStoreError, match="s3://bucket/prefix"):
        S3DatasetStore("s3:///no-bucket")


# -- local store: processes building at once ---------------------------------------------------------------

BUILD_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    sys.path.insert(0, {repo!r})
    from ragprep.settings import Settings
    from tasks.dataset.versions import build_version

    root, uri, go = Path(sys.argv[1]), sys.argv[2] or None, Path(sys.argv[3])

    def gate(tables, out_dir):
        print("gated", flush=True)
        while not go.exists():  # every process stages before any commits
            time.sleep(0.02)
        return True, []

    result = build_version(Settings(root=root, dataset_uri=uri), gate)
    print(json.dumps(result.model_dump()), flush=True)
    """
)


def _start_build(root, uri, go):
    script = BUILD_SCRIPT.format(repo=str(REPO))
    return subprocess.Popen([sys.executable, "-c", script, str(root), uri or "", str(go)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)


def _finish(proc) -> dict:
    out, errors = proc.communicate(timeout=120)
    assert proc.returncode == 0, errors[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_local_builds_at_once_leave_a_consistent_catalog(roots, tmp_path):
    a, b = roots
    shared = tmp_path / "shared-datasets"  # dataset_uri: one local store for both roots
    go = tmp_path / "go"
    procs = [_start_build(root, str(shared), go) for root in (a, b, a)]  # different inputs, and the same inputs twice
    for proc in procs:
        assert proc.stdout.readline().strip() == "gated"
    go.touch()
    first_a, only_b, second_a = (_finish(p) for p in procs)
    assert first_a["version_id"] == second_a["version_id"] != only_b["version_id"]
    assert sorted([first_a["created"], second_a["created"]]) == [False, True], "the same version is committed once"
    assert only_b["created"] and all(r["published"] for r in (first_a, only_b, second_a))
    ids = {first_a["version_id"], only_b["version_id"]}
    assert {p.name for p in (shared / "versions").iterdir()} == ids
    assert all((shared / "versions" / v / "manifest.json").is_file() for v in ids)
    assert not list(shared.glob(".staging-*")), "no staging folder is left behind"
    latest = latest_version(a, str(shared))
    (other,) = ids - {latest}
    listed = {v.version_id: v for v in list_versions(a, str(shared))}
    assert listed[latest].is_latest and listed[latest].parent == other and listed[other].parent is None
    assert list(listed) == [other, latest], "listed in commit order"
    _, rows = run_query(Layout(a), "select count(*) from chunks", uri=str(shared))
    assert rows == [(listed[latest].rows["chunks"]["total"],)]


def test_a_build_waits_for_the_catalog_lock(roots, tmp_path):
    a, _ = roots
    root = tmp_path / "root"
    shutil.copytree(a, root, ignore=shutil.ignore_patterns("datasets"))
    go = tmp_path / "go"
    go.touch()
    with catalog_lock(root):
        proc = _start_build(root, None, go)
        assert proc.stdout.readline().strip() == "gated"
        time.sleep(1.5)
        assert proc.poll() is None, "the build waits for the lock before committing"
        assert latest_version(root) is None and not (root / "datasets" / "versions").exists()
    result = _finish(proc)
    assert result["created"] and latest_version(root) == result["version_id"]
    assert (root / "datasets" / "versions" / result["version_id"] / "manifest.json").is_file()
