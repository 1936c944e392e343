# Paperlab: `make run`, `make test`, `make reproduce [METHOD=id]`, `make models [MODELS=target ...]`,
# `make docker-check [MODE=space|compose|all]`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
# Packages whose declared dependencies are wrong for us (CLI plugins, old pins): installed --no-deps.
NODEPS := requirements-nodeps.txt

.PHONY: install run test test-fast bench reproduce models lint clean fuzz docker-check faults load load-redis cancel flower

$(PY):
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel

$(STAMP): $(PY) pyproject.toml setup.py engines/zapformat/_zfcore.cpp constraints.txt $(NODEPS)
	$(PIP) install -c constraints.txt -e ".[dev]"
	$(PIP) install -c constraints.txt --no-deps -r $(NODEPS)
	$(PY) -c "import torch, torchvision; assert torch.__version__.startswith('2.14.1'), torch.__version__"
	touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) -m app

# The whole suite: engines, workers, app API, end-to-end (real Redis, worker subprocess, Chromium).
# Two pytest-xdist workers: the browser tests (one group, one served app) mostly wait on the app and Chromium
# while the other worker runs the CPU-bound tests. PYTEST_XDIST=0 runs it in one process.
PYTEST_XDIST ?= 2
XDIST := $(if $(filter 0,$(PYTEST_XDIST)),-p no:xdist,-n $(PYTEST_XDIST) --dist loadgroup)
test: install
	PAPERLAB_PROFILE=test $(PY) -m pytest -q $(XDIST) $(PYTEST_ARGS)

test-fast: install
	PAPERLAB_PROFILE=test $(PY) -m pytest -q -m "not e2e" $(PYTEST_ARGS)

# Reliability (docs/reliability.md): property-based fuzzing of every parameter model and endpoint
# (200 examples each; the endpoint test calls all of them in one test: ~20 min on 2 busy cores); see docs/reliability.md.
fuzz: install
	PAPERLAB_PROFILE=test PAPERLAB_FUZZ_EXAMPLES=200 PAPERLAB_FUZZ_REPORT=docs/reliability-fuzz.tsv \
		$(PY) -m pytest -q --timeout=3600 tests/reliability/test_params_fuzz.py tests/reliability/test_endpoints_fuzz.py $(PYTEST_ARGS)

# Slower fault injection (docs/reliability.md): SIGTERM with a job running, Redis restarted mid-job,
# a corrupt cached model; deselected from `make test`.
faults: install
	PAPERLAB_PROFILE=test PAPERLAB_FAULT_TESTS=1 $(PY) -m pytest -q -m fault tests/reliability $(PYTEST_ARGS)

# The specs' optional Flower engine-parity checks (flwr simulation on Ray; a Ray start-up each, so not in make test).
flower: install
	PAPERLAB_PROFILE=test PAPERLAB_FLOWER_TESTS=1 $(PY) -m pytest -q -m flower_extra tests/engines $(PYTEST_ARGS)

# Every registry entry started, cancelled once inside its loop and timed (bound 10 s; docs/reliability.md);
# `make test` runs the entries that start quickly. Writes docs/reliability-cancel.tsv.
cancel: install
	PAPERLAB_PROFILE=test PAPERLAB_CANCEL_TESTS=1 PAPERLAB_CANCEL_REPORT=docs/reliability-cancel.tsv \
		$(PY) -m pytest -q -rxX tests/reliability/test_cancel_entries.py $(PYTEST_ARGS)

# Load: concurrent gradio_client sessions against the app (started with its embedded worker unless URL=…);
# writes docs/reliability-load.tsv and .png. LOAD_ARGS="--clients 20 --seconds 120" (the defaults).
load: install
	$(PY) benchmarks/load.py $(if $(URL),--url $(URL)) $(LOAD_ARGS)

# The same against Redis with 2 separate Celery workers (benchmarks/load_redis.sh starts and stops them).
load-redis: install
	PY=$(PY) benchmarks/load_redis.sh --out docs/reliability-load-redis $(LOAD_ARGS)

# Time budgets, measured and reported against their budgets; `make test` asserts none. Run on an idle machine.
# startup.py: UI start-up; timed_tests.py: cancellation, lost-job and fail-fast times, recorded by the tests
# that check the behaviour (tests.helpers.record_measure). Exit code 1 when a budget is missed.
bench: install
	$(PY) benchmarks/startup.py; s=$$?; $(PY) benchmarks/timed_tests.py && exit $$s

# ZapFormat on external corpora (MaskBench sample + JSON Schema Test Suite); BENCH_ARGS="--full" for every schema.
bench-zapformat: install
	flock "$$HOME/.paperlab-heavy.lock" $(PY) -m engines.zapformat.bench --maskbench $(or $(MASKBENCH),../shared/corpora/maskbench-sample) --suite $(or $(SUITE),../shared/corpora/json-schema-test-suite) $(BENCH_ARGS)

reproduce: install
	$(PY) -m engines.reproduce $(METHOD)

# Retrain every released model from scratch (fresh data dir, release ignored), check the held-out metrics
# against the shipped manifests within their tolerances, and write the new weights into release/.
# MODELS=zoo/clip (or zoo/vae, zoo/t2i, zoo/judge_object, zoo/judge_style, object_audio, pde_staggered, saeuron) for a subset.
models: install
	$(PY) -m engines.release_models build $(MODELS)

# Build the Docker Space image and run it for real (docs/deployment.md); not part of `make test`.
# MODE=space (the Space image alone), compose (Redis + web + 2 workers, one killed mid-job) or all (default).
# Needs a Docker daemon; needs only Python with gradio_client (the project's .venv when it exists).
MODE ?= all
docker-check:
	$(if $(wildcard $(PY)),$(PY),$(PYTHON)) docker/check.py $(MODE)

clean:
	rm -rf $(VENV) .pytest_cache
