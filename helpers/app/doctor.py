"""Environment checks for the setup notebook: what is there, what is missing, and how to fix it.

Each check returns a Check; none raises. `check_environment()` runs them all into a DataFrame.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from helpers.core import config


@dataclass
class Check:
    component: str
    ok: bool
    detail: str
    fix: str = ""


def pinned_requirements() -> dict[str, str]:
    """name -> pinned version, from pyproject.toml's dependencies."""
    import tomllib

    project = tomllib.loads((config.REPO_ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for spec in project["dependencies"]:
        match = re.match(r"^([A-Za-z0-9_.\-]+)==([^;\s]+)", spec)
        if match:
            pins[match.group(1)] = match.group(2)
    return pins


def check_python() -> Check:
    ok = sys.version_info >= (3, 11)
    return Check(
        "Python", ok, sys.version.split()[0], "" if ok else "Use Python 3.11 or newer (make PYTHON=python3.11 setup)."
    )


def check_packages() -> Check:
    missing, wrong = [], []
    for name, pin in pinned_requirements().items():
        try:
            found = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
            continue
        if found != pin:
            wrong.append(f"{name} {found} (pinned {pin})")
    ok = not missing and not wrong
    detail = (
        "all pinned packages present"
        if ok
        else "; ".join(
            ([f"missing: {', '.join(missing)}"] if missing else [])
            + ([f"other versions: {', '.join(wrong)}"] if wrong else [])
        )
    )
    return Check(
        "Python packages", ok, detail, "" if ok else "Run `make setup` (or `pip install -e .`) in this environment."
    )


def check_agents() -> list[Check]:
    """One check per registered agent: is its pinned CLI installed, and which version. Looking installs nothing
    (a Node agent's CLI installs on its first run). A missing CLI is ok only when choosing it would still work:
    a Node CLI of an agent the notebooks do not run (AGENT); never the chosen agent's, never one without npm."""
    from helpers.core.registry import agent_class, registered_agents

    checks = []
    for name in sorted(set(registered_agents()) | {config.AGENT}):
        # the registry gives a plain class: a CLIAgent's members (package_dir, binary_path, installed) are read by name
        cls = agent_class(name)
        package_dir, binary_path = getattr(cls, "package_dir", None), getattr(cls, "binary_path", "")
        if package_dir and binary_path and not (Path(package_dir) / binary_path).exists():
            # ok only when choosing it would work: a Node CLI installs on its first run; anything else must be installed
            later = name != config.AGENT and (Path(package_dir) / "package.json").exists()
            detail = (
                "not installed: it installs on its first run"
                if later
                else "not installed"
                if name == config.AGENT
                else f"not installed: needed only with AGENT={name!r}"
            )
            checks.append(
                Check(
                    f"agent: {name}",
                    later,
                    detail,
                    f"`make agent AGENT={name}` installs it now (`make setup`: every agent).",
                )
            )
            continue
        try:
            checks.append(Check(f"agent: {name}", True, getattr(cls, "installed")()))
        except Exception as error:  # a doctor reports, it does not raise
            checks.append(
                Check(
                    f"agent: {name}",
                    False,
                    str(error),
                    f"Run `make agent AGENT={name}` (it installs the agent's pinned CLI into its package; "
                    "needs Node 20+; `make setup`: every agent).",
                )
            )
    return checks


def check_node() -> Check:
    node = shutil.which("node")
    if not node:
        return Check("Node.js", False, "not found", "Install Node.js 20+ (it brings npm), then `make setup`.")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    ok = int(version.lstrip("v").split(".")[0]) >= 20
    return Check("Node.js", ok, version, "" if ok else "Install Node.js 20 or newer.")


def check_llm() -> Check:
    if config.read_env("OPENAI_BASE_URL"):
        return Check("LLM", True, f"OpenAI-compatible server at {config.read_env('OPENAI_BASE_URL')}")
    if config.has_credentials():
        which = [n for n in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY") if config.read_env(n)]
        return Check("LLM", True, f"key set: {', '.join(which)} (value not shown)")
    return Check(
        "LLM",
        True,
        "no key: the notebooks run the SCRIPTED DRY RUN (scripted model, not real results)",
        "For real runs set OPENAI_API_KEY (or ANTHROPIC_API_KEY, or OPENAI_BASE_URL for vLLM/Ollama/"
        "OpenRouter) in the environment or in .env at the repository root.",
    )


def check_models(
    agent: str | None = None,
    agent_model: str | None = None,
    judge_model: str | None = None,
    optimizer_model: str | None = None,
) -> Check:
    """Whether each configured model (the agent's, the judge's, the optimizer's: the defaults in
    helpers/core/config.py unless given) is one its server lists, asked with the official SDKs as a session
    asks before any work (helpers.app.session.require_served_models)."""
    from helpers.app.session import (
        MODEL_SETTINGS,
        Session,
        default_agent_model,
        is_dry_run,
        require_key,
        require_served_models,
    )
    from helpers.llm.model_list import ModelNotServed

    if is_dry_run():
        return Check("models", True, "no key: every role is the scripted model (SCRIPTED DRY RUN)")
    agent = agent or config.AGENT
    models = {
        "agent": agent_model or default_agent_model(agent),
        "judge": judge_model or config.JUDGE_MODEL,
        "optimizer": optimizer_model or config.OPTIMIZER_MODEL,
    }
    chosen = ", ".join(f"{MODEL_SETTINGS[role]} {model!r}" for role, model in models.items())
    try:
        for role in ("judge", "optimizer"):
            require_key(role, models[role], None)
        notes = require_served_models(
            Session(False, models["agent"], models["judge"], models["optimizer"], agent=agent)
        )
    except ModelNotServed as error:
        return Check(
            "models",
            False,
            str(error),
            "Set the model ids named to ones their servers serve (the defaults "
            "are in helpers/core/config.py; notebooks take AGENT_MODEL, JUDGE_MODEL and OPTIMIZER_MODEL).",
        )
    except Exception as error:  # a doctor reports: a missing key, an agent that cannot run on its model
        return Check("models", False, f"{chosen}: {error}", "Set what the message names.")
    return Check("models", True, f"{chosen}: " + ("; ".join(notes) or "each one its server lists"))


def check_git() -> Check:
    git = shutil.which("git")
    return Check("git", bool(git), git or "not found", "" if git else "Install git.")


def check_sandbox() -> Check:
    from helpers.isolation.sandbox import UNSAFE_OPT_OUT, opted_out, unavailable_reason

    reason = unavailable_reason()
    if reason is None:
        return Check("agent sandbox", True, "bubblewrap: agents run in their own namespaces")
    detail = f"{reason} ({UNSAFE_OPT_OUT} is set: agents run unsandboxed)" if opted_out() else reason
    fix = SANDBOX_FIXES.get(platform_of(), "install bubblewrap (sudo apt-get install bubblewrap)")
    return Check(
        "agent sandbox",
        False,
        detail,
        f"{fix[0].upper()}{fix[1:]}; until then only the scripted dry run "
        f"runs agents ({UNSAFE_OPT_OUT}=1 runs real ones unsandboxed, as you). docs/security.md.",
    )


def platform_of(system: str = sys.platform, kernel: str | None = None, container: bool | None = None) -> str:
    """ "linux", "wsl2", "wsl1", "container" (Linux inside Docker/Podman), "macos", "windows" or the system's own
    name; `kernel` (/proc/version) and `container` are read from this machine when None."""
    if system == "darwin":
        return "macos"
    if system in ("win32", "cygwin", "msys"):
        return "windows"
    if not system.startswith("linux"):
        return system
    if kernel is None:
        kernel = Path("/proc/version").read_text(errors="replace") if Path("/proc/version").exists() else ""
    if "microsoft" in kernel.lower():
        return "wsl2" if "wsl2" in kernel.lower() else "wsl1"
    if container is None:
        container = Path("/.dockerenv").exists() or Path("/run/.containerenv").exists()
    return "container" if container else "linux"


PLATFORM_NOTES = {
    "linux": "Linux: everything runs, real agent runs in the bubblewrap sandbox.",
    "wsl2": "Windows, in WSL2: a Linux, so everything runs as on Linux (keep the checkout in the WSL file system).",
    "container": "Linux in a container: everything runs when bubblewrap can create its namespaces (the container "
    "needs unprivileged user namespaces, or --privileged).",
    "macos": "macOS: the scripted dry run and the notebooks run (Homebrew Python 3.11+ and Node); real agent runs "
    "need the sandbox, which is Linux only: run them in a Linux VM or container, or opt out knowingly.",
    "windows": "Windows: run the cookbook in WSL2 (a Linux); natively nothing here is supported.",
    "wsl1": "Windows, in WSL1: it has no Linux namespaces for the sandbox; convert it to WSL2 (wsl --set-version).",
}


SANDBOX_FIXES = {  # what makes the sandbox start, by platform_of
    "container": "run the container with --privileged, or allow unprivileged user namespaces on its host "
    "(sysctl kernel.unprivileged_userns_clone=1)",
    "macos": "run real agent runs in a Linux VM or container",
    "windows": "install WSL2 and run the cookbook there",
    "wsl1": "convert it to WSL2 (wsl --set-version <distro> 2)",
}


def check_platform() -> Check:
    """Which kind of machine this is and what runs on it (a statement, never a failure: check_sandbox is the
    check that real agent runs can start)."""
    from helpers.isolation.sandbox import unavailable_reason

    kind = platform_of()
    note = PLATFORM_NOTES.get(kind, f"{kind}: untested; the scripted dry run may run, real agent runs need Linux.")
    if unavailable_reason() is not None:
        note += " Here the sandbox cannot start, so only the scripted dry run runs agents (see the sandbox row)."
    return Check("platform", True, note)


def check_swebench_runtime() -> Check:
    try:
        from helpers.families.coding.swebench_harness import docker_available, modal_available

        docker, modal = docker_available(), modal_available()
    except Exception as error:
        return Check("SWE-bench evaluation", False, f"cannot check: {error}", "")
    if docker or modal:
        return Check(
            "SWE-bench evaluation", True, ", ".join(n for n, ok in (("Docker", docker), ("Modal", modal)) if ok)
        )
    return Check(
        "SWE-bench evaluation",
        False,
        "no Docker engine and no Modal credentials",
        "SWE-bench tasks need Docker (start the engine) or Modal (`modal token new`); the house suite "
        "(TASK_SOURCE='house') needs neither.",
    )


def check_phoenix(url: str | None = None) -> Check:
    url = url or config.read_env("PHOENIX_COLLECTOR_ENDPOINT")
    if not url:
        return Check(
            "Phoenix",
            True,
            "none configured: the notebooks start an embedded local Phoenix",
            "Set PHOENIX_COLLECTOR_ENDPOINT (and PHOENIX_API_KEY) to use a team server.",
        )
    import httpx

    try:
        ok = httpx.get(url.rstrip("/") + "/healthz", timeout=5).status_code == 200
    except httpx.HTTPError as error:
        return Check("Phoenix", False, f"{url}: {error}", "Check the URL, or unset it to use the embedded server.")
    return Check("Phoenix", ok, url, "" if ok else "The server answered but is not healthy.")


def check_cluster(executor: str = "local") -> Check:
    """Where agent runs will execute: this machine, or the Ray cluster `executor` names (its nodes and CPUs)."""
    from helpers.engine.executors import parse_executor

    try:
        kind, address = parse_executor(executor)
    except ValueError as error:
        return Check("executor", False, str(error), "set EXECUTOR to one of the forms named")
    if kind == "local":
        return Check("executor", True, f"local: agent runs on this machine ({os.cpu_count()} CPUs), WORKERS at a time")
    try:
        import ray

        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        nodes = [n for n in ray.nodes() if n.get("Alive")]
    except Exception as error:  # no Ray, no cluster at that address, a wrong token
        return Check(
            "executor",
            False,
            f"{executor}: {type(error).__name__}: {str(error).splitlines()[0][:200]}",
            "pip install 'prompt-learning-coding-agents[cluster]'; start the cluster (docs/cluster.md) "
            "and check its address and RAY_AUTH_TOKEN",
        )
    cpus = sum(n.get("Resources", {}).get("CPU", 0) for n in nodes)
    return Check(
        "executor",
        bool(nodes),
        f"{executor}: {len(nodes)} nodes, {cpus:g} CPUs",
        "" if nodes else "start at least one Ray node",
    )


def check_environment(phoenix_url: str | None = None, executor: str = "local"):
    """All checks as a DataFrame (component, ok, detail, fix)."""
    import pandas as pd

    checks = [
        check_platform(),
        check_python(),
        check_packages(),
        check_node(),
        *check_agents(),
        check_git(),
        check_sandbox(),
        check_llm(),
        check_models(),
        check_phoenix(phoenix_url),
        check_swebench_runtime(),
        check_cluster(executor),
    ]
    return pd.DataFrame([asdict(c) for c in checks])


__all__ = [
    "check_environment",
    "check_cluster",
    "check_models",
    "Check",
]  # the public API, documented in CODE_APPENDIX.md
