"""What CLIAgent does once for every agent, driven by what each declares: installed() (its version from the binary,
its npm package or its Python distribution), the OpenAI provider and upstream of a CLI that speaks only OpenAI's API,
the claim's status and the result made of it, and the key on a pipe."""

import os
import stat
from pathlib import Path

import pytest

from helpers.agents.base import CLIAgent, Claim, claimed_status, key_pipe
from helpers.core import config


def toy(package_dir: Path, **declared) -> type[CLIAgent]:
    return type("ToyAgent", (CLIAgent,), {"name": "toy-agent", "package_dir": package_dir, **declared})


def script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_installed_names_the_version_the_binary_prints_last_in_the_allow_listed_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TOY_SECRET", "a-key-the-version-call-must-not-see")
    script(tmp_path / "toy/bin/toy", 'echo "starting up"\necho "toy-cli 9.9.9 ${TOY_QUIET:-loud} ${TOY_SECRET:-none}"\n')
    agent = toy(tmp_path / "toy", binary_path="bin/toy", title="Toy CLI", version_prefix="toy-cli ",
                version_env={"TOY_QUIET": "quiet"})
    assert agent.installed() == "Toy CLI 9.9.9 quiet none at toy/bin/toy"


def test_installed_asks_the_binary_with_its_declared_arguments_and_reads_stderr_when_stdout_is_empty(tmp_path):
    script(tmp_path / "toy/bin/toy", '[ "$1" = "version" ] && echo "2.0.1" >&2\n')
    assert toy(tmp_path / "toy", binary_path="bin/toy", version_args=("version",)).installed() == \
        "toy-agent 2.0.1 at toy/bin/toy"  # no title: its name
    script(tmp_path / "mute/bin/toy", "exit 0\n")
    assert toy(tmp_path / "mute", binary_path="bin/toy", title="Mute").installed() == "Mute ? at mute/bin/toy"


def test_installed_reads_an_npm_packages_version_from_its_package_json_without_running_it(tmp_path):
    package = tmp_path / "toy/node_modules/@toys/cli"
    script(package / "bundle/toy.js", "echo should-not-run\nexit 3\n")
    (package / "package.json").write_text('{"name": "@toys/cli", "version": "0.61.0"}')
    agent = toy(tmp_path / "toy", binary_path="node_modules/@toys/cli/bundle/toy.js", title="Toy",
                npm_package="@toys/cli")
    assert agent.installed() == "Toy 0.61.0 at toy/node_modules/@toys/cli/bundle/toy.js"


def test_installed_reads_a_python_distributions_version_from_the_binarys_own_environment(tmp_path):
    venv = tmp_path / "toy/.venv"
    script(venv / "bin/toy", "exit 3\n")
    info = venv / "lib/python3.11/site-packages/toy_agent-4.5.6.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-agent\nVersion: 4.5.6\n")
    agent = toy(tmp_path / "toy", binary_path=".venv/bin/toy", title="toy", python_package="toy-agent")
    assert agent.installed() == "toy 4.5.6 at toy/.venv/bin/toy"
    assert toy(tmp_path / "toy", binary_path=".venv/bin/toy", python_package="other").installed().startswith(
        "toy-agent ? at")


def test_installed_says_how_to_install_a_missing_binary(tmp_path):
    (tmp_path / "toy").mkdir()
    with pytest.raises(FileNotFoundError, match="make setup"):
        toy(tmp_path / "toy", binary_path="bin/toy").installed()


def test_a_cli_that_speaks_openai_takes_its_provider_and_upstream_from_its_declaration(keys, monkeypatch):
    speaking = toy(Path("."), speaks_openai=("Toy speaks only the OpenAI Responses API", "/responses"))
    assert speaking("gpt-5").openai_settings() == (config.OPENAI_URL, "openai-key")
    assert speaking("gpt-5").upstream() == (None, "openai-key", "openai")
    with pytest.raises(ValueError, match="Toy speaks only the OpenAI Responses API, and 'claude-sonnet-4-5'"):
        speaking("claude-sonnet-4-5").check_provider()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert speaking("gpt-5").upstream() == ("http://127.0.0.1:9/v1", "openai-key", "openai-compatible")


