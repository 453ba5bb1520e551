# The two commands a newcomer needs: `make run` (local stack) and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: run test install install-local bench lint clean

$(BIN)/strata: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

install: $(BIN)/strata

# The `local` embedder (sentence-transformers on CPU, torch pinned to the CPU build this
# project's machines carry): CI installs it so its tests run instead of skipping.
install-local: $(BIN)/strata
	$(BIN)/python -m pip install --quiet -e '.[dev,local]'

run: $(BIN)/strata
	$(BIN)/strata dev

test: $(BIN)/strata
	$(BIN)/python -m pytest

bench: $(BIN)/strata
	$(BIN)/python eval/bench_store.py

lint: $(BIN)/strata
	$(BIN)/cfn-lint template.yaml

clean:
	rm -rf $(VENV) .strata .pytest_cache
