"""The privacy guard decides on the endpoint as written, never by resolving it (issue 27): a ``*.localhost`` base
URL is refused on one line before any DNS query, checked under ``strace -f`` as in test_no_outbound_network.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ragprep.engines.guard import PrivacyGuardError, check_endpoint, is_loopback
from tests.conftest import REPO, SAMPLE_DOCS, ingest_into
from tests.reliability.test_no_outbound_network import (
    NO_STRACE,
    STRACE,
    TRACED,
    _report,
    _tracer_options,
    nameservers,
    offending,
)


def test_only_localhost_and_literal_loopback_addresses_count_as_loopback():
    for host in ("localhost", "127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"):
        assert is_loopback(host), host
    for host in ("probe.localhost", "localhost.example.com", "127.0.0.1.nip.io", "0x7f000001", "10.0.0.1", "::"):
        assert not is_loopback(host), host
    assert check_endpoint("http://[::1]:8000/v1", [], "openai") == "::1"
    with pytest.raises(PrivacyGuardError, match=r"would send document text to probe\.localhost, which is neither loopback"):
        check_endpoint("http://probe.localhost:8000/v1", [], "openai")
    assert check_endpoint("http://probe.localhost:8000/v1", ["probe.localhost"], "openai") == "probe.localhost"


CHILD = """
import socket, sys
from pathlib import Path
from ragprep.errors import RagprepError
from ragprep.settings import Settings
from tasks.enrich.run import run_correct
listener = socket.create_server(("127.0.0.1", 0))  # one loopback connect: proof that strace sees this process
socket.create_connection(listener.getsockname()).close()
settings = Settings(root=Path(sys.argv[1]), llm={"provider": "openai", "model": "m", "base_url": sys.argv[2]})
try:
    run_correct(settings)
except RagprepError as exc:
    print(exc)
    sys.exit(2)
print("no refusal")
"""


@pytest.mark.skipif(STRACE is None, reason=NO_STRACE)
def test_a_dot_localhost_endpoint_is_refused_without_any_dns_query(tmp_path):
    options = _tracer_options()
    root, trace = tmp_path / "root", tmp_path / "strace.log"
    ingest_into(root, [SAMPLE_DOCS / "crash_report_side_pole.pptx"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPREP_")} | {"PYTHONPATH": str(REPO)}
    proc = subprocess.run([STRACE, *options, "-f", "-qq", "-s", "96", "-e", TRACED, "-o", str(trace), sys.executable,
                           "-c", CHILD, str(root), "http://probe.localhost:8000/v1"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=240)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.strip().startswith("privacy guard: provider 'openai' would send document text to probe.localhost")
    assert len(proc.stdout.strip().splitlines()) == 1
    lines = trace.read_text(errors="replace").splitlines()
    assert any("connect(" in line and "127.0.0.1" in line for line in lines), "strace saw nothing"
    dns, outbound = offending(lines, nameservers())
    assert not dns and not outbound, _report(dns, outbound)
