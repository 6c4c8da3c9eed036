"""No outbound network: ragprep makes no connection or DNS lookup that an operator did not configure.

Issue 15 ("phoning home"): a default run resolved ``mobile.events.data.microsoft.com`` from threads of
onnxruntime's 1DS telemetry uploader (onnxruntime >= 1.29, loaded by ``import pymupdf`` for the layout
model). Fixed by the onnxruntime pin in pyproject.toml and the telemetry switches that
``ragprep.offline.disable_vendor_telemetry`` sets at the entry points (Prefect, GX and
huggingface_hub included). Checked here three ways:

- a whole ``ragprep run`` over sample_docs/ (what ``make demo`` runs: OCR, layout model, quality
  gate) under ``strace -f`` — every process and thread: the CLI, its Tesseract children, Prefect's
  temporary server — makes no non-loopback ``connect`` and no DNS query (port 53 on any address, a
  nameserver of /etc/resolv.conf, systemd-resolved's socket). Its environment has every telemetry
  switch, CI marker, Prefect and RAGPREP variable removed and a fresh HOME, so the run itself must
  turn telemetry off. Skipped, saying why, where strace is missing or cannot trace. It is the session's one
  demo run (``demo_run`` in tests/conftest.py), whose output and root the CLI tests (test_cli.py) read too;
- the installed onnxruntime has no telemetry uploader compiled in (no strace needed);
- the entry points (the ``flows`` package for library use and deployments, the CLI) set the
  switches before onnxruntime or Prefect is imported.
"""

from __future__ import annotations

import ast
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata, util
from pathlib import Path

import pytest
import yaml

from ragprep.offline import TELEMETRY_OFF
from ragprep.storage import Layout
from tests.conftest import REPO, SAMPLE_DOCS, Seed, cache_keys

STRACE = shutil.which("strace")
RAGPREP = str(Path(sys.executable).with_name("ragprep"))
TRACED = "trace=connect,sendto,sendmsg,sendmmsg"
NO_STRACE = "strace is not installed (`make test` installs it: deploy/install-system-deps.sh --browser; or apt-get install strace)"

CI_MARKERS = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "BUILDKITE", "TF_BUILD", "CIRCLECI", "TRAVIS")
"""Prefect turns its analytics off by itself under CI; removed so that the run, not the CI, has to."""

INET = re.compile(r'sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)')
INET6 = re.compile(r'sin6_port=htons\((\d+)\)[^}]*?inet_pton\(AF_INET6, "([^"]+)"')
RESOLVER_SOCKETS = ("io.systemd.Resolve",)
"""AF_UNIX sockets through which a host name is resolved (nss-resolve's varlink socket)."""

UPLOADER_MARKERS = (b"events.data.microsoft.com", b"Microsoft12Applications6Events")
"""Strings of the 1DS SDK (cpp_client_telemetry) compiled into onnxruntime >= 1.29 on Linux."""


# --- the checker -----------------------------------------------------------------------------------


def nameservers(resolv_conf: Path = Path("/etc/resolv.conf")) -> set[str]:
    """The resolver addresses this machine's stub resolver sends DNS queries to."""
    try:
        lines = resolv_conf.read_text().splitlines()
    except OSError:
        return set()
    return {words[1] for words in map(str.split, lines) if len(words) >= 2 and words[0] == "nameserver"}


