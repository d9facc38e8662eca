# Headwater developer commands. `make run` and `make test` work on a fresh machine:
# they install what they need (Python packages into .venv, Kafka jars, PostgreSQL).
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HW := $(VENV)/bin/headwater
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
BENCH_STAMP := $(VENV)/.bench-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: install run hybrid research up down test test-unit lint clean bench bench-peers profile seaweedfs-build

install: $(STAMP)

$(STAMP): pyproject.toml
	@echo "Installing Python packages into $(VENV) (a minute or two the first time) ..."
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@# setuptools warns about editable installs at length; keep pip's own errors.
	$(PY) -m pip install -q -e ".[examples,dev,bench]" 2>&1 | { grep -vE \
		'BuildBackendWarning|!!|[*]{8}|Please be careful|name as your package|with strategy|during imports|^ *$$' || true; }
	rm -f $(VENV)/.installed-* && touch $@

## Bring up Kafka, PostgreSQL, coordinator, gateway and a worker; run the example.
run: install
	$(HW) up
	$(HW) submit examples/stdlib_search/workflow.yaml \
		--input @examples/stdlib_search/input.json --follow
	@echo "The stack is still running: '$(HW) status <id>', or 'make down' to stop it."

## The hybrid example: classify the installed packages, research in a bounded agent loop,
## approve by a signal, publish.
hybrid: install
	$(HW) up
	$(PY) -m examples.hybrid --approve

## The research assistant as Python code (examples/research): a @workflow that classifies
## the same installed packages, calls a search workflow, drafts in a bounded loop, waits
## for the approval signal (sent here), holds the answer briefly and publishes it.
research: install
	$(HW) up
	$(PY) -m examples.research --approve

up: install
	$(HW) up

down: install
	$(HW) down

## The whole suite: lint (ruff, mypy) first, then the unit tests with no broker, database
## or network (test-unit), then the end-to-end, fault and fuzz tests on the real broker and
## database. A lint failure fails `make test`. Two pytest processes (pytest-xdist), each
## with its own stack of Headwater processes on the one broker and database, take whole
## test modules in turn: the end-to-end tests mostly wait.
## SeaweedFS, the S3-compatible server of the S3 blob store's test (tests/e2e/test_blobs_s3.py),
## is built from the Go module proxy once (infra/seaweedfs.sh install: a few minutes) in
## the background while lint and the unit tests run; the end-to-end phase waits for it. No
## Go or a failed build fails that test on CI (skips it elsewhere), not `make test` here.
test: install seaweedfs-build lint test-unit
	bash infra/stack.sh up
	bash infra/browser.sh
	bash infra/seaweedfs.sh install || { tail -n 20 .headwater/seaweedfs-build.log; \
		echo "SeaweedFS is not built: tests/e2e/test_blobs_s3.py fails on CI, skips elsewhere"; }
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=25 tests --ignore=tests/unit

seaweedfs-build:
	@mkdir -p .headwater
	@# Its own session, so that it outlives this recipe's shell; infra/seaweedfs.sh takes a
	@# lock while it builds, and the `install` in `test` waits on it.
	setsid nohup bash infra/seaweedfs.sh install >.headwater/seaweedfs-build.log 2>&1 </dev/null &

## Benchmarks against raw Kafka on the local stack (under 10 minutes):
## load/results/<UTC timestamp>.json, .md and .png. `$(PY) -m load.bench --help` for options.
bench: install $(BENCH_STAMP)
	bash infra/stack.sh up
	$(PY) -m load.bench

## The same workloads on Celery + Redis and DBOS + PostgreSQL beside Headwater and raw Kafka
## (not part of `make test` or CI): load/results/peers-<UTC timestamp>.json and .md. Each
## peer in its own venv under .headwater/peers; `$(PY) -m load.peers --help` for options.
bench-peers: install $(BENCH_STAMP)
	bash infra/stack.sh up
	$(PY) -m load.peers

## B2 and B3 with py-spy sampling the coordinators, workers and gateway in each measured
## window (not in CI): load/results/profile-<UTC timestamp>/report.md, the collapsed stacks
## and flamegraphs. `$(PY) -m load.profile --help` for options (--quick: small sizes).
profile: install $(BENCH_STAMP)
	bash infra/stack.sh up
	$(PY) -m load.profile

$(BENCH_STAMP): pyproject.toml
	$(PY) -m pip install -q -e ".[bench]" 2>&1 | { grep -vE \
		'BuildBackendWarning|!!|[*]{8}|Please be careful|name as your package|with strategy|during imports|^ *$$' || true; }
	rm -f $(VENV)/.bench-* && touch $@

## The unit tests (two processes), proven to need no broker, database or network: Kafka and
## PostgreSQL pointed at a closed port, in a network namespace with only loopback where
## one can be made (infra/no-network.sh). A unit test that reaches for a service fails.
## The deployment tests' tools are fetched first, with the network (infra/k8s-tools.sh;
## without them those tests say what is missing), and Node.js with the browser
## (infra/browser.sh), which runs the web UI's pure modules.
NO_SERVICES := HEADWATER_KAFKA_BOOTSTRAP=127.0.0.1:9 HEADWATER_KAFKA_PORT=9 \
	HEADWATER_PG_DSN=postgresql://postgres@127.0.0.1:9/none HEADWATER_PG_PORT=9

test-unit: install
	bash infra/k8s-tools.sh >/dev/null || true
	bash infra/browser.sh || true
	$(NO_SERVICES) bash infra/no-network.sh $(PY) -m pytest -q -p no:cacheprovider -n 2 tests/unit

## ruff (style, complexity and size rules: see [tool.ruff.lint] in pyproject.toml) and
## mypy --strict; .pre-commit-config.yaml runs the same two.
lint: install
	$(VENV)/bin/ruff check headwater services ops tests load faultsuite fuzzer examples
	$(VENV)/bin/mypy --strict headwater services ops examples

## Stop everything and delete the local data (Kafka logs, the PostgreSQL cluster, a local
## SeaweedFS's and its build) and .venv.
clean: down
	bash infra/seaweedfs.sh down
	bash infra/stack.sh reset
	rm -rf $(VENV) .headwater

## Fuzzing, the long version (the short one is part of `make test`): over 10,000 bad HTTP
## requests and Kafka records on a private sandbox, a few minutes. Writes
## fuzzer/results/fuzz-<UTC timestamp>.json. `$(PY) -m fuzzer --help` for options.
.PHONY: fuzz
fuzz: install
	bash infra/stack.sh up
	$(PY) -m fuzzer

## Fault injection, the long version (the quick one is part of `make test`): every fault
## point several times (the worker running a @workflow's function killed at five of them),
## bigger batches, the coordinator SIGKILLed with 5,000 finished and
## 200 waiting workflows in its table and its local store lost (coordinator.large_table),
## the 100-workflow rebalance, and the infrastructure
## faults (the broker SIGKILLed and SIGSTOPped, PostgreSQL stopped for 60 s, on a private
## broker and database); about 45 minutes on a busy 2-core machine. Writes
## faultsuite/results/faults-<UTC timestamp>.json. `$(PY) -m faultsuite --help` for options.
.PHONY: faults
faults: install
	bash infra/stack.sh up
	$(PY) -m faultsuite
