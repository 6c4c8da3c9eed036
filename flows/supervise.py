"""How ``ragprep serve`` keeps its children alive and leaves nothing behind (Linux ``/proc``).

- :class:`Supervised`: one child (the worker, the report page, the Prefect server) that is restarted with backoff
  when it dies (1 s, 2 s, 4 s ... up to 60 s; back to the first wait after a minute up), each death and restart
  reported through the ``say`` callback.
- The process tree: serve makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``), so a flow-run process whose
  worker died is re-parented to serve, not to init: :func:`descendants` finds every flow-run process serve is
  responsible for, and :func:`reap_zombies` collects those that exit.
- Flow runs: :class:`RunWatch` marks Crashed a Running run whose process (its ``infrastructure_pid``, once seen
  in serve's tree) is gone, and stops a process that outlives its run; :func:`settle_in_flight` marks Cancelled
  the runs that serve's stop ended (or that were still pending), unless they reached a final state themselves.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

STOP_GRACE_S = 10.0
"""A worker ignores SIGTERM while it finishes up; after this its process group gets SIGKILL."""
MAX_BACKOFF_S = 60.0
HEALTHY_AFTER_S = 60.0
"""A child up this long counts as healthy again: its next death waits the first backoff only."""
IN_FLIGHT = ("PENDING", "RUNNING", "CANCELLING")
FINAL_GRACE_S = 10.0
"""A flow-run process may take this long to exit after its run reached a final state."""


DIE_WITH_PARENT = """\
import ctypes, os, signal, sys
try:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass  # not Linux: the child outlives a killed parent, as Popen's children do
if os.getppid() != int(sys.argv[1]):  # the parent died before prctl
    sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""
"""Run by :func:`dying_with_parent` in a fresh interpreter: ask for SIGTERM when the parent dies, then become the
command (the same pid; the setting survives ``exec``)."""


def dying_with_parent(command: list[str]) -> list[str]:
    """``command`` started so that it gets SIGTERM when this process dies (Linux ``PR_SET_PDEATHSIG``): a small
    interpreter sets that and then execs ``command`` in its own place (Popen's pid is the command's). Unlike a
    ``preexec_fn``, nothing runs in the forked child before ``exec``: serve has threads running (lancedb's event
    loop, the report page), and Python code there (a ``preexec_fn``, and with it the libraries' fork handlers:
    lancedb's starts a new event-loop thread and warns of a possible deadlock) or ``dlopen`` can deadlock the child
    before it ever becomes the worker (Python's documentation warns against ``preexec_fn`` with threads)."""
    return [sys.executable, "-S", "-c", DIE_WITH_PARENT, str(os.getpid()), *command]


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``)."""
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl(36, 1) == 0  # 36 = PR_SET_CHILD_SUBREAPER
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


def children(pid: int) -> list[int]:
    """The direct children of ``pid``."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def descendants(pid: int, skip: Iterable[int] = ()) -> list[int]:
    """Every process below ``pid``, leaving out the subtrees of ``skip``."""
    skipped, found, todo = set(skip), [], children(pid)
    while todo:
        child = todo.pop()
        if child in skipped:
            continue
        found.append(child)
        todo.extend(children(child))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def reap_zombies(keep: Iterable[int]) -> None:
    """Collect the exit status of this process's exited children, except ``keep`` (the ``Popen`` ones reap themselves)."""
    kept = set(keep)
    for child in children(os.getpid()):
        if child not in kept and not alive(child):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child, os.WNOHANG)


