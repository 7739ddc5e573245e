# Nimbus: two commands for a fresh machine with Python 3.11 and make.
#   make demo   the whole cloud in one process, boots 20 servers
#   make check  the fast loop after each change: lint, unit and functional
#               tests, the big input matrices sampled (under 5 minutes)
#   make test   what CI runs: make check plus the long families
# Python 3.11 or newer (setup.cfg's python_requires): python3.11 when it
# is on the PATH, else python3.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || echo python3)
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo format lint soak tempest check check-tests test test-faults test-unit test-functional test-integration bench clean sample-config openapi fuzz \
	test-matrix test-slow test-db-mysql test-db-postgresql test-daemons test-faults-quick test-soak-short test-devstack test-browser test-moves-cli test-daemons-full

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python setup.cfg setup.py
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(BIN)/python setup.cfg setup.py
	$(BIN)/pip install -q -e '.[test]'
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	$(BIN)/nimbus all-in-one --demo --state-dir $(CURDIR)/state/demo-$$$$ --api-port 0 --placement-port 0 --exit-after-demo

# The placement suite runs on every database engine Nimbus supports (SQLite
# in the main run, then MariaDB and PostgreSQL). No test restarts the
# machine's RabbitMQ or MariaDB: the broker-restart test and the fault rows
# restart a private node/server of their own (nimbus/testing/private_rabbit.py,
# private_mariadb.py), so they run with the other daemons (test-daemons).
PLACEMENT_DB_SUITE := tests/functional/placement tests/unit/placement/test_objects.py \
	tests/unit/placement/test_allocation_retry.py tests/unit/placement/test_migrations.py

# pyflakes and the one code style through ruff (ruff.toml; `make format`
# applies the style), the layers (.importlinter): which
# package may import which, and no cycles; shellcheck on every shell script.
SHELL_SCRIPTS := devstack/plugin.sh devstack/settings devstack/lib/nimbus \
	tests/devstack/harness.sh .ci/run

lint: $(VENV)/.installed-test
	$(BIN)/ruff check nimbus tests benchmarks harness
	$(BIN)/ruff format --check --quiet nimbus tests benchmarks harness
	$(BIN)/lint-imports --no-cache
	$(BIN)/shellcheck -x -s bash $(SHELL_SCRIPTS)

format: $(VENV)/.installed-test
	$(BIN)/ruff format nimbus tests benchmarks harness

# A test target's last command ends with "; $(done)": it prints how long
# the target ran ("== test-x: 42 s"), also when the command failed, so the
# slowest is visible. make expands all of a recipe's lines before running
# the first, so the $(shell date) below is the recipe's start.
done = rc=$$?; echo "== $@: $$(( $$(date +%s) - $(shell date +%s) )) s"; exit $$rc

# The fast loop, after each change: lint, then the unit and functional
# tests (in-process bus, SQLite, one pytest run on 2 workers) but those
# marked slow, and a seeded sample of each test marked matrix (a fresh
# seed each run, printed in the header; NIMBUS_TEST_SEED=N repeats it;
# MATRIX_SAMPLE is the fraction). pytest.ini lists the markers.
MATRIX_SAMPLE ?= 0.1
# CHECK_SKIP=MARKER leaves out the tests marked MARKER too (make test:
# matrix, whose every row test-matrix runs anyway).
CHECK_MARKS := not slow and not integration and not broker_restart and not faults_full
CHECK_SELECTION = -m "$(CHECK_MARKS)$(if $(CHECK_SKIP), and not $(CHECK_SKIP))" \
	tests/unit tests/functional
check: $(VENV)/.installed-test
	@$(MAKE) --no-print-directory lint && $(MAKE) --no-print-directory check-tests; $(done)

# Python writes its bytecode for the tests even where the environment says
# PYTHONDONTWRITEBYTECODE (this machine's does): without it each pytest
# worker and each Python subprocess of the tests compiled Nimbus and the
# tests again (about 10 CPU s per worker). The __pycache__ directories
# are git-ignored. Three workers: the tests still wait part of the time,
# so a third fills the idle time of the two cores
# (212 s against 327 s for two, docs/results/2026-11-29-check-speed.md).
CHECK_WORKERS ?= 3
check-tests: $(VENV)/.installed-test
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(CHECK_WORKERS) --dist loadfile --matrix-sample $(MATRIX_SAMPLE) $(PYTEST_ARGS) $(CHECK_SELECTION); $(done)

