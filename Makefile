# The one command surface. CI runs `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROTOS := $(wildcard protos/godot_rag/v1/*.proto)
SAMPLES := samples/godot3_project samples/godot4_project samples/mini_dodge.txt

.PHONY: install proto proto-check browser run up test test-unit test-integration bench eval-retrieval clean

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

run: $(STAMP)
	$(VENV)/bin/godot-rag analyze $(SAMPLES)

up: $(STAMP)
	$(VENV)/bin/godot-rag up

# Debian's chromium for the web UI tests (installed when missing and we are root).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	  echo "chromium not installed and not root: the browser test will be skipped"; }

test: $(STAMP) proto-check browser
	$(PY) -m pytest -q

test-unit: $(STAMP)
	$(PY) -m pytest -q -m unit

test-integration: $(STAMP)
	$(PY) -m pytest -q -m integration

bench: $(STAMP)
	$(PY) benchmarks/bench_parser.py
	$(PY) benchmarks/bench_retrieval.py

# Recall@5 and MRR of vector-only, lexical-only and hybrid retrieval on tests/retrieval_set/.
eval-retrieval: $(STAMP)
	$(PY) benchmarks/eval_retrieval.py

clean:
	rm -rf $(VENV) .pytest_cache