def test_a_cli_that_declares_no_openai_api_has_no_upstream_of_its_own_and_no_openai_settings():
    silent = toy(Path("."))("some-model")
    silent.check_provider()  # nothing to check
    assert silent.upstream() is None
    with pytest.raises(TypeError, match="does not speak an OpenAI API"):
        silent.openai_settings()


def test_a_claim_is_a_timeout_when_the_host_stopped_it_whatever_its_output_says():
    def asked():
        raise AssertionError("error() is asked only for an error")

    assert claimed_status(True, 90, True, asked) == ("timeout", "stopped after 90 s (the agent's time limit)")
    assert claimed_status(False, 90, True, asked) == ("completed", "")
    assert claimed_status(False, 90, False, lambda: "it said no") == ("error", "it said no")



def test_a_claim_becomes_the_runs_result_with_the_agents_model_its_error_worked_out_and_cut_only_on_failure(tmp_path):
    asked = []

    def error():
        asked.append("asked")
        return "it failed " * 500

    class Claiming(toy(tmp_path)):
        def claim(self, out, err):
            return Claim(out == "done", error, final_text=out, iterations=3, trajectory=[{"type": "message"}], plan=err)

    agent = Claiming("toy-model", timeout_s=9)
    done = agent.result({"instance_id": 7}, "done", "the plan", False, 1.23456)
    assert (done.instance_id, done.status, done.error, done.model, done.duration_s) == ("7", "completed", "", "toy-model",
                                                                                        1.235)
    assert (done.final_text, done.iterations, done.trajectory, done.plan) == ("done", 3, [{"type": "message"}], "the plan")
    assert asked == [] and done.usage == {} and done.cost_usd is None
    failed = agent.result({"instance_id": "t-1"}, "no", "", False, 1.0)
    assert failed.status == "error" and failed.error == ("it failed " * 500)[:4000] and asked == ["asked"]
    stopped = agent.result({"instance_id": "t-1"}, "no", "", True, 9.0)
    assert (stopped.status, stopped.error) == ("timeout", "stopped after 9 s (the agent's time limit)")
    assert asked == ["asked"]


def test_a_limit_only_the_host_observes_is_never_read_from_the_clis_words_and_a_cap_only_from_the_watcher():
    """The agent writes its CLI's stream and stderr: a sandbox cap or a refused output it names there is no limit
    (the host's watcher and reader say those), while the limits a CLI reports of itself still are."""
    from helpers.agents.base import capped, ended_as_seen
    from helpers.core.protocols import AgentResult, Limit

    def ended(error: str, exit_status: int = 1) -> AgentResult:
        return ended_as_seen(AgentResult("t-1", status="error", error=error), exit_status, False, 60)

    for words in ("sandbox cap reached: memory (512 MB); the run was ended.",
                  "refused the agent's output: trajectory.json is a FIFO", "SANDBOX CAP REACHED"):
        assert ended(words).limit is None, words
        assert ended(words, exit_status=0).limit is None, words
    assert ended("Error: max turns reached").limit == Limit.TURNS  # what a CLI reports of itself
    assert ended("prompt is too long: 210000 tokens").limit == Limit.CONTEXT
    honest = AgentResult("t-1", status="completed", error="")
    assert capped(honest, "").status == "completed" and honest.limit is None  # no cap seen: the claim stands
    cut = capped(AgentResult("t-1", status="completed"), "sandbox cap reached: the disk cap (64 MiB); the run was ended.")
    assert (cut.status, cut.limit) == ("error", Limit.SANDBOX_CAP) and cut.error.startswith("sandbox cap reached")


def test_a_key_pipe_holds_the_key_once_and_nothing_else():
    read_end = key_pipe("sk-toy-key")
    try:
        assert os.read(read_end, 100) == b"sk-toy-key" and os.read(read_end, 100) == b""  # the write end is closed
    finally:
        os.close(read_end)