def terminate(pids: Iterable[int], grace: float) -> list[int]:
    """SIGTERM to each process (its own group when it leads one), SIGKILL to those alive after ``grace``; returns
    the pids that had to be killed."""
    pids = [p for p in pids if alive(p)]
    own_group = os.getpgrp()

    def send(pid: int, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(pid)
            if group == pid and group != own_group:
                os.killpg(group, sig)
            else:
                os.kill(pid, sig)

    for pid in pids:
        send(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        reap_zombies(())
        time.sleep(0.1)
    killed = [p for p in pids if alive(p)]
    for pid in killed:
        send(pid, signal.SIGKILL)
    reap_zombies(())
    return killed


class Supervised:
    """One child kept alive: ``start`` (re)starts it, ``running`` says whether it still runs, ``why`` why it ended."""

    def __init__(self, name: str, start: Callable[[], None], running: Callable[[], bool], why: Callable[[], str],
                 backoff_s: float = 1.0) -> None:
        self.name = name
        self._start = start
        self._running = running
        self._why = why
        self.backoff_s = backoff_s
        self.deaths = 0
        self.restarts = 0
        self.started_at = time.monotonic()
        self.retry_at: float | None = None

    def check(self, say: Callable[[str], None], on_restart: Callable[[str], None] | None = None) -> None:
        """Called about once a second: notice a death, and restart after the backoff."""
        now = time.monotonic()
        if self.retry_at is None:
            if self._running():
                if now - self.started_at > HEALTHY_AFTER_S:
                    self.deaths = 0
                return
            delay = min(self.backoff_s * 2 ** self.deaths, MAX_BACKOFF_S)
            self.deaths += 1
            self.retry_at = now + delay
            say(f"{self.name} stopped ({self._why()}); restarting it in {delay:.0f} s")
            return
        if now < self.retry_at:
            return
        self.retry_at = None
        try:
            self._start()
        except Exception as exc:  # noqa: BLE001 - reported, then retried after a longer wait
            say(f"{self.name} did not restart: {exc}")
            self.started_at = now
            return
        self.started_at = time.monotonic()
        self.restarts += 1
        say(f"{self.name} restarted (restart {self.restarts})")
        if on_restart is not None:
            on_restart(self.name)


# -- flow runs of the pool ------------------------------------------------------------------------------------------


def in_flight_runs(client, pool: str) -> list:
    """The pool's flow runs that are Pending, Running or Cancelling."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
        WorkPoolFilter,
        WorkPoolFilterName,
    )
    from prefect.client.schemas.objects import StateType

    state = FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType(t) for t in IN_FLIGHT]))
    return client.read_flow_runs(flow_run_filter=FlowRunFilter(state=state),
                                 work_pool_filter=WorkPoolFilter(name=WorkPoolFilterName(any_=[pool])))


def run_pid(run) -> int | None:
    """The process of a flow run, from its ``infrastructure_pid`` (``pid`` or ``host:pid``)."""
    raw = str(run.infrastructure_pid or "").rsplit(":", 1)[-1]
    return int(raw) if raw.isdigit() else None


class RunWatch:
    """The pool's flow runs whose process serve saw in its tree (the run's ``infrastructure_pid`` and everything
    below it: the engine process may be a child of a starter). A Running run whose processes are all gone is marked
    Crashed; processes still alive ``FINAL_GRACE_S`` after their run ended are stopped (a flow process told to exit
    when its worker died waits for its task threads, and would hold the build lock for minutes)."""

    def __init__(self, pool: str) -> None:
        self.pool = pool
        self.seen: set[int] = set()
        self.tracked: dict[object, tuple[str, set[int]]] = {}
        self.lingering: dict[object, float] = {}

    def note(self, tree: Iterable[int]) -> None:
        """Remember serve's flow-run processes now (``tree``): a run's process counts as serve's once noted here. serve
        notes them every second, so a run killed between two checks was still seen."""
        self.seen.update(tree)

    def check(self, client, tree: Iterable[int], say: Callable[[str], None]) -> None:
        """One look at the pool's runs and serve's process tree (``tree``: the flow-run processes now)."""
        from prefect.states import Crashed

        self.note(tree)
        current = set()
        for run in in_flight_runs(client, self.pool):
            pid = run_pid(run)
            if pid is None or pid not in self.seen:
                continue
            current.add(run.id)
            name, pids = self.tracked.get(run.id, (run.name, set()))
            pids.update([pid, *descendants(pid)])
            self.tracked[run.id] = (run.name, pids)
            if run.state is not None and run.state.type.value == "RUNNING" and not any(alive(p) for p in pids):
                message = f"its process (pid {pid}) ended without reporting a final state (killed, or out of memory)"
                if client.set_flow_run_state(run.id, Crashed(message=message)).status.value == "ACCEPT":
                    say(f"flow run {run.name}: its process is gone; marked Crashed")
        self._stop_lingering(current, say)

    def _stop_lingering(self, current: set, say: Callable[[str], None]) -> None:
        now = time.monotonic()
        for run_id, (name, pids) in list(self.tracked.items()):
            if run_id in current:
                continue
            left = [p for p in pids if alive(p)]
            if left:
                since = self.lingering.setdefault(run_id, now)
                if now - since < FINAL_GRACE_S:
                    continue
                terminate(left, grace=5.0)
                say(f"flow run {name} has ended, but its process (pid {', '.join(map(str, left))}) still ran "
                    f"{now - since:.0f} s later; stopped it (its build lock is free)")
            self.tracked.pop(run_id, None)
            self.lingering.pop(run_id, None)


def settle_in_flight(client, runs: list, why: str) -> list[str]:
    """After serve stopped their processes: mark Cancelled each of ``runs`` that is not final yet; returns
    '<name>: <state>' for every run."""
    from prefect.states import Cancelled

    settled = []
    for run in runs:
        current = client.read_flow_run(run.id)
        if current.state is None or not current.state.is_final():
            client.set_flow_run_state(run.id, Cancelled(message=why), force=True)
            current = client.read_flow_run(run.id)
        settled.append(f"{current.name}: {current.state.name if current.state else 'no state'}")
    return settled
