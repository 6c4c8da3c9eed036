"""``ragprep serve`` and the Prefect API a CLI run uses.

- :class:`ApiServer`: a Prefect API server (uvicorn, ``prefect.server.api.server:create_app``) on
  127.0.0.1, started in its own process group with ``PR_SET_PDEATHSIG``: it dies with the process that
  started it, even after ``kill -9`` (Prefect's own temporary server is a plain ``Popen`` stopped by
  ``atexit``, which a killed parent never runs: the server stays orphaned holding its port).
- :func:`use_prefect_api`: what a CLI run talks to: ``PREFECT_API_URL`` when set, else the server of a
  running ``ragprep serve`` on this machine (its state file), else a temporary :class:`ApiServer` with a
  start timeout of ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS`` (90 s unless set) and a one-line
  error when it does not come up.
- :class:`Service`: the server (with the UI), the ``ragprep`` process work pool, the deployments of
  ``deploy/prefect.yaml`` (``prefect deploy``), a process worker, and the read-only web root of the root's
  reports; stops all it started, the worker's process group with SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from urllib.error import URLError
from urllib.request import urlopen

from flows.runtime import CHECKOUT
from ragprep.errors import RagprepError
from ragprep.webroot import WebRoot

START_TIMEOUT_VAR = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
DEFAULT_START_TIMEOUT_S = 90
"""Prefect's own default is 20 s: a first start on a fresh Prefect home (database migrations) on a busy
two-core machine takes longer."""
STOP_GRACE_S = 10.0
"""A worker ignores SIGTERM while it finishes up; after this its process group gets SIGKILL."""
PREFECT = str(Path(sys.executable).with_name("prefect"))
DEPLOY_FILE = CHECKOUT / "deploy" / "prefect.yaml"
POOL = "ragprep"


class ServerStartError(RagprepError):
    """The Prefect API server did not come up."""


def state_file() -> Path:
    """Where a running ``ragprep serve`` writes its addresses (``RAGPREP_SERVE_STATE`` names another file)."""
    return Path(os.environ.get("RAGPREP_SERVE_STATE") or Path.home() / ".ragprep" / "serve.json")


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """preexec_fn: SIGTERM when the parent dies (Linux ``PR_SET_PDEATHSIG``); a no-op elsewhere."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the parent died before prctl
        os._exit(1)


def healthy(api_url: str, timeout: float = 2.0) -> bool:
    """Whether a Prefect API answers its health check."""
    try:
        with urlopen(f"{api_url.rstrip('/')}/health", timeout=timeout) as reply:  # noqa: S310 - loopback http
            return reply.status == 200
    except (URLError, OSError, ValueError):
        return False


def stop_group(proc: subprocess.Popen, grace: float = STOP_GRACE_S) -> None:
    """SIGTERM to the process group of ``proc``, SIGKILL after ``grace`` seconds; waits for it."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # grandchildren left in the group


def start_timeout() -> int:
    """The server start timeout: ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``, default 90 s."""
    value = os.environ.get(START_TIMEOUT_VAR)
    try:
        return int(value) if value else DEFAULT_START_TIMEOUT_S
    except ValueError as exc:
        raise ServerStartError(f"{START_TIMEOUT_VAR}={value!r} is not a whole number of seconds; fix the variable") from exc


class ApiServer:
    """A Prefect API server on 127.0.0.1:``port`` in its own process group that dies with its parent."""

    def __init__(self, port: int | None = None, ui: bool = False, env: dict[str, str] | None = None) -> None:
        self.port = port or free_port()
        self.ui = ui
        self.env = env or {}
        self.proc: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - the server's stderr (a pipe could fill and block it)

    @property
    def api_url(self) -> str:
        """``http://127.0.0.1:<port>/api``."""
        return f"http://127.0.0.1:{self.port}/api"

    def start(self, timeout: float | None = None, label: str = "temporary") -> ApiServer:
        """Start it and wait until it answers; one-line :class:`ServerStartError` when it does not within ``timeout``."""
        timeout = timeout or start_timeout()
        env = {**os.environ, "PREFECT_SERVER_API_HOST": "127.0.0.1", "PREFECT_SERVER_API_PORT": str(self.port),
               "PREFECT_UI_API_URL": self.api_url, **self.env}
        env.pop("PREFECT_API_URL", None)  # the server is not a client of another server
        if not self.ui:
            env.update({"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1"})
        self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
            [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1",
             "--port", str(self.port), "--log-level", "error", "--lifespan", "on"],
            env=env, start_new_session=True, preexec_fn=_die_with_parent, stdout=subprocess.DEVNULL, stderr=self._log,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.seek(0)
                tail = self._log.read().decode(errors="replace").strip().splitlines()[-1:]
                raise ServerStartError(
                    f"Prefect's {label} API server exited with code {self.proc.returncode} while starting"
                    f"{': ' + tail[0] if tail else ''}; run `prefect server start` to see why, or set PREFECT_API_URL"
                )
            if healthy(self.api_url, timeout=1.0):
                return self
            time.sleep(0.2)
        self.stop()
        raise ServerStartError(
            f"Prefect's {label} API server did not start within {timeout:.0f} s; set {START_TIMEOUT_VAR} higher, "
            "or run `ragprep serve` (later runs use its server), or set PREFECT_API_URL"
        )

    def stop(self) -> None:
        """Stop its process group (SIGTERM, then SIGKILL after a grace period)."""
        if self.proc is not None:
            stop_group(self.proc, grace=5.0)
            self.proc = None