# What CI runs (.ci/run): lint, make check's tests (without the matrix
# sample: test-matrix runs every row), then the long families, each its
# own target: every row of the matrices, the slow unit and functional
# tests, placement on MariaDB and PostgreSQL, the daemons, the fault
# table's quick rows, the short soak, devstack, the browser. Together they
# run every test but the faults_full rows (make test-faults), the
# moves_cli ones (make test-moves-cli) and the daemons_full ones with
# four fifths of the Placement conformance scenarios
# (make test-daemons-full). Families joined by + run at the same time
# (make -jN, N the families of the group, each one's output in one block
# when it ends). A group shares the 2 cores: what runs side by side keeps
# at most about both cores busy together, or is short (CPU time of each
# family in the records of 2026-11-29, test-durations-2 and -3): the
# matrix rows (CPU work, but 75 s) beside the two database families (two
# servers); devstack's shell phases and CLI calls (about one core) beside
# the browser (36 s); test-slow (about 1.4 cores) beside the fault rows
# (about one core, one pytest process; the count one server off that this
# pair once showed was a hand-off race, fixed, test-durations-3; the pair
# passed beside other work at a load of 12-26 since, test-durations-4).
# The daemons (about 2 cores) and the short soak (its acceptance check
# wants the cores it was sized for) run alone.
LONG_FAMILIES := test-matrix+test-db-mysql+test-db-postgresql \
	test-slow+test-faults-quick test-daemons test-soak-short \
	test-devstack+test-browser
test: $(VENV)/.installed-test lint
	@$(MAKE) --no-print-directory check-tests CHECK_SKIP=matrix
	@for group in $(LONG_FAMILIES); do \
		families=$$(echo $$group | tr + ' '); \
		$(MAKE) --no-print-directory -j$$(echo $$families | wc -w) \
			--output-sync=target $$families || exit 1; \
	done; $(done)

# Every row of the tests marked matrix (make check runs a sample).
test-matrix: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "matrix and not slow" $(PYTEST_ARGS) tests/unit tests/functional; $(done)

# The unit and functional tests marked slow: several processes, real
# installs, long waits.
test-slow: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadfile -m slow $(PYTEST_ARGS) tests/unit tests/functional; $(done)

test-db-mysql: $(VENV)/.installed-test
	NIMBUS_TEST_DB=mysql $(BIN)/python -m pytest -n 2 $(PYTEST_ARGS) $(PLACEMENT_DB_SUITE); $(done)

test-db-postgresql: $(VENV)/.installed-test
	NIMBUS_TEST_DB=postgresql $(BIN)/python -m pytest -n 2 $(PYTEST_ARGS) $(PLACEMENT_DB_SUITE); $(done)

# The daemons as separate processes on RabbitMQ, MariaDB and PostgreSQL
# (tests/integration but devstack and the browser), the broker restart on
# a private RabbitMQ node among them. make test runs this quick set: the
# tests marked daemons_full (a path a quicker test or test-devstack also
# walks) are left to make test-daemons-full, and the conformance test
# against OpenStack Placement 16 runs a seeded fifth of its scenarios (a
# fresh seed each run, printed; NIMBUS_TEST_SEED repeats it).
DAEMONS_MARKS := not faults_full and not devstack and not browser and not moves_cli
test-daemons: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadfile --matrix-sample 0.2 -m "$(DAEMONS_MARKS) and not daemons_full" $(PYTEST_ARGS) tests/integration; $(done)

# Every daemon test, every conformance scenario (what test-daemons runs
# plus the tests marked daemons_full).
test-daemons-full: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "$(DAEMONS_MARKS)" $(PYTEST_ARGS) tests/integration; $(done)

# The stock openstack CLI through every move (resize, confirm, revert,
# migrate, live migrate, abort, force complete, rebuild, shelve, unshelve,
# evacuate, migration list/show, event list) on the daemons over RabbitMQ
# and MariaDB: 101 s on a quiet machine, 17 minutes under a load of 20
# (2026-11-29), so not in make test for now.
test-moves-cli: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadfile -m moves_cli $(PYTEST_ARGS) tests/integration; $(done)

# The fault table's quick rows: two of the burst table, one move row (a
# resize, its destination compute killed); make test-faults runs every row.
test-faults-quick: $(VENV)/.installed-test
	$(BIN)/python -m pytest -m "not faults_full" $(PYTEST_ARGS) tests/faults; $(done)

# The 3-minute soak and the soak tooling's tests (make soak: 30 minutes).
test-soak-short: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadfile $(PYTEST_ARGS) tests/soak; $(done)

test-devstack: $(VENV)/.installed-test
	$(BIN)/python -m pytest -m devstack $(PYTEST_ARGS) tests/integration; $(done)

# The dashboard in headless Chromium (skips without it, fails under CI).
test-browser: $(VENV)/.installed-test
	$(BIN)/python -m pytest -m browser $(PYTEST_ARGS) tests/integration; $(done)

# The whole fault table (tests/faults): kill -9 of every daemon kind
# (accelerator API and agent included), a frozen compute, a compute cut off
# from RabbitMQ, a slow compute, build casts sent twice, RabbitMQ and
# MariaDB restarts, and on a private three-node RabbitMQ cluster with
# quorum queues (tests/faults/test_rabbit_cluster.py) kill -9 of the node
# leading the queues; 200 boots each; about 22 minutes. The restarts
# strike the fault clouds' private RabbitMQ nodes and MariaDB server, not
# the machine's.
test-faults: $(VENV)/.installed-test
	$(BIN)/python -m pytest -m faults_full $(PYTEST_ARGS) tests/faults

