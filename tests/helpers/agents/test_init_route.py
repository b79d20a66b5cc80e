"""Each agent's init route as the command line it becomes: the prompt sent as it is (a slash command as the CLI's
own), while a task's text is sent as before; the label says when the prompt is the project's own."""

import pytest

from helpers.agents.base import task_text
from helpers.agents.init_route import OWN_INIT, PROJECT_INIT, init_task
from helpers.core.registry import agent_class, make_agent
from helpers.families.coding.tasks import load_house_suite

ROUTES = {"codex": ("gpt-5", "http://127.0.0.1:9/v1"), "gemini-cli": ("gemini-2.5-pro", "http://127.0.0.1:9"),
          "opencode": ("gpt-5", "http://127.0.0.1:9/v1"), "claude-code": ("claude-sonnet-4-5", "http://127.0.0.1:9")}


@pytest.fixture(scope="module")
def task():
    return load_house_suite().iloc[0].to_dict()


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_an_init_runs_the_documented_headless_command_with_the_exact_prompt(name, task, tmp_path):
    model, url = ROUTES[name]
    agent = make_agent(name, model=model, base_url=url, api_key="test-KEY-route")
    route = agent_class(name).init_route
    state = tmp_path / "state"
    state.mkdir()
    invocation = agent.invoke(init_task(task, route, name), tmp_path, state)
    assert route.kind == OWN_INIT
    args = invocation.args
    if name == "opencode":
        assert args[-2:] == ["--command", "init"]  # opencode run --command init
    elif name == "gemini-cli":
        assert args[args.index("-p") + 1] == "/init"  # gemini -p "/init"
    else:  # codex exec <prompt>, claude -p <prompt>: the prompt itself, nothing on stdin
        assert route.prompt in args and invocation.stdin == ""
    for close in invocation.close:
        close()
    (tmp_path / "state2").mkdir()
    usual = agent.invoke(task, tmp_path, tmp_path / "state2")  # a task's text as before
    assert route.prompt not in usual.args and task_text(task) in (usual.stdin, *usual.args)
    for close in usual.close:
        close()


def test_agents_without_an_init_get_the_projects_own_prompt_labeled_so():
    for name in ("cline", "mini-swe-agent"):
        route = agent_class(name).init_route
        assert route.kind == PROJECT_INIT and agent_class(name).rules_file in route.prompt
        assert route.label(name) == f"{name}: the project's own init prompt ({name} has no init)"
    assert agent_class("codex").init_route.label("codex") == "codex's /init"
    assert len({agent_class(n).init_route.prompt_sha for n in ("codex", "claude-code", "cline")}) == 3


def test_an_init_tasks_prompt_is_sent_as_it_is_and_a_tasks_is_wrapped(task):
    route = agent_class("gemini-cli").init_route
    assert task_text(init_task(task, route, "gemini-cli")) == "/init"
    assert task_text(task).startswith(f"Task {task['instance_id']} in the repository")
