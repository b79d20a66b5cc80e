"""What one notebook run talks to: the three LLM roles and Phoenix, real or scripted.

    session = open_session(dry_run=None)   # None: a dry run exactly when no key is configured
    ...  session.agent_kwargs(), session.judge_kwargs(), session.optimizer_kwargs(), session.phoenix_url
    ...  session.gateway                      # the model gateway every role goes through
    session.close()

Every model call goes through one loopback gateway (helpers.llm.gateway) started here: the judge and the
optimizer get its URL and a token, agents get a token per task from the engine (run_tasks(gateway=)),
and the provider keys stay on the gateway's far side. It meters every call, enforces `budget_usd` across
all roles, and traces every call into Phoenix (a project per experiment) when Phoenix is on.

Before any work, every configured model is checked against its server's model list (require_served_models):
a retired or misspelled id stops the session with one message naming it, its role, the server and what to set.

In a dry run every role points at the scripted model server (helpers.stand_ins.dry_run) and every number the
run shows is labeled SCRIPTED DRY RUN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from helpers.core import config

DRY_RUN_LABEL = "SCRIPTED DRY RUN — scripted model, not real results"
DRY_RUN_KEY = "scripted-dry-run-no-key"  # the scripted server ignores keys; agent CLIs want one
MODEL_SETTINGS = {"agent": "AGENT_MODEL", "judge": "JUDGE_MODEL", "optimizer": "OPTIMIZER_MODEL"}  # what a user sets


@dataclass
class Session:
    dry_run: bool
    agent_model: str
    judge_model: str
    optimizer_model: str
    base_url: str | None = None  # None: each role resolves OPENAI_BASE_URL / provider defaults
    api_key: str | None = field(default=None, repr=False)
    phoenix_url: str | None = None
    phoenix_api_key: str | None = field(default=None, repr=False)
    phoenix_owned: bool = False  # this session started the local Phoenix (and stops it on close)
    scripted_server: Any = field(default=None, repr=False)
    gateway: Any = field(default=None, repr=False)
    agent: str = config.AGENT  # the agent's name (helpers.core.registry): its own provider is the agent role's
    model_check: list[str] | None = None  # what the model check had to say (require_served_models); None: not done
    _closers: list[Callable[[], None]] = field(default_factory=list, repr=False)

    @property
    def label(self) -> str:
        """Put this in every title and summary: empty for real runs."""
        return DRY_RUN_LABEL if self.dry_run else ""

    def _llm(self, model: str, role: str) -> dict[str, Any]:
        if self.gateway is not None and role != "agent":  # agents get a token per task from the engine
            return {
                "model": model,
                "base_url": self.gateway.url_for(role),
                "api_key": self.gateway.issue_token(role, role=role),
            }
        return {"model": model, "base_url": self.base_url, "api_key": self.api_key}

    def agent_kwargs(self) -> dict[str, Any]:
        """The agent's model, where its provider is (the engine routes each run through the gateway), and its
        sandbox: required with a real model; the scripted dry run (our own script chooses every command) runs
        unsandboxed where no sandbox can start."""
        return {**_agent_settings(self), "sandbox": "if-available" if self.dry_run else "required"}

    def judge_kwargs(self) -> dict[str, Any]:
        return self._llm(self.judge_model, "judge")

    def optimizer_kwargs(self) -> dict[str, Any]:
        settings = self._llm(self.optimizer_model, "optimizer")
        return {
            "model_choice": settings["model"],
            "base_url": settings["base_url"],
            "openai_api_key": settings["api_key"],
        }

    def usage(self, **filters: Any) -> dict[str, Any] | None:
        """Calls, tokens and cost through the gateway (e.g. usage(role="judge", experiment="x")); None without one."""
        return self.gateway.usage(**filters) if self.gateway is not None else None

    def describe(self) -> str:
        lines = [
            f"{'SCRIPTED DRY RUN (no key configured): every number below is scripted' if self.dry_run else 'Real models'}",
            f"  agent model:   {self.agent_model}",
            f"  judge:         {self.judge_model}",
            f"  optimizer:     {self.optimizer_model}",
            f"  base URL:      {'scripted model server on loopback' if self.dry_run else self._where()}",
            *self._carried(),
            f"  model check:   {self._checked()}",
            f"  Phoenix:       {self.phoenix_url or 'off'}",
        ]
        capped = self.gateway.max_output_tokens if self.gateway is not None else None
        if capped:  # the model server's own limit on every answer (config.max_output_tokens)
            lines.insert(5, f"  answers:       at most {capped:,} tokens each ({config.MAX_OUTPUT_TOKENS_VARIABLE})")
        return "\n".join(lines)

    def _carried(self) -> list[str]:
        """A line saying so when the gateway translates the agent's calls (a Gemini-only CLI on a chat server)."""
        from helpers.llm.gateway.upstreams import GEMINI_TO_OPENAI

        upstream = self.gateway.upstreams["agent"] if self.gateway is not None else None
        if upstream is None or upstream.kind != GEMINI_TO_OPENAI:
            return []
        return [
            f"  agent calls:   the {self.agent} agent speaks Gemini's API; the gateway carries each call to "
            f"{upstream.url}/chat/completions (OpenAI-compatible) and its answer back"
        ]

    def _checked(self) -> str:
        if self.model_check is None:
            return "not done (check_models=False)"
        return "; ".join(self.model_check) or "each model is one its server lists"

    def _where(self) -> str:
        """Where the roles' requests really go beyond the gateway (OPENAI_BASE_URL, ANTHROPIC_BASE_URL included)."""
        if self.gateway is not None:
            return ", ".join(sorted({upstream.url for upstream in self.gateway.upstreams.values()}))
        urls = {
            config.llm_settings(m, base_url=self.base_url).base_url or f"{config.llm_settings(m).provider} default"
            for m in (self.agent_model, self.judge_model, self.optimizer_model)
        }
        return ", ".join(sorted(urls))

    def model_requests(self) -> int | None:
        """Requests the scripted model server answered so far (None for real models)."""
        return len(self.scripted_server.requests) if self.scripted_server is not None else None

    def summary(self) -> str:
        """What the session's models did, and where its Phoenix is once the session is closed."""
        if self.dry_run:
            text = (
                f"{DRY_RUN_LABEL}. Model requests answered by the scripted server in this session: "
                f"{self.model_requests():,}."
            )
        elif self.gateway is not None:
            spent = self.gateway.usage()
            cost = "unpriced" if spent["cost_usd"] is None else f"${spent['cost_usd']:.2f}"
            text = (
                f"Real models: {spent['calls']:,} calls through the gateway this session, {cost}; costs per loop "
                "are in act_results/<experiment>/loops.jsonl (cost_usd)."
            )
        else:
            text = "Real models: costs per loop are in act_results/<experiment>/loops.jsonl (cost_usd)."
        if self.phoenix_owned:  # its address dies with the session: say how to see it again
            text += (
                f"\nPhoenix ({self.phoenix_url}) stops when the session closes; `make phoenix` serves it again, "
                "with every experiment, at http://127.0.0.1:6006."
            )
        return text

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def is_dry_run(dry_run: bool | None = None, base_url: str | None = None) -> bool:
    """Whether a session opened with these arguments is the scripted dry run: `dry_run` when given,
    else exactly when no key and no base URL (argument, OPENAI_BASE_URL, ANTHROPIC_BASE_URL or
    GOOGLE_GEMINI_BASE_URL) is configured."""
    if dry_run is not None:
        return bool(dry_run)
    return not (
        config.has_credentials()
        or base_url
        or config.read_env("OPENAI_BASE_URL")
        or config.anthropic_base_url()
        or config.gemini_base_url()
    )


