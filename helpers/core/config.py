"""The one place for defaults, model ids, prices and paths.

Nothing here reads the environment at import time: `llm_settings()` reads it (and `.env`) when called,
so a notebook can set variables after importing helpers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

# --- where things live --------------------------------------------------------------------------
REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO_ROOT / "act_results"
RULESETS_DIR = REPO_ROOT / "act_rulesets"
CACHE_DIR = REPO_ROOT / ".cache"
STATE_DIR = REPO_ROOT / ".state"
PHOENIX_DIR = REPO_ROOT / ".phoenix"


def results_root() -> Path:
    """act_results/, or $PL_RESULTS_DIR (tests and CI runs keep their outputs out of the checkout)."""
    return Path(os.environ.get("PL_RESULTS_DIR") or RESULTS_DIR)


def rulesets_root() -> Path:
    """act_rulesets/, or $PL_RULESETS_DIR."""
    return Path(os.environ.get("PL_RULESETS_DIR") or RULESETS_DIR)


def cache_root() -> Path:
    """.cache/ (LLM responses, built house-suite repos), or $PL_CACHE_DIR."""
    return Path(os.environ.get("PL_CACHE_DIR") or CACHE_DIR)


def state_root() -> Path:
    """.state/, this checkout's own (never shared: a worktree links .cache/ parts, never .state/), or $PL_STATE_DIR."""
    return Path(os.environ.get("PL_STATE_DIR") or STATE_DIR)


# --- the agent and model ids: change them here, not in notebooks -----------------------------------
# Each default is an id its provider serves and lists as current on 2026-11-25, priced in genai-prices 0.2.3 (a
# test fails when the table drops one, or on the day a shutdown below passes); a session stops before any work
# on an id its server does not list. An agent class's `default_model` wins over AGENT_MODEL (Cline, Claude Code).
AGENT = "cline"  # the coding agent notebooks run by default (a name registered in helpers.core.registry)
# gpt-6.1-sol: OpenAI's replacement for gpt-5 (which it shuts down on 2026-12-11) on its deprecations page,
# developers.openai.com/api/docs/deprecations, read 2026-11-25; released 2026-09-29; $2 / $10 per 1M tokens.
AGENT_MODEL = "gpt-6.1-sol"  # an agent without a default of its own (Codex, on the Responses API)
JUDGE_MODEL = "gpt-6.1-sol"  # explains why each patch passed or failed (was gpt-4.1)
OPTIMIZER_MODEL = "gpt-6.1-sol"  # rewrites the rules (was gpt-5, the cookbook's choice)
SCRIPTED_MODEL = "scripted-dry-run"  # the model id the scripted server answers as
# Shutdown dates providers announced for ids the defaults use or used (a test fails on the day one passes):
ANNOUNCED_SHUTDOWNS = {
    "gpt-4.1": "2027-01-14",  # OpenAI's notice of 2026-10-14 (developers.openai.com/api/docs/deprecations)
    "gpt-5": "2026-12-11",  # OpenAI's notice of 2026-06-11 (the same page)
    "claude-sonnet-4-5": "2026-11-30",  # Anthropic (platform.claude.com/docs/en/models/sonnet-4-5/overview)
}

# --- the cookbook's loop parameters --------------------------------------------------------------
LOOPS = 5
TRAIN_SIZE = 150  # the train pool: the optimizer learns from it, less the validation side
VAL_SIZE = 50  # taken from the train pool: decides which version is kept; the optimizer never sees it
VAL_FRACTION = 1 / 3  # the validation side's share of the pool when its size is not given (rounded down, at least 1)
TEST_SIZE = 150  # the one pre-declared test of the kept version against the start
WORKERS = 8
CONTEXT_SIZE_K = 400_000  # token budget of one optimizer call
SWEBENCH_DATASET = "SWE-bench/SWE-bench_Lite"
SWEBENCH_SPLIT = "test"
SEED = 0
DEFAULT_EXPERIMENT = "default"  # the results folder of calls that name no experiment

# --- how notebooks show tables (helpers.app.session.readable_tables) ------------------------------------
TABLE_TEXT_CHARS = 60  # a table cell's text is cut here, with an ellipsis: a notebook table stays one screen wide

