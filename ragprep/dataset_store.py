"""dataset_store: where dataset versions live, a local folder or an ``s3://bucket/prefix``.

Layout under the store's base (``<root>/datasets`` unless ``dataset_uri`` names another)::

    versions/<id>/<table>/<split>.parquet, quality/..., manifest.json
    rejected/<id>/...                      same, for versions that failed the gate
    LATEST                                 id of the newest published version

**Commit rule: a version exists if and only if its ``manifest.json`` exists.** The manifest records
every other file of the version (``files``: relative path -> ``size`` and ``sha256``), which
:meth:`DatasetStore.verify` checks (``ragprep versions --verify``); versions published by an older
ragprep have no ``files`` and cannot be verified. ``files`` is not part of the version id. Every reader here
(find, list, latest, read, and through them ``ragprep versions``, ``diff`` and ``sql``) ignores a
version folder or prefix without one, so a build killed half-way never shows.

Local folder: the version is staged in ``<base>/.staging-*`` (same file system), the manifest is
written into the staging folder and the folder is renamed into place, all under an exclusive
``flock`` on ``<base>/.lock``; ``LATEST`` is replaced atomically (temporary file + rename) under the
same lock. A killed build can leave a ``.staging-<pid>@<host>-*`` folder behind; it is never read, and
the next build removes it (:meth:`LocalDatasetStore.sweep_staging`, only when no other build holds the
lock) once its process is gone.

S3 (there is no rename): the version is staged in a local temporary folder, every file is uploaded
to ``<kind>/<id>/`` and ``manifest.json`` goes **last**, with ``If-None-Match: *`` so a version is
committed once (a concurrent build of the same version finds it committed and reports "already
exists"). A build killed before the manifest leaves uploaded files but no version; the next build of
the same id overwrites them. ``LATEST`` moves by compare-and-swap: a conditional put with
``If-Match: <ETag read>`` (``If-None-Match: *`` when there is no pointer yet). When another build
moved the pointer in between, the put fails (412), and the build re-reads the pointer, rewrites its
own manifest's ``parent`` and tries again, up to ``CAS_ATTEMPTS`` times before raising
:class:`LatestPointerConflict`.

S3 connection, read from the standard environment when the store is opened:
``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (an S3-compatible server: MinIO, Ceph, ...),
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (/ ``AWS_SESSION_TOKEN``) or any other source of
the AWS default credential chain, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``. Files go through
``pyarrow.fs.S3FileSystem``; the two conditional writes need ``boto3``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ragprep.errors import RagprepError
from ragprep.storage import PROCESS_STARTED, Layout, atomic_write_bytes, owner_alive, owner_tag

MANIFEST = "manifest.json"
POINTER = "LATEST"
FOLDERS = {"published": "versions", "rejected": "rejected"}
CAS_ATTEMPTS = 10


class DatasetStoreError(RagprepError):
    """The dataset store cannot be opened or written; the message says why and what to do."""


class LatestPointerConflict(DatasetStoreError):
    """LATEST kept moving under this build: every compare-and-swap lost."""


class CorruptVersionError(DatasetStoreError):
    """A file of a committed version cannot be read; the message names it and how to repair the version."""


def file_checksums(folder: Path) -> dict[str, dict[str, int | str]]:
    """Every file under ``folder`` except the manifest: relative path -> ``size`` and ``sha256`` (what a manifest records)."""
    out: dict[str, dict[str, int | str]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder).as_posix()
        if relative == MANIFEST:
            continue
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        out[relative] = {"size": path.stat().st_size, "sha256": digest.hexdigest()}
    return out


@dataclass(frozen=True)
class FileProblem:
    """One file of a version that does not match its manifest: ``missing``, ``truncated``, ``changed`` or ``unexpected``."""

    path: str
    problem: str
    detail: str


@dataclass(frozen=True)
class Verification:
    """What :meth:`DatasetStore.verify` found: files checked and the problems (``recorded`` False: no checksums to check)."""

    version_id: str
    recorded: bool
    checked: int
    problems: list[FileProblem]

    @property
    def ok(self) -> bool:
        """True when every recorded file is present and unchanged (and nothing was added)."""
        return self.recorded and not self.problems


@dataclass(frozen=True)
class StoredVersion:
    """A committed version: its status (published | rejected), manifest and where it lives."""

    version_id: str
    status: str
    manifest: dict
    location: str


@dataclass(frozen=True)
class Commit:
    created: bool  # False: the version was already committed (by an earlier or a concurrent build)
    version: StoredVersion


ManifestFor = Callable[[str | None], dict]
"""Builds the manifest given the parent (the LATEST at commit time)."""


def _manifest_bytes(manifest: dict) -> bytes:
    return json.dumps(manifest, indent=2, ensure_ascii=False, default=str).encode()


class DatasetStore:
    """Reads through ``pyarrow.fs`` (the same code for both kinds); subclasses publish."""

    is_local = False

    def __init__(self, fs: pafs.FileSystem, base: str, uri: str) -> None:
        self.fs = fs
        self.base = base.rstrip("/")
        self.uri = uri

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r})"

    # paths
    def _path(self, *parts: str) -> str:
        return "/".join(p for p in (self.base, *parts) if p)

    def location(self, *parts: str) -> str:
        """Human-readable address of a path under the base (a local path or an s3:// URI)."""
        return "/".join((self.uri.rstrip("/"), *parts))

    def _read_bytes(self, *parts: str) -> bytes | None:
        try:
            with self.fs.open_input_stream(self._path(*parts)) as stream:
                return stream.read()
        except FileNotFoundError:
            return None

    # reading
    def manifest(self, status: str, version_id: str) -> dict | None:
        """The manifest of a version in ``status``'s folder; None when it has none (no committed version)."""
        data = self._read_bytes(FOLDERS[status], version_id, MANIFEST)
        return json.loads(data) if data is not None else None

    def find(self, version_id: str) -> StoredVersion | None:
        """The committed version with this id, published or rejected; None when there is none."""
        for status, folder in FOLDERS.items():
            manifest = self.manifest(status, version_id)
            if manifest is not None:
                return StoredVersion(version_id, status, manifest, self.location(folder, version_id))
        return None

    def versions(self) -> list[StoredVersion]:
        """Every committed version (folders without a manifest are not versions)."""
        out = []
        for status, folder in FOLDERS.items():
            entries = self.fs.get_file_info(pafs.FileSelector(self._path(folder), allow_not_found=True))
            for entry in sorted(entries, key=lambda e: e.base_name):
                if entry.type != pafs.FileType.Directory or entry.base_name.startswith("."):
                    continue
                manifest = self.manifest(status, entry.base_name)
                if manifest is not None:
                    out.append(StoredVersion(entry.base_name, status, manifest, self.location(folder, entry.base_name)))
        return out

    def latest(self) -> str | None:
        """The id LATEST names (the newest published version); None when nothing is published."""
        data = self._read_bytes(POINTER)
        return (data.decode().strip() or None) if data is not None else None

    def _table_files(self, version: StoredVersion) -> dict[str, list[str]]:
        folder = self._path(FOLDERS[version.status], version.version_id)
        files: dict[str, list[str]] = {}
        for entry in self.fs.get_file_info(pafs.FileSelector(folder, recursive=True, allow_not_found=True)):
            relative = entry.path[len(folder) + 1:].split("/")
            if entry.type == pafs.FileType.File and len(relative) == 2 and relative[1].endswith(".parquet"):
                files.setdefault(relative[0], []).append(entry.path)
        return {name: sorted(paths) for name, paths in sorted(files.items())}

    def table_names(self, version: StoredVersion) -> list[str]:
        """Tables of a version: its sub-folders that hold Parquet files."""
        return list(self._table_files(version))

    def read_table(self, version: StoredVersion, name: str) -> pa.Table | None:
        """All split files of one table, concatenated (None when the version lacks the table); an unreadable
        file raises :class:`CorruptVersionError` naming it."""
        paths = self._table_files(version).get(name)
        if not paths:
            return None
        tables = []
        for path in paths:
            try:
                tables.append(pq.read_table(path, filesystem=self.fs))
            except (pa.ArrowInvalid, OSError) as exc:
                raise self.corrupt(version, path[len(self.base) + 1:], exc) from exc
        return pa.concat_tables(tables, promote_options="default")

    def check_footers(self, version: StoredVersion) -> None:
        """Read the footer of every table file of a version: a truncated one raises :class:`CorruptVersionError` naming it."""
        for paths in self._table_files(version).values():
            for path in paths:
                try:
                    pq.read_metadata(path, filesystem=self.fs)
                except (pa.ArrowInvalid, OSError) as exc:
                    raise self.corrupt(version, path[len(self.base) + 1:], exc) from exc

    def corrupt(self, version: StoredVersion, relative: str, exc: BaseException) -> CorruptVersionError:
        """The one-line error for an unreadable file (``relative`` to the base) of a committed version."""
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return CorruptVersionError(
            f"{self.location(relative)} of dataset version {version.version_id} is unreadable ({reason}); "
            f"`ragprep versions --verify --version {version.version_id}` checks every file; restore the version from a backup, "
            f"or delete {version.location} and run `ragprep dataset` to rebuild it"
        )

    def _hash(self, path: str) -> str:
        digest = hashlib.sha256()
        with self.fs.open_input_stream(path) as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()

    def verify(self, version: StoredVersion, quick: bool = False) -> Verification:
        """Check every file of a version against the sizes and SHA-256 its manifest recorded at publish time;
        ``quick``: sizes and each Parquet file's closing magic bytes only (no hashing: cheap enough for every listing)."""
        recorded = version.manifest.get("files")
        if recorded is None:
            return Verification(version.version_id, False, 0, [])
        folder = self._path(FOLDERS[version.status], version.version_id)
        present = {
            entry.path[len(folder) + 1:]: entry.size
            for entry in self.fs.get_file_info(pafs.FileSelector(folder, recursive=True, allow_not_found=True))
            if entry.type == pafs.FileType.File
        }
        problems = []
        for relative, expected in sorted(recorded.items()):
            where = self.location(FOLDERS[version.status], version.version_id, relative)
            size = present.get(relative)
            if size is None:
                problems.append(FileProblem(where, "missing", f"expected {expected['size']} bytes"))
            elif size < expected["size"]:
                problems.append(FileProblem(where, "truncated", f"{size} of {expected['size']} bytes"))
            elif quick:
                if size != expected["size"] or not self._parquet_tail_ok(f"{folder}/{relative}"):
                    problems.append(FileProblem(where, "changed", f"{size} bytes, not the file the manifest recorded"))
            elif size != expected["size"] or self._hash(f"{folder}/{relative}") != expected["sha256"]:
                problems.append(FileProblem(where, "changed", f"{size} bytes, SHA-256 differs from the manifest"))
        for relative in sorted(present.keys() - recorded.keys() - {MANIFEST}):
            problems.append(FileProblem(self.location(FOLDERS[version.status], version.version_id, relative), "unexpected",
                                        "not in the manifest"))
        return Verification(version.version_id, True, len(recorded), problems)

    def _parquet_tail_ok(self, path: str) -> bool:
        """True unless ``path`` is a Parquet file that does not end with Parquet's magic bytes."""
        if not path.endswith(".parquet"):
            return True
        try:
            with self.fs.open_input_file(path) as handle:
                handle.seek(max(handle.size() - 4, 0))
                return handle.read(4) == b"PAR1"
        except OSError:
            return False

    def newest_published(self) -> tuple[str | None, int]:
        """The newest published version by creation time (None when there is none) and how many are published."""
        published = sorted((v for v in self.versions() if v.status == "published"), key=lambda v: str(v.manifest.get("created_at")))
        return (published[-1].version_id if published else None), len(published)

    def latest_problem(self) -> str | None:
        """One line when ``LATEST`` is missing or names no committed published version while versions exist; else None.

        The line names the file, the newest published version and the command that restores the pointer."""
        pointer = self.latest()
        if pointer is not None:
            found = self.find(pointer)
            if found is not None and found.status == "published":
                return None
        newest, count = self.newest_published()
        if newest is None:
            if pointer is None:
                return None
            return f"{self.location(POINTER)} names {pointer}, which is not a published version, and none is published; run `ragprep dataset`"
        what = (f"is missing but {count} published version{'s' if count != 1 else ''} exist{'s' if count == 1 else ''}"
                if pointer is None else f"names {pointer}, which is not a committed published version")
        return f"{self.location(POINTER)} {what}; newest published is {newest}; restore with `ragprep versions --set-latest {newest}`"

    def set_latest(self, version_id: str) -> None:
        """Point ``LATEST`` at a committed published version (the subclasses implement it)."""
        raise NotImplementedError

    def _published(self, version_id: str) -> StoredVersion:
        found = self.find(version_id)
        if found is None or found.status != "published":
            state = "not committed" if found is None else f"{found.status}, not published"
            raise DatasetStoreError(f"dataset version {version_id} in {self.uri} is {state}; `ragprep versions` lists the published ones")
        return found

    # writing
    @contextmanager
    def staging(self) -> Iterator[Path]:
        """A local folder to write a version into before :meth:`commit`; removed afterwards."""
        folder = Path(tempfile.mkdtemp(prefix="ragprep-staging-"))
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def commit(self, staging: Path, version_id: str, passed: bool, manifest_for: ManifestFor) -> Commit:
        """Commit a staged version, published when ``passed`` else rejected; the subclasses implement it."""
        raise NotImplementedError


class LocalDatasetStore(DatasetStore):
    """A folder on a local (or POSIX-locking network) file system: rename + flock."""

    is_local = True

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        super().__init__(pafs.LocalFileSystem(), str(self.directory.absolute()), str(self.directory))

    def local_dir(self, version: StoredVersion, *parts: str) -> Path:
        """The local folder of a version, or of a path under it."""
        return self.directory.joinpath(FOLDERS[version.status], version.version_id, *parts)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """An exclusive lock on the catalog: two builds never commit or move LATEST at once."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / ".lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextmanager
    def lock_if_free(self) -> Iterator[bool]:
        """The catalog lock when no other build holds it (True), else nothing (False): never waits."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / ".lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextmanager
    def staging(self) -> Iterator[Path]:
        """A staging folder inside the store (same file system, so the commit's rename is atomic); removed afterwards."""
        self.directory.mkdir(parents=True, exist_ok=True)
        # same file system: rename is atomic; the owner in the name lets a later build tell a dead build's folder
        folder = Path(tempfile.mkdtemp(dir=self.directory, prefix=f".staging-{owner_tag()}-"))
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def sweep_staging(self) -> list[Path]:
        """Remove the ``.staging-*`` folders of builds that are gone (call under :meth:`lock_if_free`): the owner's
        process has ended on this host, or, for another host's or an older ragprep's folder, it was last
        touched a day (another host) or this process's start (no owner) ago. Returns what was removed."""
        removed = []
        for entry in self.directory.glob(".staging-*"):
            tag = entry.name[len(".staging-"):].rsplit("-", 1)[0]
            alive = owner_alive(tag) if "@" in tag else None
            try:
                touched = entry.stat().st_mtime
            except FileNotFoundError:
                continue
            stale = alive is False or (alive is None and touched < (time.time() - 86400 if "@" in tag else PROCESS_STARTED))
            if stale and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
        return removed

    def set_latest(self, version_id: str) -> None:
        """Under the lock: point ``LATEST`` at a committed published version."""
        with self.lock():
            self._published(version_id)
            atomic_write_bytes(self.directory / POINTER, version_id.encode())

    def commit(self, staging: Path, version_id: str, passed: bool, manifest_for: ManifestFor) -> Commit:
        """Under the lock: write the manifest, rename the staging folder into place and, when ``passed``, move LATEST."""
        status = "published" if passed else "rejected"
        with self.lock():
            existing = self.find(version_id)
            if existing is not None:  # a concurrent build of the same inputs committed first
                return Commit(created=False, version=existing)
            manifest = manifest_for(self.latest())
            (staging / MANIFEST).write_bytes(_manifest_bytes(manifest))
            target = self.directory / FOLDERS[status] / version_id
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():  # a folder without a manifest is no version (put there by hand): replace it
                shutil.rmtree(target)
            os.rename(staging, target)
            if passed:
                atomic_write_bytes(self.directory / POINTER, version_id.encode())
        return Commit(created=True, version=StoredVersion(version_id, status, manifest, str(target)))


@dataclass(frozen=True)
class Pointer:
    """LATEST as read: its value and the ETag a compare-and-swap must match (None: absent)."""

    version_id: str | None
    etag: str | None


class S3DatasetStore(DatasetStore):
    """An ``s3://bucket/prefix`` on AWS or any S3-compatible server: manifest-last uploads + CAS on LATEST."""

    def __init__(self, uri: str, endpoint: str | None = None, region: str | None = None) -> None:
        parsed = urlparse(uri)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise DatasetStoreError(f"not an S3 URI: {uri!r} (expected s3://bucket/prefix)")
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        self.endpoint = endpoint
        self.region = region
        fs = pafs.S3FileSystem(endpoint_override=endpoint, region=region) if region else pafs.S3FileSystem(endpoint_override=endpoint)
        super().__init__(fs, "/".join(p for p in (self.bucket, self.prefix) if p), uri.rstrip("/"))
        self._client = None

    @property
    def client(self):
        """The boto3 S3 client for the conditional writes, created on first use."""
        if self._client is None:
            try:
                import boto3
            except ImportError as exc:  # pragma: no cover - boto3 comes with the test extra
                raise DatasetStoreError("an s3:// dataset_uri needs boto3 for its conditional writes: pip install boto3") from exc
            self._client = boto3.client("s3", endpoint_url=self.endpoint, region_name=self.region)
        return self._client

    def _key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def read_pointer(self) -> Pointer:
        """LATEST and its ETag; ``Pointer(None, None)`` when there is none."""
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(POINTER))
        except self.client.exceptions.NoSuchKey:
            return Pointer(None, None)
        return Pointer(response["Body"].read().decode().strip() or None, response["ETag"])

    def swap_pointer(self, expected: Pointer, version_id: str) -> bool:
        """Compare-and-swap LATEST: True when it moved, False when it no longer matched ``expected``."""
        condition = {"IfMatch": expected.etag} if expected.etag else {"IfNoneMatch": "*"}
        return self._put(POINTER, version_id.encode(), **condition)

    def set_latest(self, version_id: str) -> None:
        """Point ``LATEST`` at a committed published version, by compare-and-swap."""
        self._published(version_id)
        for _ in range(CAS_ATTEMPTS):
            if self.swap_pointer(self.read_pointer(), version_id):
                return
        raise LatestPointerConflict(f"{self.location(POINTER)} moved {CAS_ATTEMPTS} times while setting it to {version_id}; try again")

    def _put(self, name: str, body: bytes, **condition: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(name), Body=body, **condition)
        except ClientError as exc:
            # 412 PreconditionFailed: the condition no longer holds; 409 ConditionalRequestConflict:
            # AWS S3's answer while a concurrent conditional write to the same key is in flight.
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict"):
                return False
            raise
        return True

    def commit(self, staging: Path, version_id: str, passed: bool, manifest_for: ManifestFor) -> Commit:
        """Upload the staged files, then the manifest (once, If-None-Match); when ``passed``, move LATEST by compare-and-swap."""
        status = "published" if passed else "rejected"
        folder = f"{FOLDERS[status]}/{version_id}"
        existing = self.find(version_id)
        if existing is not None:
            return Commit(created=False, version=existing)
        for path in sorted(p for p in staging.rglob("*") if p.is_file()):
            relative = path.relative_to(staging).as_posix()
            if relative == MANIFEST:
                continue
            with self.fs.open_output_stream(self._path(folder, relative)) as out:
                out.write(path.read_bytes())
        manifest_written, previous_parent = False, None
        for _ in range(CAS_ATTEMPTS):
            pointer = self.read_pointer()
            manifest = manifest_for(pointer.version_id)
            body = _manifest_bytes(manifest)
            if not manifest_written:  # the commit: created once, last
                if not self._put(f"{folder}/{MANIFEST}", body, IfNoneMatch="*"):
                    committed = self.find(version_id)
                    if committed is None:  # pragma: no cover - a manifest cannot vanish
                        raise DatasetStoreError(f"{self.location(folder, MANIFEST)} exists but cannot be read")
                    return Commit(created=False, version=committed)
                manifest_written = True
            elif manifest.get("parent") != previous_parent:
                self._put(f"{folder}/{MANIFEST}", body)  # our own manifest: the parent moved under us
            previous_parent = manifest.get("parent")
            version = StoredVersion(version_id, status, manifest, self.location(folder))
            if not passed or self.swap_pointer(pointer, version_id):
                return Commit(created=True, version=version)
        raise LatestPointerConflict(
            f"{self.location(POINTER)} moved {CAS_ATTEMPTS} times while publishing {version_id}; the version is "
            f"committed at {self.location(folder)} but LATEST does not name it: run the build again to publish it"
        )


def open_store(root: Path, uri: str | None = None) -> DatasetStore:
    """The store named by ``uri`` (a local path, ``file://`` or ``s3://bucket/prefix``); ``<root>/datasets`` when None."""
    if not uri:
        return LocalDatasetStore(Layout(root).datasets_dir)
    if uri.startswith("s3://"):
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None
        return S3DatasetStore(uri, endpoint=endpoint, region=region)
    if uri.startswith("file://"):
        return LocalDatasetStore(Path(urlparse(uri).path))
    if "://" in uri:
        raise DatasetStoreError(f"dataset_uri {uri!r}: only a local path, file:// or s3:// is supported")
    return LocalDatasetStore(Path(uri))