def readable_tables() -> None:
    """pandas tables as a notebook reader wants them: floats to two decimals with thousands separators (two
    significant digits below 0.1, so a p-value of 0.016 stays 0.016, not 0.02) and text cut at
    config.TABLE_TEXT_CHARS with an ellipsis; the whole text is one call away (`df.loc[row, column]`, or print
    it). open_session sets it inside a Jupyter kernel only: a script's or a test's tables stay pandas' own."""
    import pandas as pd

    pd.set_option("display.float_format", _readable_float)
    pd.set_option("display.max_colwidth", config.TABLE_TEXT_CHARS)


def _readable_float(value: float) -> str:
    if value != value:  # NaN: pandas shows it as NaN whatever the format
        return "NaN"
    return f"{value:.2g}" if 0 < abs(value) < 0.1 else f"{value:,.2f}"


def _in_a_kernel() -> bool:
    import sys

    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return bool(shell) and type(shell).__name__ == "ZMQInteractiveShell"  # Jupyter's, papermill's: not a terminal


def open_session(
    *,
    dry_run: bool | None = None,
    agent_model: str | None = None,
    judge_model: str | None = None,
    optimizer_model: str | None = None,
    base_url: str | None = None,
    phoenix: bool = True,
    phoenix_url: str | None = None,
    phoenix_api_key: str | None = None,
    gateway: bool = True,
    budget_usd: float | None = None,
    agent: str | None = None,
    dry_run_tasks: Any = None,
    check_models: bool = True,
) -> Session:
    """Resolve models and Phoenix for a run. Fails early, with what to set, when a key is missing or a
    configured model is not one its server lists (ModelNotServed; check_models=False skips that check, for a
    server that serves ids it does not list).

    A model left None takes its default from helpers.core.config (the agent model by `agent`'s name);
    dry_run=None means a dry run exactly when no key and no OPENAI_BASE_URL is configured.
    `dry_run_tasks` (a task DataFrame): the tasks the scripted server knows (default: the house suite).
    """
    agent_model = agent_model or default_agent_model(agent or config.AGENT)
    judge_model = judge_model or config.JUDGE_MODEL
    optimizer_model = optimizer_model or config.OPTIMIZER_MODEL
    dry_run = is_dry_run(dry_run, base_url)
    if _in_a_kernel():
        readable_tables()
    if dry_run:
        from helpers.stand_ins.dry_run import start_dry_run_server

        server = start_dry_run_server(dry_run_tasks, agent or config.AGENT)
        model = config.SCRIPTED_MODEL
        session = Session(
            True, model, model, model, server.base_url, DRY_RUN_KEY, scripted_server=server, agent=agent or config.AGENT
        )
        session._closers.append(server.stop)
    else:
        for role, model in (("judge", judge_model), ("optimizer", optimizer_model)):
            require_key(role, model, base_url)
        session = Session(False, agent_model, judge_model, optimizer_model, base_url, agent=agent or config.AGENT)
        own = agent_upstream(session)  # the agent's own provider settings: MissingCredentials now, not mid-run
        from helpers.llm.gateway.upstreams import GEMINI_TO_OPENAI

        if own.kind == GEMINI_TO_OPENAI and not gateway:
            raise ValueError(
                f"The {session.agent} agent speaks only Gemini's API and reaches the OpenAI-compatible "
                f"server {own.url} only through the model gateway: open the session with gateway=True."
            )
    if phoenix:
        from helpers.tracking.phoenix_server import ensure_phoenix

        handle = ensure_phoenix(phoenix_url, phoenix_api_key)
        session.phoenix_url = handle.url
        session.phoenix_api_key = phoenix_api_key or config.read_env("PHOENIX_API_KEY")
        if getattr(handle, "stop", None) and getattr(handle, "owned", True):
            session._closers.insert(0, handle.stop)
            session.phoenix_owned = True
    if gateway:
        session.gateway = start_gateway(session, budget_usd)
        session._closers.insert(0, session.gateway.stop)
    if check_models:
        try:
            session.model_check = require_served_models(session)
        except BaseException:
            session.close()
            raise
    return session