# --- run limits ----------------------------------------------------------------------------------
AGENT_TIMEOUT_S = 900.0  # per task; enforced by each agent package (some CLIs ignore their own)
AGENT_TRAJECTORY_CHARS = 24_000  # an agent's trajectory kept with its result (its own event stream)
AGENT_TRAJECTORY_STEP_CHARS = 2_000  # one step's text within it
# One agent answer's output cap, where the CLI takes one (Claude Code: CLAUDE_CODE_MAX_OUTPUT_TOKENS; mini-swe-agent:
# its model_kwargs' max_tokens; opencode: its model's limit.output; Cline and Codex 0.169 have no setting for it):
# a small model can otherwise generate until its context is full. Lowered to $PL_MAX_OUTPUT_TOKENS when set
# (agent_max_output_tokens), as the gateway lowers every role's cap.
AGENT_MAX_OUTPUT_TOKENS = 16_384
# A task whose run the host saw fail transiently (the provider's 5xx or 429, a lost worker) runs again, at most this
# often in total per (task, ruleset, agent, model) of a run id: across calls and resumes (the records count them).
AGENT_TRANSIENT_RETRIES = 2
EVAL_TIMEOUT_S = 120.0  # per task, local evaluator
# Caps of one sandboxed run (an agent's, a grading's), sized for a coding task; helpers.isolation.sandbox says what
# enforces each one where, and a run that reaches one ends as a rule-induced error naming it.
SANDBOX_PROCESSES = 512  # processes and threads at once
SANDBOX_MEMORY_BYTES = 4 * 2**30  # memory, /tmp (a tmpfs) included
SANDBOX_DISK_BYTES = 2 * 2**30  # what a run writes to its workspace and home, together (a tmpfs: memory, as root)
SANDBOX_DISK_FILES = 1_000_000  # files (and folders) a run writes or changes there, together
# What one run's connections to the gateway may cost the driver (helpers.isolation.relay): at most this many carried at
# once (one more is closed at once), each direction buffering at most RELAY_BUFFER_BYTES.
RELAY_MAX_CONNECTIONS = 32
RELAY_BUFFER_BYTES = 64 * 2**10
SANDBOX_FILE_BYTES = 1 * 2**30  # the largest one file written
# How far the host walks a tree an agent or the code under test could have written (helpers.isolation.trees): deeper or
# larger is refused by name (a watcher's walk then ends its run); removal has no limit.
TREE_MAX_DEPTH = 16_384
TREE_MAX_ENTRIES = 2_000_000
# What the host reads back from a workspace or a run's home is hostile data (helpers.isolation.untrusted): each read is
# capped. A patch larger than MAX_PATCH_BYTES is refused as the agent's doing (a rule-induced error naming its size),
# never recorded: a real fix is kilobytes, and a 520 MB patch once made a 526 MB record and a 2.7 GB driver.
MAX_PATCH_BYTES = 5 * 2**20
MAX_READBACK_BYTES = 64 * 2**20  # any other file an agent package reads back (a trajectory file)
# A mined repository's set-up command (pip install ...) gets the host's network only when this is True; its
# tests and every agent never do (the sandbox's own network namespace: docs/security.md).
SETUP_NETWORK = False
LLM_MAX_RETRIES = 5
LLM_MAX_CONCURRENCY = 8
LLM_REQUEST_TIMEOUT_S = 600.0
# Output caps of one answer (reasoning models spend part of it thinking): a small model can otherwise run on
# until its context is full. An answer cut there is reported as "cut at the length limit".
JUDGE_MAX_TOKENS = 4_000
OPTIMIZER_MAX_TOKENS = 32_000
# The longest wait a server's Retry-After may ask of us before a request gives up (providers ask for
# minutes when a quota window is spent); longer asks fail at once as a transient error.
LLM_MAX_RETRY_AFTER_S = 600.0

