# Two commands do all setup on a fresh machine:
#   make run    start the dashboard on the embedded default model (http://localhost:8501)
#   make test   lint and run the whole test suite
# Everyday edits: make unit (seconds), make check (lint and the fast lane, see below).
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
# Loopback by default (HOST=0.0.0.0 to serve the network): Streamlit then prints one URL and does
# not ask an outside service for the machine's external IP.
HOST ?= localhost

.PHONY: run test check unit install install-dev lint bench

install:
	VENV=$(VENV) scripts/install.sh

install-dev:
	VENV=$(VENV) scripts/install.sh --dev

# The same start script as the Docker image: no file watcher (it floods the log with
# "Inotify queue overflowed" on a big tree), headless, prints the URL.
run: install
	VENV=$(VENV) HOST=$(HOST) PORT=$(PORT) scripts/start.sh

# ruff for Python; eslint (node_modules/, pinned by package-lock.json) for ui/*.js and ui/*.css
# and the gallery page's headforms/gallery/*.js and *.css.
ESLINT := node_modules/.bin/eslint

lint: install-dev
	$(PY) -m ruff check .
	$(ESLINT) ui headforms/gallery

# The unit tests on their own, without model packages (tests/unit/conftest.py: importing torch,
# transformers or a bundled model there fails the test): seconds, and first.
UNIT := $(PY) -m pytest tests/unit -q

# The whole suite in three runs: the unit tests alone, then everything else but the browser and
# the Docker image on two xdist workers (whole files each, as the fast lane), then those two on
# two workers of their own (their tests mostly wait on a server, a browser or Docker: together
# they take about half the time they take one after the other; every browser assertion waits
# for its condition). The slowest tests are listed.
HEAVY := browser or image
# Two workers, each taking whole files, in the order tests/conftest.py gives them: the files of
# minutes first, then the others by their number of tests (helpers/run_selection.py).
XDIST := -n 2 --dist loadfile --no-loadscope-reorder
test: install-dev
	$(PY) -m ruff check .
	$(ESLINT) ui headforms/gallery
	$(UNIT)
	$(PY) -m pytest -m "not ($(HEAVY))" --ignore=tests/unit $(XDIST) --durations=20
	$(PY) -m pytest -m "$(HEAVY)" $(XDIST) --durations=10

# The fast lane: lint, the unit tests alone (without model packages), then every other test
# without the heavy markers (pyproject.toml): no browser, Docker image, wheel build, install run,
# fuzzing or other slow test. Two xdist workers, each taking whole files (module fixtures are
# built once); CHECK_ARGS adds options ("-n 0": one process).
FAST := not (browser or image or package or fuzz or slow)
check: install-dev
	$(PY) -m ruff check .
	$(ESLINT) ui headforms/gallery
	$(UNIT)
	$(PY) -m pytest -m "$(FAST)" --ignore=tests/unit $(XDIST) $(CHECK_ARGS)

# Unit tests only: pure functions on synthetic data, run without model packages.
unit: install-dev
	$(UNIT)

# Every benchmark runs even if one fails; the failed ones are listed at the end (exit status 1).
bench: install-dev
	@failed=""; for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || failed="$$failed $$b"; done; \
	if [ -n "$$failed" ]; then echo "failed:$$failed"; exit 1; fi