def require_served_models(session: Session) -> list[str]:
    """Check, before any work, that every configured model (the agent's, the judge's, the optimizer's) is one
    its server lists (helpers.llm.model_list): each server is asked once, through the session's gateway when it
    has one (with a token of the role's upstream), else directly. Returns what to say once: each server whose
    list could not be had (the check was skipped there, and why), each model whose provider announced a
    shutdown date. Raises ModelNotServed naming every id its server does not list, its role, the server and
    what to set."""
    from helpers.llm.model_list import ModelNotServed, NoModelList, not_served

    models = {"agent": session.agent_model, "judge": session.judge_model, "optimizer": session.optimizer_model}
    upstreams = session.gateway.upstreams if session.gateway is not None else role_upstreams(session)
    lists: dict[tuple[str, str], dict[str, str | None] | str] = {}
    wrong, retiring = [], []
    for role, model in models.items():
        upstream, setting = upstreams[role], MODEL_SETTINGS[role]
        where = (upstream.url, upstream.kind)
        if where not in lists:
            try:
                lists[where] = _model_list(session, role, upstream)
            except NoModelList as why:
                lists[where] = f"skipped for {upstream.url}: {why}"
        served = lists[where]
        if isinstance(served, str):
            continue
        who = f"the {session.agent} agent" if role == "agent" else f"the {role}"
        if model not in served:
            wrong.append(not_served(setting, who, model, upstream.url, served))
        elif served[model]:
            retiring.append(f"{setting} {model!r} ({who}): its provider shuts it down on {served[model]}")
    if wrong:
        raise ModelNotServed("\n".join(wrong))
    return [note for note in lists.values() if isinstance(note, str)] + retiring


