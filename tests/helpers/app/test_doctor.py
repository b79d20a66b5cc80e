"""The setup check reports what is here and how to fix what is missing, and never raises."""

import pytest

from helpers.app.doctor import check_environment, check_models, check_phoenix


@pytest.fixture(scope="module")
def environment():
    """One whole setup check, with Phoenix at an address where nothing answers: it asks every agent's CLI for its
    version (seconds each), so the tests below read this one check rather than each making its own."""
    return check_environment("http://127.0.0.1:9").set_index("component")


def test_the_environment_check_finds_the_installed_parts_and_explains_the_rest(environment, monkeypatch):
    checks = environment
    assert checks.index[0] == "platform" and checks.loc["platform", "ok"]  # which machine this is, first
    assert checks.loc["platform", "detail"].startswith(("Linux", "Windows", "macOS"))
    for part in ("Python", "Python packages", "Node.js", "agent: cline", "git"):
        assert checks.loc[part, "ok"], checks.loc[part, "detail"]
    assert "3.0.65" in checks.loc["agent: cline", "detail"]
    assert checks.loc[~checks.ok, "fix"].map(bool).all(), "every failing check says how to fix it"
    if not checks.loc["SWE-bench evaluation", "ok"]:
        assert "house" in checks.loc["SWE-bench evaluation", "fix"]
    monkeypatch.delenv("PHOENIX_COLLECTOR_ENDPOINT", raising=False)  # and with no Phoenix given
    phoenix = check_phoenix()
    assert phoenix.ok or phoenix.fix


def test_looking_for_an_agents_cli_installs_nothing_and_fails_only_for_the_agent_the_notebooks_run(monkeypatch,
                                                                                                   tmp_path):
    from helpers.app.doctor import check_agents
    from helpers.core import registry
    from helpers.core.registry import agent_class

    codex = agent_class("codex")
    # only Codex registered (the chosen agent is always checked too): every other agent's CLI would be asked its
    # version, seconds each, twice, for an answer this test does not read (`environment` reads them)
    only_codex = {name: target for name, target in registry.registered_agents().items() if name == "codex"}
    monkeypatch.setattr(registry, "registered_agents", lambda: only_codex)
    (tmp_path / "package.json").write_text(codex.package_dir.joinpath("package.json").read_text())
    monkeypatch.setattr(codex, "package_dir", tmp_path)  # a checkout where `make quickstart` left Codex out
    checks = {c.component: c for c in check_agents()}
    assert checks["agent: codex"].ok and checks["agent: codex"].detail == "not installed: it installs on its first run"
    monkeypatch.setattr("helpers.core.config.AGENT", "codex")
    chosen = {c.component: c for c in check_agents()}["agent: codex"]
    assert not chosen.ok and "make agent AGENT=codex" in chosen.fix
    assert sorted(p.name for p in tmp_path.iterdir()) == ["package.json"]  # no npm ran


def test_an_unreachable_phoenix_is_reported_not_raised(environment):
    checks = environment
    assert not checks.loc["Phoenix", "ok"] and "unset it" in checks.loc["Phoenix", "fix"]


@pytest.fixture
def openai_base_url(monkeypatch, tmp_path):
    """A scripted server as OPENAI_BASE_URL (listing two ids), and no other key or .env."""
    from helpers.llm.scripted_server import ScriptedModelServer

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("helpers.core.config.REPO_ROOT", tmp_path)
    with ScriptedModelServer(models=["gpt-6.1-sol", "local"]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "local-server-key-123")
        yield server


def test_the_setup_check_names_a_configured_model_its_server_does_not_list_and_what_to_set(openai_base_url):
    check = check_models(agent_model="local", judge_model="gpt-6.1-sol", optimizer_model="gpt-6.1-sool")
    assert not check.ok and check.component == "models"
    assert check.detail.startswith(f"OPTIMIZER_MODEL 'gpt-6.1-sool' (the optimizer) is not served by {openai_base_url.base_url}")
    assert "OPTIMIZER_MODEL" in check.fix and "helpers/core/config.py" in check.fix


def test_the_setup_check_passes_models_their_server_lists(openai_base_url):
    check = check_models(agent_model="local", judge_model="gpt-6.1-sol", optimizer_model="gpt-6.1-sol")
    assert check.ok and check.detail.endswith("each one its server lists"), check.detail
    assert openai_base_url.model_requests() == []  # it asked for the list only


@pytest.mark.parametrize("system, kernel, container, kind", [
    ("darwin", "", False, "macos"), ("win32", "", False, "windows"),
    ("linux", "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@1c602f52c2e4)", False, "wsl2"),
    ("linux", "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com)", False, "wsl1"),
    ("linux", "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)", True, "container"),
    ("linux", "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)", False, "linux")])
def test_the_setup_check_says_which_platform_the_reader_is_on_and_what_runs_there(system, kernel, container, kind):
    from helpers.app.doctor import PLATFORM_NOTES, SANDBOX_FIXES, platform_of

    assert platform_of(system, kernel, container) == kind
    note = PLATFORM_NOTES[kind]
    if kind in ("macos", "windows", "wsl1", "container"):  # where the sandbox needs more, the way to it is named
        assert kind in SANDBOX_FIXES
    assert {"macos": "dry run", "windows": "WSL2", "wsl1": "WSL2", "container": "--privileged"}.get(kind, "") in note


def test_an_agent_that_cannot_install_itself_is_never_ok_while_missing(monkeypatch, tmp_path):
    from helpers.app.doctor import check_agents
    from helpers.core import registry
    from helpers.core.registry import agent_class

    mini = agent_class("mini-swe-agent")
    only_mini = {name: target for name, target in registry.registered_agents().items() if name == "mini-swe-agent"}
    monkeypatch.setattr(registry, "registered_agents", lambda: only_mini)
    monkeypatch.setattr(mini, "package_dir", tmp_path)  # no package.json: nothing installs it on a first run
    monkeypatch.setattr(mini, "binary_path", getattr(mini, "binary_path", "") or "bin/mini")
    check = {c.component: c for c in check_agents()}["agent: mini-swe-agent"]
    assert not check.ok and check.detail == "not installed: needed only with AGENT='mini-swe-agent'"
    assert "make agent AGENT=mini-swe-agent" in check.fix
