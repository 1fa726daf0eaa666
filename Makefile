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

.PHONY: help install lab instructor lint test test-browser test-fast release execute autograde bench mutants compat labextension wheel lock clean usage-autograde usage-compat

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  make %-13s %s\n", $$1, $$2}'

# torch's CPU build by default (students rarely have a GPU; a CUDA build is several GB): a torch wheel that
# pip finds without an index (its find-links) is taken as it is, otherwise PyTorch's CPU index is added.
# TORCH_INDEX=<url> takes another build (https://download.pytorch.org/whl/cu128), TORCH_INDEX= PyPI's.
TORCH_INDEX ?= auto
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
# $(call torch_index,PYTHON,REQUIREMENT): sets the shell variable index to the package index for torch (none: PyPI's)
define torch_index
	index="$(TORCH_INDEX)"; \
	if [ "$$index" = auto ]; then \
		$(1) -m pip install --dry-run --quiet --no-index --no-deps --ignore-installed "$(2)" \
			>/dev/null 2>&1 && index= || index=$(TORCH_CPU_INDEX); \
	fi;
endef
LOCKED_TORCH = $$(grep '^torch==' requirements.lock)
# $(call pip_install,EXTRAS,PIP OPTIONS): the pack with EXTRAS into .venv, at the lock's versions
define pip_install
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call torch_index,$(BIN)/python,$(LOCKED_TORCH)) \
	$(BIN)/python -m pip install $(2) --constraint requirements.lock $${index:+--extra-index-url "$$index"} --editable '.[$(1)]'
endef
# The full environment (make instructor, autograde, test, ...); its first run says what it installs, with pip's progress.
$(INSTALLED): pyproject.toml requirements.lock
	echo "First run: installing the pack, nbgrader, Dask, the test tools, JupyterLab and torch's CPU build into $(VENV)/"
	echo "(a few minutes, about 1.8 GB; later runs start at once) ..."
	echo "$(UNPACKING)"
	$(call pip_install,grading$(COMMA)test,--progress-bar on --no-warn-script-location)
	touch $@ $(LAB_INSTALLED)

# pip prints nothing while it unpacks torch ("Installing collected packages"): the first run says so before.
UNPACKING := (after the downloads, pip says 'Installing collected packages', then unpacks torch for about 2-3 minutes without output)

# A student's lab needs JupyterLab and nbgrader's Validate only; its first run says what it installs, with pip's progress.
LAB_INSTALLED := $(VENV)/.lab-installed
COMMA := ,
.SILENT: lab instructor $(LAB_INSTALLED) $(INSTALLED) usage-autograde usage-compat  # one sees what happens, not the recipes
$(LAB_INSTALLED): pyproject.toml requirements.lock
	echo "First run: installing the notebooks' packages, JupyterLab and torch's CPU build into $(VENV)/"
	echo "(a few minutes and under 2 GB; later runs start at once) ..."
	echo "$(UNPACKING)"
	$(call pip_install,lab,--progress-bar on --no-warn-script-location)
	touch $@

install: $(INSTALLED) ## create .venv with the pack, its grading and test extras, pinned by requirements.lock (fast when done)

