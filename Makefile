# ragprep: the two set-up commands are `make demo` and `make test`.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
ROOT ?= ragprep-data
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export DO_NOT_TRACK ?= 1
## uv installs without compiling every module (pip compiled all 23,000 of them: about 50 CPU s); Python compiles
## what runs on first import and keeps it in the venv. Where the environment sets PYTHONDONTWRITEBYTECODE, every
## process would compile every module again (about 4.5 CPU s per ragprep process), so the recipes here unset it.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo serve test test-fast test-llm bench system-deps test-deps sample-docs constraints clean

## The venv, every dependency pinned by constraints.txt (the versions the tests ran with; the image uses it too).
## uv (pinned there too) installs it: on a fresh 2-core machine about 40 s against about 86 s for pip, the same
## versions. Where uv cannot be installed or fails, pip installs the same pins.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	{ $(VENV)/bin/pip install -q -c constraints.txt uv \
	  && $(VENV)/bin/uv pip install -q --python $(PY) -c constraints.txt -e '.[test]'; } \
	|| { echo "uv could not install the venv; pip installs it instead"; \
	     $(VENV)/bin/pip install -q --upgrade pip && $(VENV)/bin/pip install -q -c constraints.txt -e '.[test]'; }
	touch $@

## Re-pin constraints.txt to what the venv has now (after a dependency change; then run the tests).
constraints: $(VENV)/.installed
	{ sed -n '/^#/p' constraints.txt; $(VENV)/bin/pip freeze --all --exclude-editable | grep -v -i -E '^(ragprep|pip|setuptools)=='; } \
	  > constraints.txt.new
	mv constraints.txt.new constraints.txt

system-deps:
	@deploy/install-system-deps.sh

test-deps:
	@deploy/install-system-deps.sh --browser

## The whole pipeline over sample_docs/ on the embedded defaults (no keys, no network).
demo: $(VENV)/.installed system-deps
	$(VENV)/bin/ragprep run sample_docs --root $(ROOT)

## ragprep as a service on this machine until Ctrl-C: Prefect server + UI, work pool, deployments, worker and the
## report page on loopback (the root must be outside the checkout).
SERVE_ROOT ?= $(HOME)/ragprep-data
serve: $(VENV)/.installed system-deps
	$(VENV)/bin/ragprep serve --root $(SERVE_ROOT)

## The test suite, what CI runs (installs what it needs; starts its own Prefect server on loopback), on
## TEST_WORKERS pytest-xdist processes: many tests wait on subprocesses and servers, so three workers suit two cores.
## Each module stays on one worker, as do the tests that share the demo run or the pipeline run (tests/conftest.py);
## the longest go first; the workers share one Prefect server. The suite is CPU-bound (about 770 CPU s): shorter runs
## need less work, not another spread. Figures and where the time goes: README, Tests and benchmarks.
TEST_WORKERS ?= 3
## The venv and the Debian packages install side by side (both mostly wait on the network).
test:
	@$(MAKE) --no-print-directory -j2 $(VENV)/.installed test-deps
	$(PY) -m pytest -n $(TEST_WORKERS)

## The fast lane for every change: unit and contract tests, no Prefect server, no end-to-end runs (tests marked
## slow, and every test that needs the Prefect server, are left to `make test`); TEST_WORKERS workers as for `make test`.
test-fast: $(VENV)/.installed
	$(PY) -m pytest -n $(TEST_WORKERS) -m "not slow and not llm" -q

## The openai provider against a real local server (llama-cpp-python + SmolLM2-135M; builds .venv-llm
## on first use, about 25 minutes on two cores). Not part of `make test` or CI.
test-llm: $(VENV)/.installed system-deps
	VENV=$(VENV) deploy/test-llm.sh

## Benchmarks: ratios against baselines and peers measured in the same run.
bench: $(VENV)/.installed system-deps
	$(VENV)/bin/pip install -q -r bench/requirements.txt
	$(PY) bench/embed.py
	$(PY) bench/extract.py
	$(PY) bench/layout.py
	$(PY) bench/negatives.py
	$(PY) bench/index.py
	$(PY) bench/refmatch.py
	$(PY) bench/pipeline.py
	$(PY) bench/fidelity.py

## Regenerate the committed sample documents (deterministic bytes).
sample-docs: $(VENV)/.installed
	$(PY) sample_docs/generate.py

clean:
	rm -rf $(ROOT) .pytest_cache
