# The two commands of README.md: `make run` (the console with demo data) and `make test` (everything).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt pyproject.toml package-lock.json 2>/dev/null | sha256sum | cut -c1-12)

.PHONY: screenshots run test install nemo-env lint check-deploy test-package test-sqlite test-postgres
.PHONY: soak-broker bench bench-http bench-runtime bench-decisionlog bench-gateway mutation mutation-firewall fuzz clean

$(STAMP):
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	# axe-core for the browser tests' accessibility check (package.json); the console never needs it.
	if command -v npm >/dev/null; then npm ci --no-audit --no-fund --silent; \
	else echo "npm not found: the browser tests' accessibility check cannot run"; fi
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# NeMo Guardrails' own Colang parsers, the oracle of the rulebook compiler's differential test,
# live in a virtual environment of their own (tests/rulebooks/nemo/); setup_env.sh is idempotent.
nemo-env:
	PYTHON=$(PYTHON) sh tests/rulebooks/nemo/setup_env.sh

install: $(STAMP)

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo
	bash scripts/run.sh

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

check-deploy: install
	STALWART_SECRET_KEY=$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(64))') \
	STALWART_ALLOWED_HOSTS=console.example.org \
	DJANGO_SETTINGS_MODULE=console.settings.production \
	$(PY) manage.py check --deploy --fail-level WARNING

# The built wheel and sdist in fresh virtual environments, outside the checkout: what README.md's
# Deployment section says a new user runs (scripts/package_check.sh).
test-package: install
	PY=$(PY) PYTHON=$(PYTHON) BASE_PYTHON=$(PYTHON) bash scripts/package_check.sh

# Each half has a Redis database of its own, so the two can run side by side (`make test` does).
test-sqlite: install
	env -u DATABASE_URL REDIS_URL=$${TEST_SQLITE_REDIS_URL:-redis://127.0.0.1:6379/9} \
	$(PY) -m pytest $(PYTEST_ARGS)

test-postgres: install
	DATABASE_URL=$${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/stalwart} \
	REDIS_URL=$${TEST_POSTGRES_REDIS_URL:-redis://127.0.0.1:6379/8} $(PY) -m pytest $(PYTEST_ARGS)

# The checks, then the suite's two halves side by side, one per core (each half's output kept
# together): SQLite runs every test, PostgreSQL every test that reaches the database.
test: nemo-env lint check-deploy test-package
	$(MAKE) --no-print-directory -j2 --output-sync=target test-sqlite test-postgres

# The embedded broker under concurrent writers and remote control, outside `make test`:
# SOAK_ARGS="--writers 8 --duration 120" narrows it; `--transport filesystem` shows the old crash.
soak-broker: install
	$(PY) scripts/soak_broker.py $(SOAK_ARGS)

bench: install
	$(PY) -m benchmarks.firewall
	$(PY) -m benchmarks.sequences
	$(PY) -m benchmarks.rulebooks
	$(PY) -m benchmarks.toolcheck
	$(PY) -m benchmarks.frameworks

# The decision endpoints over HTTP under gunicorn, beside GET /v1/whoami (PostgreSQL and Redis):
# BENCH_DATABASE_URL (a database it drops and creates) and BENCH_REDIS_URL (a db it flushes).
bench-http: install
	$(PY) -m benchmarks.http

# Checks decided in process from the console's bundle (decide="local") against a LocalSession,
# with the console as bench-http runs it (BENCH_DATABASE_URL, BENCH_REDIS_URL: dropped, flushed).
bench-runtime: install
	$(PY) -m benchmarks.runtime $(BENCH_ARGS)

# Decision logs: a runtime's decision in the console's feed at 1,000 decisions/s (delay p50/p99),
# the ingest rate of a drained spool, and sequence matching with 1 and 2 workers over one
# PostgreSQL backlog. BENCH_DATABASE_URL (dropped and created) and BENCH_REDIS_URL (flushed).
bench-decisionlog: install
	$(PY) -m benchmarks.decisionlog $(BENCH_ARGS)

# The latency `stalwart gateway` adds to an MCP tools/call (stdio and streamable HTTP), and calls/s.
bench-gateway: install
	$(PY) -m benchmarks.gateway $(BENCH_ARGS)

# mutmut over the tool-check engine (and the executor's rules in guard/engine/execution.py), then
# each of the executor's controls removed in turn (scripts/mutation_controls.py).
mutation: install
	bash scripts/mutation.sh guard
	$(PY) scripts/mutation_controls.py

# The firewall engine (about 50 minutes with 2 workers on this machine kind; benchmarks/README.md).
mutation-firewall: install
	bash scripts/mutation.sh firewall

# Screenshots of every console page at 1440x900 and 390x844 into docs/screenshots/ (README);
# PAGES="proof rulebook-compare" takes only those.
screenshots: install
	$(PY) scripts/screenshots.py $(PAGES)

# hypothesis over the firewall validator, the rulebook compiler, agent.yaml and the tool check, for
# FUZZ_SECONDS in all (FUZZ_SEED repeats a run); outside `make test`.
FUZZ_SECONDS ?= 300
fuzz: install
	FUZZ_SECONDS=$(FUZZ_SECONDS) $(PY) scripts/fuzz.py

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .hypothesis
