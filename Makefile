# hooklab — `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
ASSIGNMENTS := $(notdir $(wildcard solutions/*))

# nbgrader and the JupyterLab extensions read the course configuration from autograder/,
# Jupyter prefers this virtual environment's kernel over any user-wide one, and the tools
# nbgrader starts by name (alembic) come from the virtual environment.
export PATH := $(CURDIR)/$(BIN):$(PATH)
export JUPYTER_CONFIG_PATH := $(CURDIR)/autograder
export JUPYTER_PREFER_ENV_PATH := 1

.PHONY: help install lab test test-browser release execute autograde bench lock clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  make %-13s %s\n", $$1, $$2}'

$(INSTALLED): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --constraint requirements.lock --editable '.[test]'
	touch $@

install: $(INSTALLED) ## create .venv and install the pack, pinned by requirements.lock (fast when done)

LAB_ROOT ?= notebooks
lab: $(INSTALLED) ## start JupyterLab on notebooks/ (instructors: make lab LAB_ROOT=.)
	$(BIN)/jupyter lab --ServerApp.root_dir=$(LAB_ROOT) $(if $(filter 0,$(shell id -u)),--allow-root)

test: $(INSTALLED) ## run the whole test suite (the browser test too, when Chromium is installed)
	$(BIN)/pytest

test-browser: $(INSTALLED) ## only the JupyterLab + Chromium test (screenshot in build/browser/)
	$(BIN)/pytest tests/test_browser.py

release: $(INSTALLED) ## regenerate notebooks/ (student release) from solutions/
	for assignment in $(ASSIGNMENTS); do \
		$(BIN)/nbgrader generate_assignment "$$assignment" --force --log-level=WARN || exit 1; \
	done

execute: $(INSTALLED) ## re-run every solution notebook and store its outputs
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.record_timing=False --ExecutePreprocessor.store_widget_state=False solutions/*/*.ipynb

autograde: $(INSTALLED) ## grade a class: make autograde SUBMISSIONS=<folder or zip> (hooklab autograde --help)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make autograde SUBMISSIONS=<folder or zip>"; exit 2; }
	$(BIN)/hooklab autograde "$(SUBMISSIONS)"

BENCH_N ?= 24
bench: $(INSTALLED) ## throughput of hooklab autograde vs sequential nbgrader autograde (BENCH_N submissions; BENCH_DASK=1 adds a local Dask cluster)
	$(BIN)/python benchmarks/bench_autograde.py $(BENCH_N) $(if $(filter 1,$(BENCH_DASK)),--dask)

lock: ## re-resolve the newest allowed versions into requirements.lock (keeps its torch pin)
	rm -rf build/lock-venv
	$(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/python -m pip install --quiet "$$(grep '^torch==' requirements.lock)" '.[test]'
	build/lock-venv/bin/python -m pip freeze --exclude-editable \
		| sed -e 's/+cpu$$//' | grep -v '^hooklab' > requirements.lock
	rm -rf build/lock-venv

clean: ## remove the virtual environment and nbgrader's working files
	rm -rf $(VENV) build autograder/gradebook.db autograder/submitted autograder/autograded autograder/feedback \
		autograder/release autograder/grading.json autograder/grading.log autograder/grades.csv