def _model_list(session: Session, role: str, upstream: Any) -> dict[str, str | None]:
    """The model list of `role`'s server: through the session's gateway (a token of its own, revoked after)
    when it has one, else from the server itself."""
    from helpers.llm.model_list import served_models

    if session.gateway is None:
        return served_models(upstream.url, upstream.api_key, upstream.kind)
    token = session.gateway.issue_token(role, role=role)
    try:
        return served_models(session.gateway.url_for(role), token, upstream.kind)
    finally:
        session.gateway.revoke_token(token)


def require_key(role: str, model: str, base_url: str | None) -> None:
    """One role's key, or MissingCredentials naming the role, its model and exactly what to set."""
    settings = config.llm_settings(model, base_url=base_url)
    if settings.api_key:
        return
    if role != "agent" and settings.provider == "openai" and config.anthropic_base_url():
        raise config.MissingCredentials(
            f"The {role} ({model!r}) speaks the OpenAI API, and only ANTHROPIC_BASE_URL is set: set OPENAI_BASE_URL "
            f"(and OPENAI_API_KEY) to a server that speaks it, or {role.upper()}_MODEL to a Claude model id, which "
            "goes to ANTHROPIC_BASE_URL's OpenAI-compatible path (/v1/chat/completions) with ANTHROPIC_API_KEY."
        )
    settings.require_key()


def default_agent_model(agent: str) -> str:
    """The model an agent runs on unless told: its class's `default_model` (a CLI that speaks one provider's API
    only, or one API of it: Claude Code, Cline), else config.AGENT_MODEL."""
    from helpers.core.registry import agent_class

    return getattr(agent_class(agent), "default_model", None) or config.AGENT_MODEL


def role_upstream(model: str, base_url: str | None, api_key: str | None, role: str) -> Any:
    """Where one role's calls go beyond the gateway: a base URL as given, else the provider's own API.
    The judge and the optimizer speak the OpenAI API (Anthropic's and Google's OpenAI-compatible endpoints for
    Claude and Gemini models); an agent speaks its provider's native API."""
    from helpers.llm.gateway import Upstream

    settings = config.llm_settings(model, api_key, base_url)
    if settings.base_url:
        return Upstream(settings.base_url, settings.api_key, "openai-compatible")
    if settings.provider == "anthropic":  # Anthropic itself, or the ANTHROPIC_BASE_URL server
        if role == "agent":
            return Upstream(config.anthropic_base_url(), settings.api_key, "anthropic")
        return Upstream(config.anthropic_openai_url(), settings.api_key, "openai-compatible")
    if settings.provider == "gemini":  # Google itself, or the GOOGLE_GEMINI_BASE_URL server
        if role == "agent":
            return Upstream(config.gemini_base_url() or config.GEMINI_URL, settings.api_key, "gemini")
        return Upstream(config.gemini_openai_url(), settings.api_key, "openai-compatible")
    return Upstream(None, settings.api_key, "openai")


