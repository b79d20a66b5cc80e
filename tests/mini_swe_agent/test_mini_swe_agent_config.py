"""mini-swe-agent's per-run config without running it: the rules as its Jinja system template renders them, read
from the workspace's AGENTS.md as hostile data (a link not followed, a FIFO or a flood refused by name), and no key
in the config."""

import os

import pytest
from jinja2 import StrictUndefined, Template

from helpers.isolation.untrusted import RefusedOutput

from mini_swe_agent.agent import RULES_HEADING, SYSTEM_TEMPLATE, run_config, system_template, workspace_rules

TASK = {"instance_id": "house__x-1", "repo": "house/x", "problem_statement": "Fix {{ it }}."}


def rendered(template: str) -> str:
    # as mini renders it (minisweagent.agents.default), with the process environment among its variables
    return Template(template, undefined=StrictUndefined).render(**os.environ, task="t")


def test_rules_with_jinja_quotes_backslashes_and_any_script_render_as_written():
    rules = ('- Write {{ HOME }} and {% raw %}x{% endraw %} and {# c #} as text.\n- Quote "a" and \'b\', keep \\n and \\.\n'
             "- Names: Zoë, 東京, 🙂, tab\there.")
    assert rendered(system_template(rules)) == SYSTEM_TEMPLATE + RULES_HEADING + rules + "\n"
    assert rendered(system_template("")) == SYSTEM_TEMPLATE.rstrip("\n")  # Jinja drops the one trailing newline


def test_the_rules_come_from_a_regular_agents_md_never_through_a_link(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("host secret")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert workspace_rules(workspace) == ""  # no AGENTS.md: no rules
    for target in (outside, "/dev/zero"):  # a repository's link (this is read before the run): not followed
        (workspace / "AGENTS.md").symlink_to(target)
        assert workspace_rules(workspace) == ""
        (workspace / "AGENTS.md").unlink()
    (workspace / "AGENTS.md").write_bytes(b"x" * 300_000)
    with pytest.raises(RefusedOutput, match=r"AGENTS.md is larger than the 256000 bytes"):
        workspace_rules(workspace)
    (workspace / "AGENTS.md").unlink()
    os.mkfifo(workspace / "AGENTS.md")
    with pytest.raises(RefusedOutput, match=r"AGENTS.md is a FIFO"):  # at once: no wait for a writer
        workspace_rules(workspace)
    (workspace / "AGENTS.md").unlink()
    (workspace / "AGENTS.md").write_text("- Team rule.\n")
    assert workspace_rules(workspace) == "- Team rule.\n"


def test_the_config_holds_the_task_url_and_output_cap_and_blanks_the_key_for_commands(monkeypatch):
    monkeypatch.setenv("PL_MAX_OUTPUT_TOKENS", "300")  # the server's cap, below the agents' own
    config = run_config(TASK, "- A rule.", "http://127.0.0.1:9/u/agent/v1")
    assert "Fix {{ it }}." in config["run"]["task"]  # the task is a variable's value, never a template
    assert config["model"]["model_kwargs"] == {"api_base": "http://127.0.0.1:9/u/agent/v1", "max_retries": 0,
                                               "max_tokens": 300}
    assert config["environment"]["env"] == {"OPENAI_API_KEY": ""}
