# fairscan developer tasks. `make demo` and `make test` work on a fresh machine (Python >= 3.11).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# the compiled engine kernels (Cython, built by `pip install -e .` through setup.py)
KERNELS       := $(VENV)/.kernels-stamp
KERNEL_SOURCES := setup.py $(wildcard src/fairscan/engine/*.pyx src/fairscan/engine/*.pxd)

.PHONY: setup demo test test-fast lint format schemas docs sample-data compas adult bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	@touch $(STAMP) $(KERNELS)

# Rebuild the kernels when their sources change (the editable install compiles them in place).
$(KERNELS): $(STAMP) $(KERNEL_SOURCES)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $(KERNELS)

setup: $(KERNELS)

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

test: $(KERNELS)
	$(BIN)/python -m pytest

test-fast: $(KERNELS)
	$(BIN)/python -m pytest -m "not slow"

# ruff (style), import-linter (package layers, pyproject's [tool.importlinter]) and mypy (types)
lint: $(KERNELS)
	$(BIN)/ruff check src tests scripts benchmarks setup.py
	$(BIN)/ruff format --check src tests scripts benchmarks setup.py
	$(BIN)/lint-imports
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format src tests scripts benchmarks setup.py
	$(BIN)/ruff check --fix src tests scripts benchmarks setup.py

schemas: $(KERNELS)
	$(BIN)/python -m fairscan.schemas schemas

# The documentation site: generate the reference pages (scan types from `audit explain`, the spec
# from its JSON Schema, the API, the README's report contract and CI recipes; tests/test_docs.py
# checks they are current), then build site/ with every warning an error. CI passes
# DOCS_FLAGS=--check: a stale generated page fails instead of being rewritten.
DOCS_FLAGS ?=
docs: $(KERNELS)
	$(BIN)/python scripts/build_docs.py $(DOCS_FLAGS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# COMPAS table derived from ../shared/data (never committed): build/compas.csv
compas: $(KERNELS)
	$(BIN)/python scripts/prepare_compas.py

# Adult search/validation splits with xgboost scores, one CSV with a split column: build/adult_subroc.csv
adult: $(KERNELS)
	$(BIN)/python scripts/prepare_adult.py

# Benchmarks are run by hand (never by the test suite); results are committed as Markdown.
bench: $(KERNELS) compas adult
	$(BIN)/python benchmarks/bench_mdss.py --write benchmarks/RESULTS.md
	$(BIN)/python benchmarks/bench_subroc.py
	$(BIN)/python benchmarks/bench_ijdi.py
	$(BIN)/python benchmarks/bench_cbs.py
	$(BIN)/python benchmarks/bench_certification.py
	$(BIN)/python benchmarks/bench_startup.py

clean:
	rm -rf $(VENV) build reports site .pytest_cache .ruff_cache .hypothesis