def agent_upstream(session: Session) -> Any:
    """Where the agent role's calls go beyond the gateway: where the agent itself would send them (its
    `upstream()`: OPENAI_BASE_URL for Cline and Codex, ANTHROPIC_BASE_URL for Claude Code, else its provider);
    in a dry run, the scripted server."""
    from helpers.core.registry import make_agent
    from helpers.llm.gateway import Upstream

    if session.dry_run:  # the scripted server speaks every API; an agent that speaks only Gemini's is sent there
        scripted = role_upstream(session.agent_model, session.base_url, session.api_key, "agent")
        try:
            own = make_agent(
                session.agent, model=session.agent_model, base_url=session.base_url, api_key=session.api_key
            ).upstream()
        except Exception:  # noqa: BLE001 - an agent that cannot say in the dry run gets the OpenAI-style upstream
            own = None
        return Upstream(session.base_url, session.api_key, "gemini") if own and own[2] == "gemini" else scripted
    own = make_agent(session.agent, **_agent_settings(session)).upstream()
    return Upstream(*own) if own else role_upstream(session.agent_model, session.base_url, session.api_key, "agent")


def _agent_settings(session: Session) -> dict[str, Any]:
    """The agent's model, base URL and key. base_url= is every role's OpenAI-compatible server: a real session
    hands it to an agent that speaks only Gemini's API (`speaks_gemini`) as `openai_base_url`, whose calls the
    gateway carries there as chat completions (upstream kind "gemini-to-openai")."""
    from helpers.core.registry import agent_class

    settings = session._llm(session.agent_model, "agent")
    if session.base_url and not session.dry_run and getattr(agent_class(session.agent), "speaks_gemini", False):
        return {**settings, "base_url": None, "openai_base_url": session.base_url}
    return settings


def role_upstreams(session: Session) -> dict[str, Any]:
    """Where each role's calls go beyond the gateway: {"agent", "judge", "optimizer"} -> Upstream."""
    upstreams = {
        role: role_upstream(model, session.base_url, session.api_key, role)
        for role, model in (("judge", session.judge_model), ("optimizer", session.optimizer_model))
    }
    return {"agent": agent_upstream(session), **upstreams}


def start_gateway(session: Session, budget_usd: float | None = None) -> Any:
    """The session's model gateway: one upstream per role, the budget across all of them, and every call
    traced into Phoenix (a project per experiment) when the session has Phoenix."""
    from helpers.llm.gateway import Gateway

    models = {"agent": session.agent_model, "judge": session.judge_model, "optimizer": session.optimizer_model}
    upstreams = role_upstreams(session)
    from helpers.app.experiment_tracer import ExperimentTracer

    trace = ExperimentTracer(session.phoenix_url, session.phoenix_api_key) if session.phoenix_url else None
    # Each role's token opens its configured model only (docs/security.md): the agent CLIs are configured to make
    # their side calls (opencode's titles) on the run's model, and a call naming another gets a named 403.
    allowed = {role: [models[role]] for role in ("agent", "judge", "optimizer")}
    gateway = Gateway(upstreams, budget_usd=budget_usd, trace=trace, models=allowed, host=config.gateway_host()).start()
    if trace is not None:
        session._closers.append(trace.close)
    return gateway


__all__ = [
    "open_session",
    "readable_tables",
    "is_dry_run",
    "Session",
    "start_gateway",
    "role_upstream",
    "agent_upstream",
    "role_upstreams",
    "require_key",
    "require_served_models",
    "default_agent_model",
]  # the public API, documented in CODE_APPENDIX.md