# --- the model gateway (helpers.llm.gateway): every model call goes through it ------------------------
GATEWAY_CONCURRENCY = 16  # requests in flight per upstream, all clients together
GATEWAY_BACKOFF_S = 1.0  # first wait of the exponential backoff when the upstream names none
GATEWAY_MAX_BACKOFF_S = 60.0
GATEWAY_CONNECT_TIMEOUT_S = 30.0
# A model server that sends nothing this long (before its answer or between two chunks) has stalled: the
# call ends with a 504 (or an error event mid-stream). Long, as a local model may think a while first.
GATEWAY_IDLE_TIMEOUT_S = 600.0
GATEWAY_CALL_TIMEOUT_S = 1800.0  # wall-clock limit of one upstream call, however steadily it streams
GATEWAY_TRACE_CHARS = 20_000  # request and response text kept per call for traces
GATEWAY_TRACE_MESSAGE_CHARS = 4_000  # text kept per input message for traces
# What one client can make the gateway (the driver, outside every sandbox) spend (docs/security.md): a request body
# larger than this is refused with 413 before it is read (Content-Length) or as soon as it grows past it (a
# chunked body); a long agent conversation is about 1 MB of JSON, an image a few MB more.
GATEWAY_MAX_REQUEST_BYTES = 16 * 2**20
GATEWAY_MAX_HELD_BYTES = 64 * 2**20  # request bytes all calls under way hold at once: more get 503 (ask again)
GATEWAY_BODY_TIMEOUT_S = 60.0  # a request body must arrive whole within this (a slow drip is cut with 408)
GATEWAY_MAX_CONNECTIONS = 256  # open client connections, all clients together: more are answered 503 and closed
GATEWAY_TOKEN_CONCURRENCY = 8  # one token's requests under way at once: more get 429 (an agent makes one at a time)
GATEWAY_IDLE_CONNECTION_S = 30.0  # a client connection with no request under way is closed after this
# The output a call may ask for, by its token's role: a request that asks for more, or names no cap, is given
# this cap, so each call's worst-case cost (reserved from the budget before it is forwarded) is bounded.
GATEWAY_OUTPUT_TOKENS = {"agent": AGENT_MAX_OUTPUT_TOKENS, "judge": JUDGE_MAX_TOKENS, "optimizer": OPTIMIZER_MAX_TOKENS}
GATEWAY_DEFAULT_OUTPUT_TOKENS = OPTIMIZER_MAX_TOKENS  # a token of any other role
# A model server's own limit on one answer, for every role: $PL_MAX_OUTPUT_TOKENS (environment or .env) lowers each
# cap above to it. For a slow model that may not stop on its own: SmolLM2-135M writes ~5 tokens/s on 2 busy cores,
# so one judge's answer run to its 4,000-token cap took 813 s. A server's own default (llama-server's -n) cannot do
# it: a request's max_tokens overrides it, and the gateway names one on every request.
MAX_OUTPUT_TOKENS_VARIABLE = "PL_MAX_OUTPUT_TOKENS"


def max_output_tokens() -> int | None:
    """$PL_MAX_OUTPUT_TOKENS as a whole number, None when unset; ValueError naming it for any other value."""
    value = read_env(MAX_OUTPUT_TOKENS_VARIABLE)
    text = (value or "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ValueError(
            f"{MAX_OUTPUT_TOKENS_VARIABLE}={value!r}: it must be a whole number of tokens of at least 1 "
            "(the most one model answer may take, for every role), or unset."
        )
    return int(text)


def agent_max_output_tokens() -> int:
    """The output cap an agent CLI that takes one is given (Claude Code's CLAUDE_CODE_MAX_OUTPUT_TOKENS):
    AGENT_MAX_OUTPUT_TOKENS, lowered to $PL_MAX_OUTPUT_TOKENS when that is set, so the agent asks for no more than
    the gateway would let through."""
    server_cap = max_output_tokens()
    return min(AGENT_MAX_OUTPUT_TOKENS, server_cap) if server_cap else AGENT_MAX_OUTPUT_TOKENS


# The input tokens reserved for one image or document part (its JSON bytes bound a text's tokens, not a picture's):
# above what Anthropic, OpenAI and Google count for one image at their largest sizes.
GATEWAY_MEDIA_PART_TOKENS = 10_000

