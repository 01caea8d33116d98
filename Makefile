# fairscan developer tasks. `make demo` and `make test` work on a fresh machine (Python >= 3.10).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# `make demo` installs fairscan with its runtime dependencies only (KERNELS: the editable install,
# which compiles the Cython engine kernels in place through setup.py; again when their sources
# change); `make test`, `lint` and `docs` add the test and docs extras (DEV) to the same venv.
KERNELS := $(VENV)/.kernels-stamp
DEV     := $(VENV)/.dev-stamp
KERNEL_SOURCES := pyproject.toml setup.py $(wildcard src/fairscan/engine/*.pyx src/fairscan/engine/*.pxd)

.PHONY: setup demo test test-slow test-all test-lowest lint format schemas docs docs-serve sample-data compas adult bench wheel clean mlflow-server

$(KERNELS): $(KERNEL_SOURCES)
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@touch $(KERNELS)

# the test, docs and release extras on top of the runtime install, without rebuilding the kernels (scripts/extras.py
# lists the extras' requirements from pyproject.toml). The MLflow client (the mlflow extra) is resolved with them
# in a new venv, and left as it is where it is already installed: mlflow-skinny caps importlib_metadata below
# the newest release, which pip would otherwise downgrade in a venv that has it.
$(DEV): $(KERNELS)
	$(BIN)/python scripts/extras.py test docs release > $(VENV)/extras.txt
	$(BIN)/python -c "import mlflow" 2>/dev/null || $(BIN)/python scripts/extras.py mlflow >> $(VENV)/extras.txt
	$(BIN)/python -m pip install --quiet -r $(VENV)/extras.txt
	@touch $(DEV)

# The MLflow tests' tracking server (tests/conftest.py starts it on 127.0.0.1): the full `mlflow`
# package, with its server dependencies (SQLAlchemy, Flask, uvicorn, ...), in a venv of its own
# so they never constrain fairscan's; FAIRSCAN_MLFLOW_SERVER may name another `mlflow` executable.
MLFLOW_VENV := .venv-mlflow
MLFLOW_SERVER := $(MLFLOW_VENV)/bin/mlflow
MLFLOW_SERVER_REQUIREMENT ?= mlflow>=3.0,<4
$(MLFLOW_SERVER):
	[ -x $(MLFLOW_VENV)/bin/python ] || $(PYTHON) -m venv $(MLFLOW_VENV)
	$(MLFLOW_VENV)/bin/python -m pip install --quiet '$(MLFLOW_SERVER_REQUIREMENT)'

mlflow-server: $(MLFLOW_SERVER)

setup: $(DEV)

# The sample data is committed; regenerate it only when missing (the script is deterministic).
sample_data/credit.csv: | $(KERNELS)
	$(BIN)/python scripts/make_sample_data.py

sample-data: $(KERNELS)
	$(BIN)/python scripts/make_sample_data.py
	$(BIN)/python scripts/make_score_samples.py

# Exit code 1 means "significant finding", which is what the demo is meant to show.
demo: $(KERNELS) sample_data/credit.csv
	$(BIN)/audit run audits/sample.audit.yaml --out reports || [ $$? -eq 1 ]
	@echo "Reports: reports/sample-credit.md and reports/sample-credit.json"

# `make test` runs the suite without the `slow` tests (statistical simulations, packaging builds,
# clusters and killed processes, browsers, MLflow servers, memory limits, hostile rounds, the
# wall-clock interrupt limits: `make test-slow`; CI runs both),
# in 2 processes (pytest-xdist; tests/conftest.py keeps a file's, or a server's, tests in one).
# The fast suite has no wall-clock budget, so a busy machine slows it but does not fail it.
# Each stays under 5 minutes on 2 cores; test-slow runs in one process: its interrupt tests
# measure wall-clock seconds, which a second process beside them would inflate.
test: $(DEV) $(MLFLOW_SERVER)
	$(BIN)/python -m pytest -m "not slow" -n 2 --dist loadgroup

test-slow: $(DEV) $(MLFLOW_SERVER)
	$(BIN)/python -m pytest -m slow

test-all: $(DEV) $(MLFLOW_SERVER)
	$(BIN)/python -m pytest

# the fast suite and the demo with the lowest versions of the runtime dependencies that
# pyproject.toml declares (uv --resolution lowest-direct, in .venv-lowest)
test-lowest: $(DEV)
	$(BIN)/python -m pip install --quiet uv
	PATH=$(CURDIR)/$(BIN):$$PATH scripts/check_lowest_versions.sh .venv-lowest

# ruff (style), import-linter (package layers, pyproject's [tool.importlinter]), mypy (types) and
# the release workflow, which cannot run here, against GitHub's workflow schema
lint: $(DEV)
	$(BIN)/ruff check src tests scripts benchmarks setup.py
	$(BIN)/ruff format --check src tests scripts benchmarks setup.py
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(BIN)/check-jsonschema --builtin-schema vendor.github-actions action.yml

format: $(DEV)
	$(BIN)/ruff format src tests scripts benchmarks setup.py
	$(BIN)/ruff check --fix src tests scripts benchmarks setup.py

schemas: $(DEV)
	$(BIN)/python -m fairscan.schemas schemas

# The documentation site: generate the reference pages (scan types from `audit explain`, the spec
# from its JSON Schema, the API, the own-data page's real outputs; tests/test_docs.py
# checks they are current), then build site/ with every warning an error. CI passes
# DOCS_FLAGS=--check: a stale generated page fails instead of being rewritten.
DOCS_FLAGS ?=
docs: $(DEV)
	$(BIN)/python scripts/build_docs.py $(DOCS_FLAGS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The site on http://127.0.0.1:8000 (DOCS_ADDR), rebuilt on every change. site/index.html also
# opens straight from disk (mkdocs.yml: use_directory_urls false, the offline plugin); search
# from disk loads one small script from unpkg.com (served, it needs no network).
DOCS_ADDR ?= 127.0.0.1:8000
docs-serve: $(DEV)
	$(BIN)/python scripts/build_docs.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict --dev-addr $(DOCS_ADDR)

# COMPAS table derived from ../shared/data (never committed): build/compas.csv
compas: $(DEV)
	$(BIN)/python scripts/prepare_compas.py

# Adult search/validation splits with xgboost scores, one CSV with a split column: build/adult_subroc.csv
adult: $(DEV)
	$(BIN)/python scripts/prepare_adult.py

# Benchmarks are run by hand (never by the test suite); results are committed as Markdown.
bench: $(DEV) compas adult
	$(BIN)/python benchmarks/bench_mdss.py --write benchmarks/RESULTS.md
	$(BIN)/python benchmarks/bench_subroc.py
	$(BIN)/python benchmarks/bench_ijdi.py
	$(BIN)/python benchmarks/bench_cbs.py
	$(BIN)/python benchmarks/bench_certification.py
	$(BIN)/python benchmarks/bench_startup.py
	$(BIN)/python benchmarks/bench_interrupts.py

# A manylinux2014 (glibc 2.17) wheel for Linux, built here with zig's C compiler (the `release`
# extra, from PyPI, installed with the test extras) and checked with auditwheel:
# dist/fairscan-*-manylinux*.whl
wheel: $(DEV)
	PYTHON=$(CURDIR)/$(BIN)/python scripts/build_wheel.sh dist

clean:
	rm -rf $(VENV) $(MLFLOW_VENV) build reports site .pytest_cache .ruff_cache .hypothesis
