"""environment.yml sets up what `make setup` does, for conda users: every agent's CLI included."""

import re
import subprocess

from helpers.core.config import REPO_ROOT

ENVIRONMENT = (REPO_ROOT / "environment.yml").read_text()


def agent_packages() -> list[str]:
    """The folders holding a pinned agent CLI (a package.json beside the agent's Python package)."""
    return sorted(p.parent.name for p in REPO_ROOT.glob("*/package.json"))


def test_environment_yml_installs_every_agents_cli_the_way_make_setup_does():
    makefile = (REPO_ROOT / "Makefile").read_text()
    setup_clis = re.search(r"^AGENT_CLIS := (.*)$", makefile, re.M).group(1).split()
    assert agent_packages() == ["claude_code", "cline", "codex", "gemini_cli", "opencode"]
    for package in agent_packages():
        target = f"{package}/node_modules/.installed"
        assert target in setup_clis and target in ENVIRONMENT, f"{package}'s CLI is not set up by environment.yml"
    command = next(line for line in ENVIRONMENT.splitlines() if "node_modules/.installed" in line).lstrip("# ").split()
    dry = subprocess.run(command + ["-n"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr  # the targets it names are the Makefile's own
    for name in ("make phoenix-server", "make sandbox", "make mini-swe-agent"):
        assert name in ENVIRONMENT