# --- continual mode (helpers.continual.inbox) ----------------------------------------------------------
CONTINUAL_EXPIRY_DAYS = 90  # a rule unconfirmed this long is proposed for deletion
CONTINUAL_HARMFUL_AFTER = 2  # implicated this often (and more often than confirmed): proposed for deletion
CONTINUAL_BRANCH = "prompt-learning/rules"  # the branch apply() commits the learned rules to
CONTINUAL_MAX_FILE_BYTES = 10 * 2**20  # one feedback file larger than this is refused (Inbox(max_file_bytes=...))
CONTINUAL_MAX_SIGNAL_CHARS = 4_000  # one feedback record's text (and its code excerpt) is cut here, marked

# --- statistics: every comparison of rulesets the product prints (helpers.stats.comparisons) ---------------------
STATS_ALPHA = 0.05  # significance level of a paired comparison and of the acceptance gate
STATS_CONFIDENCE = 0.95  # level of every interval
STATS_N_BOOT = 10_000  # bootstrap resamples (several attempts per task), and random sign flips
# The one test run sequentially (helpers.stats.sequential; docs/evidence.md): a look after each batch of test tasks.
SEQUENTIAL = True  # the default wherever the test split has more tasks than a batch; False: the fixed test
SEQUENTIAL_FUTILITY_POWER = 0.05  # stop for futility when the chance of significance at the current trend is below
SEQUENTIAL_FUTILITY_FROM = 0.5  # ... but never before this share of the test tasks has run
STATS_NOISE_FLIP_RATE = 0.2  # share of tasks assumed to flip by chance between two runs (power figures only)

# --- ruleset limits: what the optimizer may store (edits beyond these are refused and reported) ---
RULES_MAX_COUNT = 60  # rules in one ruleset
RULE_MAX_CHARS = 1_000  # characters in one rule
RULES_MAX_TOKENS: int | None = None  # tokens the rules may take in all, as the agent reads them; None: no budget

# Prices come from genai-prices' maintained table (helpers/llm/pricing.py); these override it (USD per 1M
# tokens: input, output, and optionally cached input; without it cached input counts at the input price), for
# models it lacks or a contract price. Add yours here or pass `prices=`.
# The scripted model has no price on purpose: its calls are "scripted: no charge", never "$0.00".
PRICE_OVERRIDES: dict[str, tuple[float, ...]] = {}

OPENAI_URL = "https://api.openai.com/v1"  # OpenAI's API
ANTHROPIC_OPENAI_COMPAT_URL = "https://api.anthropic.com/v1/"
GEMINI_URL = "https://generativelanguage.googleapis.com"  # Google's Gemini API
GEMINI_OPENAI_PATH = "/v1beta/openai/"  # its OpenAI-compatible endpoint, on the same server (Google's docs)
GEMINI_KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")  # the first one set is the key
GEMINI_BASE_URL_VARIABLE = "GOOGLE_GEMINI_BASE_URL"  # another server speaking Gemini's API (the Gemini CLI's name)


class MissingCredentials(RuntimeError):
    """No API key was found and no dry run was asked for."""


@dataclass(frozen=True)
class LLMSettings:
    """Where one LLM role (agent, judge, optimizer) sends its requests. The key is never printed."""

    model: str
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    provider: str = "openai"  # "openai" | "anthropic" | "gemini" | "openai-compatible"
    dry_run: bool = False  # True when this points at the scripted model server

    def require_key(self) -> str:
        if self.api_key:
            return self.api_key
        raise MissingCredentials(
            f"No API key for model {self.model!r}. Set OPENAI_API_KEY (and OPENAI_BASE_URL for an "
            "OpenAI-compatible server such as vLLM, Ollama or OpenRouter), ANTHROPIC_API_KEY for "
            "Claude models or GEMINI_API_KEY for Gemini models, in the environment or in a .env file at the "
            "repository root; or run the "
            "scripted dry run (DRY_RUN=True), which needs no key."
        )


def _owner_only(path: Path) -> None:
    """Keys live in `.env`: make it readable by its owner only (0600), as ssh does with its keys."""
    try:
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
    except OSError:  # not ours to change: reading it still works
        pass