def _is_local(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False  # not understood: report it
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or ip.is_unspecified or bool(mapped and mapped.is_loopback)


CALL = re.compile(r"^(\d+)\s+(connect|sendto|sendmsg|sendmmsg)\((\d+),")
"""pid, call and socket of an strace line (``-f`` writes the pid first)."""


def offending(lines: list[str], resolvers: set[str]) -> tuple[list[str], list[str]]:
    """(DNS traffic, other non-loopback connections) among strace lines. DNS is anything to port 53 (a
    loopback stub resolver included), to a nameserver or systemd-resolved's socket, and what is then sent
    on a socket connected so (the queries themselves, which name the host)."""
    dns: list[str] = []
    outbound: list[str] = []
    dns_sockets: set[tuple[str, str]] = set()
    for line in lines:
        call = CALL.match(line)
        socket = (call.group(1), call.group(3)) if call else None
        if call and call.group(2) == "connect":
            dns_sockets.discard(socket)  # a file descriptor is reused once closed
        elif socket in dns_sockets:
            dns.append(line)
            continue
        verdict = "dns" if any(name in line for name in RESOLVER_SOCKETS) else None
        for port, address in INET.findall(line) + INET6.findall(line):
            if port == "53" or address in resolvers:
                verdict = "dns"
            elif not _is_local(address):
                verdict = verdict or "outbound"
        if verdict == "dns":
            dns.append(line)
            if call and call.group(2) == "connect":
                dns_sockets.add(socket)
        elif verdict == "outbound":
            outbound.append(line)
    return dns, outbound


def _report(dns: list[str], outbound: list[str]) -> str:
    shown = [f"DNS  {line}" for line in dns[:25]] + [f"OUT  {line}" for line in outbound[:25]]
    return f"{len(dns)} DNS system call(s) and {len(outbound)} non-loopback connection(s):\n" + "\n".join(shown)


def test_the_checker_flags_dns_and_remote_hosts_and_nothing_local():
    lines = [  # as strace 6 writes them; the first two from a run before the fix
        '17963 connect(9, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 0',
        '17963 sendto(9, "\\265!\\1\\0\\0\\1\\0\\0\\0\\0\\0\\0\\6mobile\\6events\\4data\\t"..., 50, MSG_NOSIGNAL, NULL, 0) = 50',
        '5 connect(3, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("127.0.0.53")}, 16) = 0',
        '5 sendmsg(3, {msg_name={sa_family=AF_INET6, sin6_port=htons(53), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "fd00::1", &sin6_addr), sin6_scope_id=0}, msg_namelen=28}, 0) = 40',
        '6 connect(4, {sa_family=AF_UNIX, sun_path="/run/systemd/resolve/io.systemd.Resolve"}, 42) = 0',
        '7 connect(5, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("20.42.65.90")}, 16) = -1 '
        'EINPROGRESS (Operation now in progress)',
        '8 connect(5, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "2603:1030::1", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>',
        '9 sendto(6, "x", 1, 0, {sa_family=AF_INET, sin_port=htons(123), sin_addr=inet_addr("10.255.255.53")}, 16) = 1',
        # local: the Prefect server on loopback, v4-mapped loopback, asyncio's self-pipe, nscd (also passwd lookups)
        '10 connect(8, {sa_family=AF_INET, sin_port=htons(8261), sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
        '10 connect(8, {sa_family=AF_INET6, sin6_port=htons(8261), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "::ffff:127.0.0.1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
        '10 connect(8, {sa_family=AF_INET6, sin6_port=htons(8261), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
        '11 sendto(5, "\\0", 1, 0, NULL, 0) = 1',
        '12 connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT (No such file or directory)',
    ]
    dns, outbound = offending(lines, {"10.255.255.53"})
    assert dns == [lines[0], lines[1], lines[2], lines[3], lines[4], lines[7]]  # the query on the connected socket too
    assert outbound == [lines[5], lines[6]]


# --- the installed onnxruntime -----------------------------------------------------------------------


def test_the_installed_onnxruntime_has_no_telemetry_uploader():
    spec = util.find_spec("onnxruntime")  # located, not imported: importing would start an uploader
    assert spec is not None and spec.origin, "onnxruntime is not installed (pymupdf-layout's runtime)"
    found = []
    for library in sorted((Path(spec.origin).parent / "capi").glob("*.so*")):
        data = library.read_bytes()
        found += [f"{library.name}: {marker.decode()}" for marker in UPLOADER_MARKERS if marker in data]
    assert not found, (
        f"onnxruntime {metadata.version('onnxruntime')} has Microsoft's 1DS telemetry uploader compiled in "
        f"({'; '.join(found)}); keep the pin onnxruntime<1.29 of pyproject.toml (see ragprep/offline.py)"
    )


# --- the entry points ----------------------------------------------------------------------------------

SPY = r"""
import json, os, sys
KEYS = json.loads(sys.argv[3])
seen = {}

class Spy:
    # records the environment when onnxruntime, Prefect or GX is first imported
    def find_spec(self, name, path=None, target=None):
        if name in ("onnxruntime", "prefect", "great_expectations") and name not in seen:
            seen[name] = {key: os.environ.get(key) for key in KEYS}
        return None

sys.meta_path.insert(0, Spy())
mode, arg = sys.argv[1], sys.argv[2]
if mode == "library":
    __import__(arg)
elif mode == "deployment":
    from prefect.flows import load_flow_from_entrypoint  # a worker's flow run has Prefect imported first
    load_flow_from_entrypoint(arg)
if mode != "cli":  # what the quotes stage does at its first page: load PyMuPDF's layout model (onnxruntime)
    from ragprep.engines.layout_model import load_layout_model
    load_layout_model()
else:
    from ragprep.cli import app
    try:
        app(["versions", "--root", arg])
    except SystemExit:
        pass
seen["after"] = {key: os.environ.get(key) for key in KEYS}
print(json.dumps(seen))
"""


def _entry_env() -> dict[str, str]:
    drop = {*TELEMETRY_OFF, *CI_MARKERS}
    return {key: value for key, value in os.environ.items() if key not in drop and not key.startswith("PREFECT_")}


def _spy(mode: str, arg: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", SPY, mode, arg, json.dumps(sorted(TELEMETRY_OFF))],
        capture_output=True, text=True, env=_entry_env(), cwd=REPO, timeout=300,
    )
    assert proc.returncode == 0, f"{mode} {arg}: {proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _deployment_entrypoints() -> list[str]:
    spec = yaml.safe_load((REPO / "deploy" / "prefect.yaml").read_text())
    return sorted({deployment["entrypoint"] for deployment in spec["deployments"]})


@pytest.mark.slow  # one fresh interpreter per entry point
def test_entry_points_turn_telemetry_off_before_the_libraries_load(tmp_path):
    full_build = next(entry for entry in _deployment_entrypoints() if entry.startswith("flows/pipeline.py:"))
    cases = [("library", "flows.pipeline"), ("deployment", full_build), ("cli", str(tmp_path / "root"))]
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        results = dict(zip(cases, pool.map(lambda case: _spy(*case), cases)))
    off = dict(TELEMETRY_OFF)
    problems = []
    for (mode, arg), seen in results.items():
        if seen["after"] != off:
            problems.append(f"{mode} {arg}: afterwards {seen['after']}")
        for library, env in seen.items():
            if library == "after" or (mode == "deployment" and library == "prefect"):
                continue  # a worker imports Prefect before the flow; its events check DO_NOT_TRACK when queued
            if env != off:
                problems.append(f"{mode} {arg}: {library} imported with {env}")
    assert not problems, "\n".join(problems)
    for case in cases[:2]:  # not vacuous: the flows load Prefect, and PyMuPDF's layout runtime when a page is laid out
        assert {"onnxruntime", "prefect"} <= set(results[case]), (case, results[case])


def test_every_deployed_flow_file_imports_the_flows_package_before_the_stages():
    """Prefect loads a deployment's flow file by path: its first project import must be ``flows.*`` so that
    ``flows/__init__`` turns telemetry off before ``tasks``/``ragprep`` import PyMuPDF (onnxruntime)."""
    for path in sorted({entry.split(":")[0] for entry in _deployment_entrypoints()}):
        tree = ast.parse((REPO / path).read_text())
        first = next(
            (node.module.split(".")[0] for node in tree.body
             if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("flows", "tasks", "ragprep")),
            None,
        )
        assert first == "flows", f"{path}: first project import is {first!r}, not flows.*"


# --- a whole run under strace --------------------------------------------------------------------------


def _tracer_options() -> list[str]:
    """``--seccomp-bpf`` (strace >= 5.3) stops the run only at the traced calls, so tracing costs little;
    plain ``-f`` otherwise. Skips, with strace's own words, where this machine does not allow tracing."""
    options, reason = _tracer_or_reason()
    if options is None:
        pytest.skip(reason)
    return options


def _tracer_or_reason() -> tuple[list[str] | None, str]:
    """(strace options, "") where this machine allows tracing, else (None, why not)."""
    if STRACE is None:
        return None, NO_STRACE
    for options in (["--seccomp-bpf"], []):
        probe = subprocess.run([STRACE, *options, "-f", "-qq", "-e", TRACED, "-o", os.devnull, "true"],
                               capture_output=True, text=True, timeout=60)
        if probe.returncode == 0:
            return options, ""
    return None, f"strace cannot trace here: {probe.stderr.strip()[-300:]}"


def _fresh_machine_env(home: Path) -> dict[str, str]:
    drop = {*TELEMETRY_OFF, *CI_MARKERS, "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"}
    env = {
        key: value for key, value in os.environ.items()
        if key not in drop and not key.startswith(("PREFECT_", "RAGPREP_"))
    }
    # Prefect's temporary server, not a configured API; it starts slower under a tracer on a busy machine.
    env.update(HOME=str(home), PREFECT_HOME=str(home / ".prefect"), PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="300")
    return env


@dataclass(frozen=True)
class DemoRun:
    """One ``ragprep run sample_docs/`` as on a fresh machine, and what was true right after it ended."""

    root: Path
    home: Path
    proc: subprocess.CompletedProcess
    trace: list[str] | None
    """strace's lines; None where this machine cannot trace (``untraced`` says why)."""
    untraced: str
    quotes_written: bool
    published: bool
    embedded: int
    """Vectors in its root's embeddings cache that the seed did not put there: texts its model embedded."""


def run_demo(base: Path, seed: Seed | None = None) -> DemoRun:
    """``ragprep run sample_docs/`` as ``make demo`` runs it on a fresh machine (OCR, layout model, quality gate,
    Prefect's temporary server, a fresh HOME, every telemetry switch, CI marker, Prefect and RAGPREP variable
    removed) under ``strace -f`` where this machine allows tracing. The ``demo_run`` session fixture
    (tests/conftest.py) runs it once: the trace is checked here, the CLI tests (test_cli.py) read its output and
    work on its root afterwards, so the facts this module checks are taken as soon as the run ends. ``seed``: the
    seeded embeddings cache of its root (``<base>/data/cache/embeddings``), if any, topped up while the run has not
    embedded yet (``_run_topping_up``)."""
    options, untraced = _tracer_or_reason()
    home, root, trace = base / "home", base / "data", base / "strace.log"
    home.mkdir()
    command = [RAGPREP, "run", str(SAMPLE_DOCS), "--root", str(root)]
    if options is not None:
        command = [STRACE, *options, "-f", "-qq", "-s", "96", "-e", TRACED, "-o", str(trace), *command]
    proc = _run_topping_up(command, _fresh_machine_env(home), base, seed)
    return DemoRun(
        root=root, home=home, proc=proc, untraced=untraced,
        trace=trace.read_text(errors="replace").splitlines() if options is not None and trace.is_file() else None,
        quotes_written=(root / "tables" / "quotes.parquet").is_file(),
        published=(root / "datasets" / "LATEST").is_file(),
        embedded=len(seed.added() if seed else cache_keys(Layout(root).embeddings_cache_dir)),
    )


def _run_topping_up(command: list[str], env: dict[str, str], cwd: Path, seed: Seed | None,
                    timeout: float = 840) -> subprocess.CompletedProcess:
    """``command`` run to its end, its output captured, calling ``seed.top_up()`` every two seconds meanwhile: in a
    whole test run the demo starts with the session's other sample_docs/ run (``pipeline_run``, on another worker),
    whose vectors then reach its cache before it embeds, as a rule (the seed stops once the run has written its
    cache)."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd) as popen:
        deadline = time.monotonic() + timeout
        while True:
            try:
                out, err = popen.communicate(timeout=2)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    popen.kill()
                    raise
                if seed is not None:
                    seed.top_up()
    return subprocess.CompletedProcess(command, popen.returncode, out, err)


@pytest.mark.slow
@pytest.mark.skipif(STRACE is None, reason=NO_STRACE)
def test_a_whole_run_makes_no_outbound_connection_or_dns_lookup(demo_run):
    if demo_run.trace is None:
        pytest.skip(demo_run.untraced)
    proc, home = demo_run.proc, demo_run.home
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    # the whole pipeline ran: layout model (quotes) and the quality gate (a published version)
    assert demo_run.quotes_written and demo_run.published
    assert demo_run.embedded > 0, "the run embedded nothing: the traced run must load the model and embed"
    lines = demo_run.trace
    assert any("connect(" in line and "127.0.0.1" in line for line in lines), "no loopback connect traced: strace saw nothing"
    dns, outbound = offending(lines, nameservers())
    assert not dns and not outbound, _report(dns, outbound)
    # nor any telemetry state: onnxruntime's 1DS keeps a device id and an event database under ~/.cache
    assert not (home / ".cache" / "Microsoft").exists()