_api = ExitStack()
_api_url: str | None = None


def _apply_api_url(url: str) -> None:
    """Point this process's Prefect client at ``url`` (the environment for children, the settings for Prefect here)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    os.environ["PREFECT_API_URL"] = url
    _api.enter_context(temporary_settings(updates={PREFECT_API_URL: url}))


def running_service() -> dict | None:
    """The state of the ``ragprep serve`` running on this machine, when its API answers; else None."""
    path = state_file()
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("api_url"), str):  # a garbled file: no service
        return None
    return state if state["api_url"] and healthy(state["api_url"]) else None


def use_prefect_api() -> str:
    """The Prefect API this process's flow runs report to: PREFECT_API_URL, else a running ``ragprep serve``,
    else a temporary server started now (stopped at exit, and with this process if it is killed)."""
    global _api_url
    from prefect.settings import PREFECT_API_URL

    if _api_url:
        return _api_url
    if PREFECT_API_URL.value():
        _api_url = PREFECT_API_URL.value()
        return _api_url
    service = running_service()
    if service:
        _api_url = service["api_url"]
    else:
        server = ApiServer().start()
        _api.callback(server.stop)
        import atexit

        atexit.register(_api.close)
        _api_url = server.api_url
    _apply_api_url(_api_url)
    return _api_url


class Service:
    """What ``ragprep serve`` runs: Prefect server (with UI), work pool, deployments, worker, web root."""

    def __init__(self, root: Path, port: int | None = None, web_port: int | None = None,
                 deployments: list[str] | None = None, api_url: str | None = None) -> None:
        """``deployments``: names to deploy (default all); ``api_url``: use that Prefect server instead of starting one."""
        self.root = Path(root).resolve()
        self.server = ApiServer(port, ui=True)
        self.api_url = api_url or self.server.api_url
        self.web = WebRoot(self.root, "127.0.0.1", web_port or 0, public_url=os.environ.get("RAGPREP_PUBLIC_URL"))
        self.deployments = deployments
        self.worker: subprocess.Popen | None = None
        self._stopped = threading.Event()

    def env(self) -> dict[str, str]:
        """The environment of the worker and of ``prefect deploy``: the API, the root, the checkout, the web root."""
        return {**os.environ, "PREFECT_API_URL": self.api_url, "RAGPREP_ROOT": str(self.root),
                "RAGPREP_HOME": str(CHECKOUT), "RAGPREP_PUBLIC_URL": self.web.url}

    def _prefect(self, *args: str, timeout: float = 300) -> None:
        proc = subprocess.run([PREFECT, "--no-prompt", *args], cwd=CHECKOUT, env=self.env(), capture_output=True, text=True,  # noqa: S603
                              timeout=timeout, check=False)
        if proc.returncode:
            last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise RagprepError(f"`prefect {' '.join(args)}` failed (exit {proc.returncode}): {last[0]}")

    def start(self) -> Service:
        """Start everything; on a failure, stop what was started and raise."""
        from flows.runtime import CheckoutRootError

        if self.root.is_relative_to(CHECKOUT):
            raise CheckoutRootError(f"root {self.root} is inside the code checkout {CHECKOUT}: give `ragprep serve --root` "
                                    "a data folder outside it (deployments refuse a root in the checkout)")
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            if self.api_url == self.server.api_url:
                self.server.start(label="serve")
            self.web.start()
            self._prefect("work-pool", "create", POOL, "--type", "process", "--overwrite")
            names = [a for name in self.deployments for a in ("--name", name)] if self.deployments else ["--all"]
            self._prefect("deploy", "--prefect-file", str(DEPLOY_FILE), *names)
            self.worker = subprocess.Popen(  # noqa: S603
                [PREFECT, "worker", "start", "--pool", POOL, "--type", "process"], cwd=CHECKOUT, env=self.env(),
                start_new_session=True, preexec_fn=_die_with_parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            self._write_state()
        except BaseException:
            self.stop()
            raise
        return self

    def addresses(self) -> dict[str, str]:
        """The UI, the API and the web root."""
        return {"ui": self.api_url.removesuffix("/api"), "api": self.api_url, "web": self.web.url,
                "root": str(self.root)}

    def _write_state(self) -> None:
        path = state_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {**self.addresses(), "api_url": self.api_url, "pid": os.getpid(),
                 "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        path.write_text(json.dumps(state, indent=2))

    def stop(self) -> None:
        """Stop the worker (SIGKILL after the grace period), the web root and the server; remove the state file."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        if self.worker is not None:
            stop_group(self.worker)
        with contextlib.suppress(OSError, ValueError):
            if json.loads(state_file().read_text()).get("pid") == os.getpid():
                state_file().unlink()
        if self.web.thread.is_alive():
            self.web.stop()
        self.server.stop()

    def wait(self) -> None:
        """Block until SIGINT or SIGTERM (or the server or worker exits), then stop everything."""
        done = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: done.set())
        try:
            while not done.wait(1.0):
                if any(p is not None and p.poll() is not None for p in (self.server.proc, self.worker)):
                    break
        finally:
            self.stop()
