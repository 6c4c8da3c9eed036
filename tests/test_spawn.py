"""How ``ragprep serve`` starts the children it supervises (the Prefect server, the worker): ``dying_with_parent``.

serve used a ``preexec_fn``, which runs Python code (and with it the libraries' fork handlers: lancedb's starts an
event-loop thread and warns that it may deadlock) in a child forked from a process with threads running. These tests
check that nothing of the parent's Python runs in the child, that Popen's pid is the command's own, and that the
command still dies with its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from flows.supervise import alive, dying_with_parent

needs_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


def _fork_handler_ran(tmp_path, spawn: str) -> bool:
    """Whether a fork handler of the parent process ran in a child it started with ``spawn`` (code that starts
    ``true`` as ``child``)."""
    marker = tmp_path / "fork-handler-ran"
    code = textwrap.dedent(f"""
        import os, subprocess, sys
        sys.path.insert(0, {os.getcwd()!r})
        from flows.supervise import dying_with_parent
        os.register_at_fork(after_in_child=lambda: open({str(marker)!r}, "w").close())
        {spawn}
        child.wait(30)
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    return marker.exists()


def test_no_python_of_the_parent_runs_in_the_child_before_exec(tmp_path):
    assert not _fork_handler_ran(tmp_path, 'child = subprocess.Popen(dying_with_parent(["true"]))')
    # the check can fail: a preexec_fn (what serve used before) runs the parent's fork handlers in the child
    assert _fork_handler_ran(tmp_path, 'child = subprocess.Popen(["true"], preexec_fn=lambda: None)')


def test_popen_pid_is_the_commands_own():
    proc = subprocess.run(dying_with_parent([sys.executable, "-c", "import os; print(os.getpid(), os.getppid())"]),
                          capture_output=True, text=True, timeout=60, check=True)
    pid, parent = map(int, proc.stdout.split())
    assert parent == os.getpid() and pid != os.getpid()


@needs_linux
def test_the_command_gets_sigterm_when_its_parent_is_killed():
    code = textwrap.dedent(f"""
        import subprocess, sys, time
        sys.path.insert(0, {os.getcwd()!r})
        from flows.supervise import dying_with_parent
        child = subprocess.Popen(dying_with_parent(["sleep", "120"]), start_new_session=True)
        print(child.pid, flush=True)
        time.sleep(120)
    """)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 30  # the child's interpreter sets PR_SET_PDEATHSIG, then execs sleep
        while time.monotonic() < deadline and not _runs_sleep(child):
            time.sleep(0.05)
        assert _runs_sleep(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and alive(child):
            time.sleep(0.05)
        assert not alive(child)
    finally:
        parent.kill()
        parent.wait(30)


def _runs_sleep(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0] == b"sleep"
    except OSError:
        return False