# 30 minutes of boots and deletes at half the benchmarked rate on daemons
# over RabbitMQ and MariaDB, every daemon's RSS, open fds, threads and
# database connections sampled each minute; fails when one grows (README,
# "Soak"). SOAK_DURATION (s) and SOAK_RATE (boots/s) change it.
SOAK_DURATION ?= 1800
SOAK_RATE ?= 4
soak: $(VENV)/.installed-test
	$(BIN)/python -m harness.soak_run --duration $(SOAK_DURATION) --rate $(SOAK_RATE) --interval 60

# Tempest's compute tests (servers, flavors, admin, limits, versions)
# against the daemons with a real Keystone, RabbitMQ and MariaDB; prints
# the pass/fail/skip counts (README, "Tempest"). Not part of make test:
# it takes tens of minutes. TEMPEST_ARGS, e.g. --regex R --concurrency 1.
TEMPEST_ARGS ?=
tempest: $(VENV)/.installed-test
	$(BIN)/python -m harness.tempest $(TEMPEST_ARGS)

test-unit: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS) tests/unit

test-functional: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadfile $(PYTEST_ARGS) tests/functional

test-integration: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadfile $(PYTEST_ARGS) tests/integration

# Every figure of the README's Benchmarks section, side by side with the
# peers (OpenStack Placement 16.0.0 and Nova 34.0.0 are installed into venvs
# under /tmp the first time). About 25 minutes on 2 cores; RabbitMQ and
# MariaDB on 127.0.0.1 as for make test.
BENCH_OUT := benchmarks/results
bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/rpc_bench.py --rabbit-url rabbit://guest:guest@127.0.0.1:5672/ --json $(BENCH_OUT)/rpc.json
	$(BIN)/python benchmarks/placement_bench.py --providers 5000 --compare-openstack-placement --openstack-venv /tmp/openstack-placement-16-venv --json $(BENCH_OUT)/placement-sqlite-5000.json
	$(BIN)/python benchmarks/placement_bench.py --providers 5000 --db-url mysql+pymysql://root@127.0.0.1/nimbus_bench --compare-openstack-placement --openstack-venv /tmp/openstack-placement-16-venv --json $(BENCH_OUT)/placement-mariadb-5000.json
	$(BIN)/python benchmarks/placement_bench.py --providers 50000 --populate-direct --json $(BENCH_OUT)/placement-sqlite-50000.json
	$(BIN)/python benchmarks/scheduler_bench.py --hosts 1000 5000 10000 --compare-nova --nova-venv /tmp/nova-34-venv --reference --json $(BENCH_OUT)/scheduler-vs-nova.json
	$(BIN)/python benchmarks/scheduler_bench.py --hosts 50000 --json $(BENCH_OUT)/scheduler-50000.json
	$(BIN)/python benchmarks/scheduler_bench.py --skip-decisions --multi-create 1000 --json $(BENCH_OUT)/scheduler-multi-create.json
	$(BIN)/python benchmarks/host_state_bench.py --hosts 1000 10000 --json $(BENCH_OUT)/host-state.json
	$(BIN)/python benchmarks/dashboard_bench.py --hosts 1000 --servers 500 --json $(BENCH_OUT)/dashboard-1000.json

sample-config: $(VENV)/.installed
	$(BIN)/oslo-config-generator --config-file etc/nimbus/nimbus-config-generator.conf
	$(BIN)/oslopolicy-sample-generator --namespace nimbus.api --output-file etc/nimbus/policy-api.yaml.sample
	$(BIN)/oslopolicy-sample-generator --namespace nimbus.placement --output-file etc/nimbus/policy-placement.yaml.sample
	$(BIN)/oslopolicy-sample-generator --namespace nimbus.accelerator --output-file etc/nimbus/policy-accelerator.yaml.sample

# The OpenAPI documents of the REST APIs, checked into docs/openapi/ (a unit
# test fails when they differ from what the code generates).
openapi: $(VENV)/.installed
	$(BIN)/python -m nimbus.cmd.openapi --output-dir docs/openapi

# schemathesis against the live nimbus-api and nimbus-placement-api with
# many more examples than the quick run of make test, on SQLite and on
# MariaDB (README, "Fuzzing").
FUZZ_EXAMPLES ?= 200
fuzz: $(VENV)/.installed-test
	NIMBUS_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -v -s $(PYTEST_ARGS) tests/integration/test_openapi_fuzz.py
	NIMBUS_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) NIMBUS_TEST_DB=mysql $(BIN)/python -m pytest -v -s $(PYTEST_ARGS) tests/integration/test_openapi_fuzz.py

clean:
	rm -rf $(VENV) state .pytest_cache .hypothesis
