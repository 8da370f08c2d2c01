# tierkit: `make demo` builds everything and runs the policy comparison; `make test` runs every check.
# Python dependencies come from PyPI only; the Rust extension is built by maturin (release profile).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: all demo test install clean

all: test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

install: $(BIN)/python
	$(BIN)/python -m pip install -e '.[dev]'

demo: install
	$(BIN)/tierkit demo

test: install
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo test --workspace
	$(BIN)/ruff check python tests
	$(BIN)/python -m pytest -q tests

clean:
	rm -rf $(VENV) demo-out .pytest_cache .ruff_cache