def read_env(name: str) -> str | None:
    """A variable from the environment, else from `.env` (cwd, then repo root); never cached."""
    value = os.environ.get(name)
    if value:
        return value
    try:
        from dotenv import dotenv_values
    except ImportError:  # pragma: no cover - python-dotenv is a dependency
        return None
    for env_file in (Path.cwd() / ".env", REPO_ROOT / ".env"):
        if env_file.is_file():
            _owner_only(env_file)
            value = dotenv_values(env_file).get(name)
            if value:
                return value
    return None


def llm_settings(model: str, api_key: str | None = None, base_url: str | None = None) -> LLMSettings:
    """Resolve one role's settings: explicit arguments win, then OPENAI_*/ANTHROPIC_*/GEMINI_* variables.

    One OPENAI_BASE_URL sends every role (agent, judge, optimizer) to the same server.
    Claude models without an OpenAI base URL use Anthropic's key, Gemini models Google's (GEMINI_API_KEY or
    GOOGLE_API_KEY); the OpenAI SDK reaches either through its provider's OpenAI-compatible endpoint.
    """
    base_url = base_url or read_env("OPENAI_BASE_URL")
    if base_url:
        return LLMSettings(model, api_key or read_env("OPENAI_API_KEY"), base_url.rstrip("/"), "openai-compatible")
    if model.startswith("claude"):
        return LLMSettings(model, api_key or read_env("ANTHROPIC_API_KEY"), None, "anthropic")
    if model.startswith("gemini"):
        return LLMSettings(model, api_key or gemini_key(), None, "gemini")
    return LLMSettings(model, api_key or read_env("OPENAI_API_KEY"), None, "openai")


def gateway_host() -> str:
    """The address the session's model gateway listens on: loopback, or PL_GATEWAY_HOST (the driver's address
    on a private network, for a Ray cluster with remote nodes; docs/cluster.md)."""
    return read_env("PL_GATEWAY_HOST") or "127.0.0.1"


def anthropic_base_url() -> str | None:
    """ANTHROPIC_BASE_URL (an Anthropic-compatible server: Claude Code's agent calls go there), or None."""
    url = read_env("ANTHROPIC_BASE_URL")
    return url.rstrip("/") if url else None


def anthropic_openai_url() -> str:
    """Where an OpenAI client (the judge, the optimizer) reaches Claude models: Anthropic's OpenAI-compatible
    endpoint, or the same path (/v1/) on the ANTHROPIC_BASE_URL server."""
    url = anthropic_base_url()
    return f"{url}/v1/" if url else ANTHROPIC_OPENAI_COMPAT_URL


def gemini_key() -> str | None:
    """Google's key for Gemini models: GEMINI_API_KEY, else GOOGLE_API_KEY, or None."""
    return next((key for key in map(read_env, GEMINI_KEY_VARIABLES) if key), None)


def gemini_base_url() -> str | None:
    """GOOGLE_GEMINI_BASE_URL (a server speaking Gemini's API: the Gemini CLI's calls go there), or None."""
    url = read_env(GEMINI_BASE_URL_VARIABLE)
    return url.rstrip("/") if url else None


def gemini_openai_url() -> str:
    """Where an OpenAI client (the judge, the optimizer) reaches Gemini models: Google's OpenAI-compatible
    endpoint, or the same path on the GOOGLE_GEMINI_BASE_URL server."""
    return (gemini_base_url() or GEMINI_URL) + GEMINI_OPENAI_PATH


def has_credentials() -> bool:
    """True when a real provider key is configured (used to choose the dry run by default)."""
    return bool(read_env("OPENAI_API_KEY") or read_env("ANTHROPIC_API_KEY") or gemini_key())


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "llm_settings",
    "LLMSettings",
    "MissingCredentials",
    "read_env",
    "has_credentials",
    "results_root",
    "rulesets_root",
    "cache_root",
    "anthropic_base_url",
    "anthropic_openai_url",
    "gateway_host",
    "gemini_key",
    "gemini_base_url",
    "gemini_openai_url",
    "max_output_tokens",
    "agent_max_output_tokens",
]
