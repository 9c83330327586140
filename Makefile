# Two entry points (README): `make run` analyses sample_logs with the embedded model,
# `make test` runs the whole test suite. Both install what they need first (idempotent).
PYTHON ?= python3
PIP := $(PYTHON) -m pip
# The CPU build of torch that lies on this kind of machine's disk; an unpinned torch would pull CUDA.
TORCH_CPU ?= torch==2.13.0
DB ?= $(CURDIR)/.logwarden/demo.db
# The demo's model time: stories are written riskiest first, so 90 s still tells the top incidents and
# `make run` stays within 3 minutes on a 2-core CPU (issue 46); `analyze`'s own default is auto (3 min on a CPU).
RUN_BUDGET ?= 90s

.PHONY: setup setup-transformers setup-test lint run test test-fast bench-ingest

# What `make run` needs: the app and llama.cpp (the CPU engine), no torch.
setup:
	$(PIP) install -q --disable-pip-version-check -e .

# The transformers engine (CUDA, training, --engine transformers) on the CPU build of torch.
setup-transformers: setup
	$(PIP) install -q --disable-pip-version-check "$(TORCH_CPU)"
	$(PIP) install -q --disable-pip-version-check -e '.[transformers]'

setup-test: setup-transformers
	$(PIP) install -q --disable-pip-version-check -e '.[test]'
	./scripts/install_system_deps.sh

run: setup
	# sample_logs' syslog files state no year and a checkout's mtime is today: the story's year is 2024
	logwarden analyze sample_logs --year 2024 --llm-budget $(RUN_BUDGET) --db sqlite:///$(DB)
	logwarden records list --min-risk medium --db sqlite:///$(DB)

# The agreed ruff rules, and the floors (cli → train | ui → app → engine → schemas | prompts | errors,
# no cycles) as import-linter contracts in pyproject.toml, and strict types on the data contract (schemas/)
# and the engine's interface (engine/api.py), the two things every layer relies on.
lint: setup-test
	$(PYTHON) -m ruff check .
	lint-imports
	$(PYTHON) -m mypy --strict --follow-imports=silent logwarden/schemas logwarden/engine/api.py

test: setup-test lint
	$(PYTHON) -m pytest -q -ra

test-fast: setup-test
	$(PYTHON) -m pytest -q -ra -m "not model and not browser"

bench-ingest: setup
	$(PYTHON) bench/ingest.py
