"""``ragprep serve`` and the Prefect API a CLI run uses.

- :class:`ApiServer`: a Prefect API server (uvicorn, ``prefect.server.api.server:create_app``) on
  127.0.0.1, started in its own process group with ``PR_SET_PDEATHSIG``: it dies with the process that
  started it, even after ``kill -9`` (Prefect's own temporary server is a plain ``Popen`` stopped by
  ``atexit``, which a killed parent never runs: the server stays orphaned holding its port).
- :func:`use_prefect_api`: what a CLI run talks to: ``PREFECT_API_URL`` when set, else the server of a
  running ``ragprep serve`` on this machine (its state file), else a temporary :class:`ApiServer` with a
  start timeout of ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS`` (90 s unless set) and a one-line
  error when it does not come up.
- :class:`Service`: the server (with the UI) on a fixed port, the ``ragprep`` process work pool, the deployments
  of ``deploy/prefect.yaml`` (only what changed in code: ``flows.deployments``), the failure notification, a
  process worker, and the read-only web root of the root's reports. One per state file and per root (a second is
  refused in one line). It supervises the worker, the page and the server (restarted with backoff, reported on the
  console and as Prefect events ``ragprep.serve.restarted``), marks Crashed a run whose process died, and on stop
  ends its flow-run processes (so the build lock is released), marks their runs Cancelled, then stops the rest.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from urllib.error import URLError
from urllib.request import urlopen

from flows import CHECKOUT
from flows.deployments import POOL, DeploymentSync, failure_notification, schedules
from flows.supervise import (
    STOP_GRACE_S,
    RunWatch,
    Supervised,
    alive,
    become_subreaper,
    descendants,
    dying_with_parent,
    in_flight_runs,
    reap_zombies,
    settle_in_flight,
    stop_group,
    terminate,
)
from ragprep.errors import RagprepError
from ragprep.pygc import API_SERVER_MAIN
from ragprep.settings import ServeSettings
from ragprep.webroot import WebRoot

START_TIMEOUT_VAR = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
DEFAULT_START_TIMEOUT_S = 90
"""Prefect's own default is 20 s: a first start on a fresh Prefect home (database migrations) on a busy
two-core machine takes longer."""
PREFECT = str(Path(sys.executable).with_name("prefect"))
DEPLOY_FILE = CHECKOUT / "deploy" / "prefect.yaml"


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


def healthy(api_url: str, timeout: float = 2.0) -> bool:
    """Whether a Prefect API answers its health check."""
    try:
        with urlopen(f"{api_url.rstrip('/')}/health", timeout=timeout) as reply:  # noqa: S310 - loopback http
            return reply.status == 200
    except (URLError, OSError, ValueError):
        return False


def start_timeout() -> int:
    """The server start timeout: ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``, default 90 s."""
    value = os.environ.get(START_TIMEOUT_VAR)
    try:
        return int(value) if value else DEFAULT_START_TIMEOUT_S
    except ValueError as exc:
        raise ServerStartError(f"{START_TIMEOUT_VAR}={value!r} is not a whole number of seconds; fix the variable") from exc


def api_server_command(port: int) -> list[str]:
    """The command line of a Prefect API server on 127.0.0.1:``port`` (uvicorn, the collector paced: ragprep.pygc)."""
    return [sys.executable, "-c", API_SERVER_MAIN, "--factory", "prefect.server.api.server:create_app", "--host",
            "127.0.0.1", "--port", str(port), "--log-level", "error", "--lifespan", "on"]


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

    def start(self, timeout: float | None = None, label: str = "temporary",
              waiting: Callable[[float], None] | None = None) -> ApiServer:
        """Start it and wait until it answers; one-line :class:`ServerStartError` when it does not within ``timeout``.
        ``waiting(seconds)`` is called every 10 s while it has not answered yet."""
        timeout = timeout or start_timeout()
        env = {**os.environ, "PREFECT_SERVER_API_HOST": "127.0.0.1", "PREFECT_SERVER_API_PORT": str(self.port),
               "PREFECT_UI_API_URL": self.api_url, **self.env}
        env.pop("PREFECT_API_URL", None)  # the server is not a client of another server
        if not self.ui:
            env.update({"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1"})
        else:
            env["PREFECT_UI_URL"] = self.api_url.removesuffix("/api")  # run links in notifications
        self._log.seek(0)
        self._log.truncate()
        self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
            dying_with_parent(api_server_command(self.port)), env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=self._log,
        )
        started = time.monotonic()
        deadline, next_note = started + timeout, started + 10
        while time.monotonic() < deadline:
            if waiting is not None and time.monotonic() >= next_note:
                waiting(time.monotonic() - started)
                next_note += 10
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


class ServeRefusedError(RagprepError):
    """Another ``ragprep serve`` holds this state file, this root or this port."""


RUNS_CHECK_S = 5.0
"""How often serve looks for Running flow runs whose process is gone."""


def _flock(path: Path):
    """``path`` opened and exclusively locked (``flock``, released by the kernel when this process ends); None when
    another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held while serve runs
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip()
        handle.close()
        return holder or "another process"
    handle.truncate(0)
    handle.write(json.dumps({"pid": os.getpid(), "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}))
    handle.flush()
    return handle


def _described(state: dict | None, fallback: str) -> str:
    """A running serve, from its state file or lock: pid, UI, root, start time."""
    if not state:
        return fallback
    parts = [f"pid {state.get('pid', '?')}"]
    parts += [f"{key} {state[key]}" for key in ("ui", "root") if state.get(key)]
    if state.get("started_at"):
        parts.append(f"since {state['started_at']}")
    return ", ".join(parts)


def _read_json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _tail(log) -> str:
    """The last line a child wrote to its log file."""
    log.seek(0)
    lines = log.read().decode(errors="replace").strip().splitlines()
    return lines[-1][:300] if lines else ""


class Service:
    """What ``ragprep serve`` runs: Prefect server (with UI), work pool, deployments, worker, web root, supervised."""

    def __init__(self, root: Path, options: ServeSettings | None = None, *, deployments: list[str] | None = None,
                 api_url: str | None = None, say: Callable[[str], None] | None = None) -> None:
        """``options``: ports, notification, deployments (``[serve]`` settings); ``deployments``: names to deploy
        (default ``options.deployments``, else all); ``api_url``: use that Prefect server instead of starting one;
        ``say``: where progress lines go (the console of ``ragprep serve``)."""
        self.root = Path(root).resolve()
        self.options = options or ServeSettings()
        self.server = ApiServer(self.options.port, ui=True)
        self.api_url = api_url or self.server.api_url
        self.web_port = self.options.web_port
        self.web: WebRoot | None = None
        self.deployments = deployments if deployments is not None else (self.options.deployments or None)
        self.say = say or (lambda _message: None)
        self.worker: subprocess.Popen | None = None
        self._worker_log = tempfile.TemporaryFile()  # noqa: SIM115 - the worker's output, for the reason it died
        self._stopped = threading.Event()
        self._locks: list = []
        self._watch = RunWatch(POOL)
        self._last_check_error = ""
        self._supervised: list[Supervised] = []
        self._foreign: set[int] = set()
        self._checks = ExitStack()
        self._checks_client = None

    @property
    def own_server(self) -> bool:
        """Whether this service starts the Prefect server (not one given by ``api_url``)."""
        return self.api_url == self.server.api_url

    @property
    def web_url(self) -> str:
        """The report page's base URL."""
        return self.web.url if self.web is not None else f"http://127.0.0.1:{self.web_port}/"

    def env(self) -> dict[str, str]:
        """The environment of the worker and of ``prefect deploy``: the API, the root, the checkout, the web root."""
        return {**os.environ, "PREFECT_API_URL": self.api_url, "RAGPREP_ROOT": str(self.root),
                "RAGPREP_HOME": str(CHECKOUT), "RAGPREP_PUBLIC_URL": self.web_url}

    @contextlib.contextmanager
    def _client(self):
        """A synchronous Prefect client of this service's server (settings scoped to the block)."""
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: self.api_url}), get_client(sync_client=True) as client:
            yield client

    def _runs_client(self):
        """The Prefect client of the run checks, made once and kept until serve stops: a new client every
        ``RUNS_CHECK_S`` cost about 60 ms of serve's CPU each time (its settings context and TLS context), around the
        clock; a restarted server is reached again on the next request (the connection pool reconnects)."""
        if self._checks_client is None:
            from prefect.client.orchestration import get_client
            from prefect.settings import PREFECT_API_URL, temporary_settings

            with temporary_settings(updates={PREFECT_API_URL: self.api_url}):
                client = get_client(sync_client=True)
            self._checks_client = self._checks.enter_context(client)
        return self._checks_client

    # -- start ----------------------------------------------------------------------------------------------------

    def claim(self) -> None:
        """Refuse, in one line, a second serve: on this state file, on this root, or on a port a server answers on."""
        path = state_file()
        lock = _flock(path.with_name(path.name + ".lock"))
        if not hasattr(lock, "fileno"):
            raise ServeRefusedError(
                f"ragprep serve is already running on this machine ({_described(_read_json(path), lock)}): stop it first "
                "(Ctrl-C in its terminal), or give this one its own RAGPREP_SERVE_STATE, root, --port and --web-port")
        self._locks.append(lock)
        self.root.mkdir(parents=True, exist_ok=True)
        root_lock = _flock(self.root / ".serve.lock")
        if not hasattr(root_lock, "fileno"):
            self._release()
            raise ServeRefusedError(f"another ragprep serve serves the root {self.root} ({root_lock}); one serve per root: "
                                    "stop it first, or give this one another --root")
        self._locks.append(root_lock)
        if self.own_server and healthy(self.server.api_url, timeout=1.0):
            self._release()
            raise ServeRefusedError(f"a Prefect server already answers on 127.0.0.1:{self.server.port} (another ragprep serve, "
                                    "or `prefect server start`): stop it, or give this serve another --port")

    def start(self) -> Service:
        """Claim the state file and the root, then start everything; on a failure, stop what was started and raise."""
        if self.root.is_relative_to(CHECKOUT):
            from flows.runtime import CheckoutRootError  # here: flows.runtime imports Prefect, a refusal needs none

            raise CheckoutRootError(f"root {self.root} is inside the code checkout {CHECKOUT}: give `ragprep serve --root` "
                                    "a data folder outside it (deployments refuse a root in the checkout)")
        self.claim()
        self._foreign = set(descendants(os.getpid()))  # what this process ran before serve (a test's own server)
        try:
            become_subreaper()  # flow-run processes whose worker died stay in serve's tree (see flows.supervise)
            if self.own_server:
                self._start_server()
            self._start_web()
            self._setup()
            self._start_worker()
        except BaseException:
            self.stop()
            raise
        self._supervised = self._supervision()
        return self

    def _start_server(self) -> None:
        started = time.monotonic()
        self.say(f"starting the Prefect server on 127.0.0.1:{self.server.port} (a fresh Prefect home first creates its "
                 "database: up to a minute)")
        self.server.start(label="serve", waiting=lambda s: self.say(f"... the Prefect server is still starting ({s:.0f} s)"))
        self.say(f"Prefect server up in {time.monotonic() - started:.0f} s: UI {self.api_url.removesuffix('/api')}")

    def _start_web(self, routes: dict | None = None) -> None:
        """The report page on ``web_port``; ``routes``: its JSON endpoints (``POST /ask``, kept across a restart)."""
        try:
            self.web = WebRoot(self.root, "127.0.0.1", self.web_port, public_url=os.environ.get("RAGPREP_PUBLIC_URL"),
                               routes=routes).start()
        except OSError as exc:
            raise ServeRefusedError(f"the report page cannot listen on 127.0.0.1:{self.web_port} ({exc.strerror}): another "
                                    "serve or program uses it; stop it, or give this serve another --web-port") from exc
        self.web_port = self.web.httpd.server_address[1]
        self.say(f"report page on {self.web.url} (review reports, quality pages, exports of {self.root})")

    def _setup(self) -> None:
        """Work pool and queues, the deployments that changed, the schedules shown, the failure notification."""
        self.say("deployments: checking deploy/prefect.yaml against the server")
        sync = DeploymentSync(DEPLOY_FILE, self.root, self.env(), PREFECT)
        with self._client() as client:
            sync.apply(client, self.deployments, self.say)
            for line in schedules(client, sync.selected):
                self.say(line)
            failure_notification(client, self.options.notify_url, self.say)

    def _start_worker(self) -> None:
        self._worker_log.seek(0)
        self._worker_log.truncate()
        self.worker = subprocess.Popen(  # noqa: S603
            dying_with_parent([PREFECT, "worker", "start", "--pool", POOL, "--type", "process"]), cwd=CHECKOUT,
            env=self.env(), start_new_session=True, stdout=self._worker_log, stderr=subprocess.STDOUT,
        )
        self._write_state()
        self.say(f"worker started (pid {self.worker.pid}) on work pool `{POOL}`")

    def addresses(self) -> dict[str, str]:
        """The UI, the API and the web root."""
        return {"ui": self.api_url.removesuffix("/api"), "api": self.api_url, "web": self.web_url, "root": str(self.root)}

    def _write_state(self) -> None:
        path = state_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {**self.addresses(), "api_url": self.api_url, "pid": os.getpid(),
                 "worker_pid": self.worker.pid if self.worker is not None else None,
                 "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        path.write_text(json.dumps(state, indent=2))

    # -- supervision ----------------------------------------------------------------------------------------------

    def _supervision(self) -> list[Supervised]:
        backoff = self.options.restart_backoff_s
        children = [
            Supervised("worker", self._start_worker, lambda: self.worker is not None and self.worker.poll() is None,
                       lambda: f"exit code {self.worker.returncode}; last output: {_tail(self._worker_log) or 'none'}", backoff),
            Supervised("report page", self._restart_web, lambda: self.web is not None and self.web.thread.is_alive(),
                       lambda: "its thread ended", backoff),
        ]
        if self.own_server:
            children.insert(0, Supervised(
                "Prefect server", lambda: self.server.start(label="serve"),
                lambda: self.server.proc is not None and self.server.proc.poll() is None,
                lambda: f"exit code {self.server.proc.returncode if self.server.proc else '?'}", backoff))
        return children

    def _restart_web(self) -> None:
        routes = dict(self.web.routes) if self.web is not None else None
        if self.web is not None:
            with contextlib.suppress(OSError):
                self.web.httpd.server_close()
        self._start_web(routes)

    def _restarted(self, name: str) -> None:
        """A restart as a Prefect event (the UI's event feed): ``ragprep.serve.restarted``."""
        try:
            from prefect.events import emit_event

            with self._client():
                emit_event(event="ragprep.serve.restarted",
                           resource={"prefect.resource.id": f"ragprep.serve.{socket.gethostname()}.{os.getpid()}",
                                     "prefect.resource.name": "ragprep serve"},
                           payload={"child": name, "root": str(self.root)})
        except Exception as exc:  # noqa: BLE001 - the console line is the report; the event is a copy
            self.say(f"(could not record the restart as a Prefect event: {exc})")

    def _popen_pids(self) -> list[int]:
        return [p.pid for p in (self.server.proc, self.worker) if p is not None]

    def _flow_processes(self) -> list[int]:
        """serve's descendants but the server's tree, the worker itself and what ran before serve started: flow-run
        processes and their children (also those re-parented to serve after their worker died)."""
        skip = {*self._foreign, *([self.server.proc.pid] if self.server.proc is not None else [])}
        worker = self.worker.pid if self.worker is not None else None
        return [pid for pid in descendants(os.getpid(), skip=skip) if pid != worker]

    def check_runs(self, tree: list[int] | None = None) -> None:
        """Mark Crashed the Running runs whose process (seen in serve's tree) is gone; stop processes that outlive
        their run (``flows.supervise.RunWatch``). ``tree``: the flow-run processes now (default: looked up)."""
        tree = self._flow_processes() if tree is None else tree
        if not healthy(self.api_url, timeout=1.0):
            self._watch.note(tree)
            return
        self._watch.check(self._runs_client(), tree, self.say)

    def _checked_runs(self, tree: list[int]) -> None:
        """check_runs, its failure reported once per distinct message (a restarting server: the next check catches up)."""
        try:
            self.check_runs(tree)
        except Exception as exc:  # noqa: BLE001 - supervision goes on
            message = f"could not check the flow runs: {type(exc).__name__}: {exc}"[:300]
            if message != self._last_check_error:
                self.say(message)
            self._last_check_error = message
        else:
            self._last_check_error = ""

    def wait(self) -> None:
        """Supervise until SIGINT or SIGTERM, then stop everything."""
        done = threading.Event()
        why: list[str] = []

        def on_signal(signum, _frame) -> None:
            why.append(signal.Signals(signum).name)
            done.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, on_signal)
        last_check = 0.0
        try:
            while not done.wait(1.0):
                for child in self._supervised:
                    child.check(self.say, self._restarted)
                reap_zombies(self._popen_pids())
                # noted every second, not only at the runs check: a run killed within RUNS_CHECK_S of its start (an early
                # out-of-memory kill) was never seen in serve's tree, so it stayed Running and held the pool's one slot
                tree = self._flow_processes()
                self._watch.note(tree)
                if time.monotonic() - last_check >= RUNS_CHECK_S:
                    last_check = time.monotonic()
                    self._checked_runs(tree)
        finally:
            self.stop(why[0] if why else "its loop ended")

    # -- stop -----------------------------------------------------------------------------------------------------

    def _stop_runs(self, why: str) -> None:
        """End the flow-run processes (the build lock goes with them) and mark their runs Cancelled."""
        processes = self._flow_processes()
        runs: list = []
        if self.api_url and healthy(self.api_url, timeout=1.0):
            with contextlib.suppress(Exception), self._client() as client:
                runs = in_flight_runs(client, POOL)
        if self.worker is not None:
            stop_group(self.worker, grace=STOP_GRACE_S / 2)  # first, so that it starts no queued run meanwhile
        processes = [p for p in {*processes, *self._flow_processes()} if alive(p)]
        if not (runs or processes):
            return
        self.say(f"stopping {len(runs)} flow run(s) in flight" + (f" ({len(processes)} processes)" if processes else
                                                                   " (their processes ended with the worker)"))
        killed = terminate(processes, grace=STOP_GRACE_S)
        if killed:
            self.say(f"killed {len(killed)} process(es) that ignored SIGTERM for {STOP_GRACE_S:.0f} s")
        message = f"ragprep serve stopped ({why}) while this run was in flight: its process was ended (build lock released)"
        with contextlib.suppress(Exception), self._client() as client:
            for line in settle_in_flight(client, runs, message):
                self.say(f"flow run {line}")

    def stop(self, why: str = "stopped") -> None:
        """Stop the flow runs in flight (marked Cancelled), the worker, the web root and the server; remove the state file."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._stop_runs(why)
        with contextlib.suppress(Exception):
            self._checks.close()  # the run checks' client
        if self.worker is not None:
            stop_group(self.worker)
        if _read_json(state_file()) and _read_json(state_file()).get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                state_file().unlink()
        if self.web is not None and self.web.thread.is_alive():
            self.web.stop()
        self.server.stop()
        self._release()
        self.say("stopped")

    def _release(self) -> None:
        for handle in self._locks:
            with contextlib.suppress(OSError, ValueError):
                handle.truncate(0)
                handle.close()
        self._locks.clear()
