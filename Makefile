# Nimbus: two commands for a fresh machine with Python 3.11 and make.
#   make demo   the whole cloud in one process, boots 20 servers
#   make test   unit, functional and integration tests
# Python 3.11 or newer (setup.cfg's python_requires): python3.11 when it
# is on the PATH, else python3.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || echo python3)
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo format lint soak tempest test test-faults test-unit test-functional test-integration bench clean sample-config openapi fuzz

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
# private_mariadb.py), so they run in the parallel run. The main parallel
# run comes last: its summary is the last line.
PLACEMENT_DB_SUITE := tests/functional/placement tests/unit/placement/test_objects.py \
	tests/unit/placement/test_allocation_retry.py tests/unit/placement/test_migrations.py

# pyflakes and the one code style through ruff (ruff.toml; `make format`
# applies the style), the layers (.importlinter): which
# package may import which, and no cycles; shellcheck on every shell script.
SHELL_SCRIPTS := devstack/plugin.sh devstack/settings devstack/lib/nimbus \
	tests/devstack/harness.sh .ci/run

lint: $(VENV)/.installed-test
	$(BIN)/ruff check nimbus tests benchmarks
	$(BIN)/ruff format --check --quiet nimbus tests benchmarks
	$(BIN)/lint-imports --no-cache
	$(BIN)/shellcheck -x -s bash $(SHELL_SCRIPTS)

format: $(VENV)/.installed-test
	$(BIN)/ruff format nimbus tests benchmarks

test: $(VENV)/.installed-test lint
	NIMBUS_TEST_DB=mysql $(BIN)/python -m pytest -n 2 $(PYTEST_ARGS) $(PLACEMENT_DB_SUITE)
	NIMBUS_TEST_DB=postgresql $(BIN)/python -m pytest -n 2 $(PYTEST_ARGS) $(PLACEMENT_DB_SUITE)
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not faults_full" $(PYTEST_ARGS) tests

# The whole fault table (tests/faults): kill -9 of every daemon kind
# (accelerator API and agent included), a frozen compute, a compute cut off
# from RabbitMQ, a slow compute, build casts sent twice, RabbitMQ and
# MariaDB restarts, 200 boots each; about 20 minutes. The restarts strike
# the fault cloud's private RabbitMQ node and MariaDB server, not the
# machine's.
test-faults: $(VENV)/.installed-test
	$(BIN)/python -m pytest -m faults_full $(PYTEST_ARGS) tests/faults

# 30 minutes of boots and deletes at half the benchmarked rate on daemons
# over RabbitMQ and MariaDB, every daemon's RSS, open fds, threads and
# database connections sampled each minute; fails when one grows (README,
# "Soak"). SOAK_DURATION (s) and SOAK_RATE (boots/s) change it.
SOAK_DURATION ?= 1800
SOAK_RATE ?= 4
soak: $(VENV)/.installed-test
	$(BIN)/python -m nimbus.testing.soak_run --duration $(SOAK_DURATION) --rate $(SOAK_RATE) --interval 60

# Tempest's compute tests (servers, flavors, admin, limits, versions)
# against the daemons with a real Keystone, RabbitMQ and MariaDB; prints
# the pass/fail/skip counts (README, "Tempest"). Not part of make test:
# it takes tens of minutes. TEMPEST_ARGS, e.g. --regex R --concurrency 1.
TEMPEST_ARGS ?=
tempest: $(VENV)/.installed-test
	$(BIN)/python -m nimbus.testing.tempest $(TEMPEST_ARGS)

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
