# Quick start: `make lab` (set up, then JupyterLab on example_notebooks/), `make test` (set up, then every test layer).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.gpuprofile-installed
BUNDLE := python/gpuprofile/widget/static/widget.js
BUNDLE_CSS := python/gpuprofile/widget/static/widget.css

.PHONY: setup core lab test lint typecheck unit js-test chromium bench clean

# Tests and benchmarks run torch on one thread (another process on a small box makes its
# default threads 100x slower); `make lab` passes no cap: the user's kernel keeps its threads.
test unit bench: export OMP_NUM_THREADS ?= 1

setup: $(STAMP) core $(BUNDLE) $(BUNDLE_CSS)

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch is a range in pyproject.toml; when none is importable install the CPU build from
# this machine's wheel folder rather than letting pip resolve a multi-GB CUDA build.
$(STAMP): $(VENV)/bin/python pyproject.toml
	$(PY) -c 'import torch' 2>/dev/null || $(PIP) install --quiet 'torch==2.13.0'
	$(PIP) install --quiet -e '.[dev,dask,jax,parquet]'
	touch $(STAMP)

# The compiled core (importers/kineto/_gather.c, trace/_walk.c), built in place; the script
# rebuilds a module only when its source is newer, and without a C compiler says so and leaves
# the pure-Python paths. The modules' names (EXT_SUFFIX) are the venv Python's, so the script,
# not make, knows them.
core: $(STAMP)
	$(PY) python/build_core.py

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

$(BUNDLE) $(BUNDLE_CSS) &: node_modules/.package-lock.json $(shell find js -name '*.js' -o -name '*.css')
	npm run --silent build

# Debian's chromium for the browser tests; needs root. Without it the browser tests skip
# (or fail under CI=true).
chromium:
	@if ! command -v chromium >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

# No browser on the machine: JupyterLab prints the URL to open. Root (containers) needs --allow-root.
lab: setup
	$(VENV)/bin/jupyter lab --notebook-dir=example_notebooks --no-browser --ip=127.0.0.1 \
		$(if $(filter 0,$(shell id -u)),--allow-root)

lint: setup
	$(VENV)/bin/ruff check python tests bench
	$(VENV)/bin/ruff format --check python tests bench

typecheck: setup
	$(VENV)/bin/mypy

# The JS unit tests, then the type check of all of js/ (tsconfig.json, js/model/tsconfig.json).
js-test: setup
	node --test js/
	npm run --silent typecheck

unit: setup
	$(PY) -m pytest tests/unit -q

test: setup chromium lint typecheck js-test
	$(PY) -m pytest tests -q -ra --durations=25

bench: setup
	$(PY) bench/load.py $(wildcard ../shared/traces/kineto/*.json.gz)
	$(PY) bench/frontend.py
	$(PY) bench/overhead.py
	$(PY) bench/steps.py

clean:
	rm -rf $(VENV) node_modules $(BUNDLE) $(BUNDLE_CSS) dist build
	rm -f python/gpuprofile/importers/kineto/_gather.*.so python/gpuprofile/importers/kineto/_scan.*.so python/gpuprofile/trace/_walk.*.so