# JupyterLab's modes (lab/README.md): their Jupyter configuration comes before the course's.
ARGS ?=
LAB = $(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(LAB_INSTALLED) ## students: JupyterLab on your working copy work/ of notebooks/, with nbgrader's Validate (ARGS="--port 9000 --no-browser")
	echo "Your working copy is work/ (a new release replaces a notebook you never changed, and is put beside one you did):"
	$(BIN)/python lab/working_copy.py notebooks work
	echo "Starting JupyterLab on work/ (Ctrl+C twice to stop) ..."
	JUPYTERLAB_WORKSPACES_DIR=$(CURDIR)/build/lab-workspaces/student JUPYTER_CONFIG_PATH=$(CURDIR)/lab/student:$(CURDIR)/lab/course:$(CURDIR)/autograder $(LAB) --ServerApp.root_dir=work $(ARGS)

instructor: $(INSTALLED) ## instructors: JupyterLab on the course, with Formgrader and Create Assignment (ARGS as for lab)
	mkdir -p autograder/exchange
	echo "Starting JupyterLab on the course, with Formgrader and Create Assignment (Ctrl+C twice to stop) ..."
	JUPYTERLAB_WORKSPACES_DIR=$(CURDIR)/build/lab-workspaces/instructor JUPYTER_CONFIG_PATH=$(CURDIR)/lab/course:$(CURDIR)/autograder $(LAB) --ServerApp.root_dir=. $(ARGS)

lint: $(INSTALLED) ## ruff's checks of the Python code (the rules are in pyproject.toml; the notebooks are not linted)
	$(BIN)/ruff check .

test: $(INSTALLED) ## run the whole test suite (the browser test too, when Chromium is installed)
	$(BIN)/pytest

test-browser: $(INSTALLED) ## only the JupyterLab + Chromium test (screenshot in build/browser/)
	$(BIN)/pytest tests/test_browser.py

test-fast: $(INSTALLED) ## the fast tier: the tests that start no kernel, lab, browser or grader (seconds)
	$(BIN)/pytest -m "not slow" tests

release: $(INSTALLED) ## regenerate notebooks/ (student release) from solutions/
	for assignment in $(ASSIGNMENTS); do \
		$(BIN)/nbgrader generate_assignment "$$assignment" --force --log-level=WARN || exit 1; \
	done

execute: $(INSTALLED) ## re-run every solution notebook and store its outputs
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.record_timing=False --ExecutePreprocessor.store_widget_state=False solutions/*/*.ipynb

# Without their variable, autograde and compat print their usage before installing anything.
autograde: $(if $(SUBMISSIONS),$(INSTALLED),usage-autograde) ## grade a class: make autograde SUBMISSIONS=<folder or zip> (hooklab autograde --help)
	$(BIN)/hooklab autograde "$(SUBMISSIONS)"
usage-autograde:
	echo "usage: make autograde SUBMISSIONS=<folder or zip>"; exit 2

BENCH_N ?= 24
BENCH_ASSIGNMENT ?= 02_forward_hooks
bench: $(INSTALLED) ## hooklab autograde vs sequential nbgrader (BENCH_N submissions of BENCH_ASSIGNMENT; BENCH_DASK=1 adds a local Dask cluster)
	$(BIN)/python benchmarks/bench_autograde.py $(BENCH_N) --assignment $(BENCH_ASSIGNMENT) $(if $(filter 1,$(BENCH_DASK)),--dask)

NOTEBOOKS ?=
mutants: $(INSTALLED) ## the hidden tests' strength: each solution's mutants and the catalogue's wrong readings, judged as the grader judges (NOTEBOOKS=02_forward_hooks: some)
	$(BIN)/python -m mutation.score $(NOTEBOOKS)

TORCH ?=
compat: $(if $(TORCH),$(INSTALLED),usage-compat) ## the pack on another torch, notebook by notebook: make compat TORCH=2.15.0 [NOTEBOOKS=10_hooks_inside_pytorch] (an environment in build/compat/)
	$(call torch_index,$(BIN)/python,torch==$(TORCH)) \
	$(BIN)/python -m compat $(TORCH) $${index:+--index "$$index"} $(NOTEBOOKS)
usage-compat:
	echo "usage: make compat TORCH=<version> [NOTEBOOKS=<folder> ...] [TORCH_INDEX=<url>, or empty for PyPI's builds]"; exit 2

# Only when src/hooklab/lab_validate/js/ changes, with node and npm: the bundle is committed, students never build it.
JUPYTERLAB_CORE := import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))
labextension: $(LAB_INSTALLED) ## rebuild the student lab's Validate button (src/hooklab/lab_validate/labextensions/) with npm
	cd src/hooklab/lab_validate/js && npm ci --no-audit --no-fund && rm -rf ../labextensions/hooklab-validate \
		&& npx build-labextension --core-path "$$($(CURDIR)/$(BIN)/python -c '$(JUPYTERLAB_CORE)')" .

DIST ?= dist
wheel: $(LAB_INSTALLED) ## instructors: the pack as one wheel in dist/, for students on Colab (README, "Colab and conda")
	rm -rf $(DIST)
	$(BIN)/python -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir $(DIST) .
	@echo "Share $$(ls $(DIST)/*.whl) with your students (README, section \"Colab and conda\")."

lock: ## re-resolve the newest allowed versions into requirements.lock (keeps its torch pin)
	rm -rf build/lock-venv
	$(PYTHON) -m venv build/lock-venv
	$(call torch_index,build/lock-venv/bin/python,$(LOCKED_TORCH)) \
	build/lock-venv/bin/python -m pip install --quiet $${index:+--extra-index-url "$$index"} "$(LOCKED_TORCH)" '.[grading,test]'
	build/lock-venv/bin/python -m pip freeze --exclude-editable \
		| sed -e 's/+cpu$$//' | grep -v '^hooklab' > requirements.lock
	rm -rf build/lock-venv

clean: ## remove what make made: the virtual environment, build/, dist/, nbgrader's working files and exchange (never work/)
	rm -rf $(VENV) build $(DIST) src/hooklab.egg-info src/hooklab/lab_validate/js/node_modules autograder/exchange autograder/gradebook.db autograder/submitted autograder/autograded autograder/feedback \
		autograder/release autograder/grading.json autograder/grading.json.journal autograder/grading.tmp autograder/grading.log \
		autograder/grading-run.json autograder/grading-run.tmp \
		autograder/grades.csv autograder/report.html autograder/report-*.csv
