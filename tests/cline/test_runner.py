"""One Cline run: the real CLI, isolated, driven by the scripted model server."""

import os
import socket
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from cline.runner import run_task
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text, tool_call
from tests.cline.conftest import BUGGY, FIXED, all_command_lines, cline_processes

pytestmark = pytest.mark.slow
KEY = "test-KEY-never-on-disk-0123456789"


def fix_script(extra_rules=()):
    return Script([*extra_rules, Rule(reply=[
        Reply("Fixing.", tool_calls=[tool_call("editor", path="calc.py", old_text=BUGGY, new_text=FIXED),
                                     tool_call("editor", path="NOTES.md", new_text="add() adds now\n")]),
        Reply("Done."),
    ])])


def run(server, task, ruleset="", **kw):
    return run_task(task, ruleset, model="scripted-dry-run", base_url=server.base_url, api_key=KEY, **kw)


def test_four_parallel_runs_keep_their_own_state_patch_exactly_their_edits_start_no_hub_and_leave_nothing(calc, tmp_path):
    _, _, task, _ = calc
    runs = tmp_path / "runs"
    with ScriptedModelServer(fix_script()) as server:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda i: run(server, {**task, "instance_id": f"calc-{i}"},
                                                  ruleset=f"RULESET-OF-RUN-{i}", scratch=runs), range(4)))
        systems = [message_text(r, "system") for r in server.chat_requests() if not any(m["role"] == "assistant" for m in r["messages"])]
    assert [r.status for r in results] == ["completed"] * 4
    for result in results:  # the patch is exactly the agent's edit, new files included, without the rules
        assert result.iterations == 2 and "-    return a - b\n+    return a + b" in result.patch
        assert "+++ b/NOTES.md" in result.patch and "new file mode" in result.patch
        assert ".clinerules" not in result.patch
        assert result.usage == {} and result.cost_usd is None and result.duration_s > 0  # no meter but the gateway's
    assert all(sum(f"RULESET-OF-RUN-{i}" in s for i in range(4)) == 1 for s in systems)  # no run saw another's rules
    assert sorted(s.split("RULESET-OF-RUN-")[1][0] for s in systems) == ["0", "1", "2", "3"]
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", 25463)) != 0, "a Cline hub daemon is listening"
    assert cline_processes() == []
    assert not [path for path in runs.rglob("*") if path.is_file()]  # every run's workspace is removed after it


def test_the_key_never_reaches_the_state_folder_or_any_command_line(calc, tmp_path, monkeypatch):
    _, _, task, _ = calc
    state_root = tmp_path / "tmp"  # every scratch folder of the run's (helpers.isolation.scratch), its state among them
    state_root.mkdir()
    seen = {"argv": False, "files": False, "scans": 0}
    slow = Script(default=Reply("Thinking.", delay_s=1.5))

    def watch(stop):
        while not stop.is_set():
            seen["argv"] |= KEY in all_command_lines()
            try:
                for path in state_root.rglob("*"):
                    if path.is_file() and KEY.encode() in path.read_bytes():
                        seen["files"] = True
            except OSError:  # a file or folder the run removed while we looked
                continue
            seen["scans"] += 1
            time.sleep(0.1)

    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(stop,))
    with ScriptedModelServer(slow) as server:
        monkeypatch.setattr(tempfile, "tempdir", str(state_root))  # the server's own files stay where they were
        watcher.start()
        result = run(server, task)
        stop.set()
        watcher.join()
        authorization = server.requests[0]["authorization"]
    assert result.status == "completed"
    assert authorization == f"Bearer {KEY}"  # the key did reach the provider, through the environment
    assert seen["scans"] > 0 and not seen["argv"] and not seen["files"]  # it looked while Cline ran
    assert not [p for p in state_root.rglob("*") if p.is_file()]  # the state folder is removed after the run


def test_runs_beyond_the_startup_slots_wait_until_one_is_past_its_startup(calc, tmp_path, monkeypatch):
    from cline import runner

    _, _, task, _ = calc
    monkeypatch.setattr(runner, "STARTUP_SLOTS", 1)

    def timed(i):
        started = time.monotonic()
        result = run(server, {**task, "instance_id": f"calc-{i}"})
        return result, time.monotonic() - started

    with ScriptedModelServer(Script(default=Reply("Nothing to change.", delay_s=3))) as server:
        with ThreadPoolExecutor(2) as pool:
            timings = list(pool.map(timed, range(2)))
        first, second = sorted(r["time"] for r in server.requests)
    results = [result for result, _ in timings]
    assert [r.status for r in results] == ["completed"] * 2
    # Started together, both would ask the model within a fraction of a second; with one slot the second
    # starts only once the first has finished starting up and waits on the model.
    assert second - first > 1.0
    # The run that waited for the slot does not count its wait: its duration is its wall time less the wait.
    waited = max(timings, key=lambda t: t[1] - t[0].duration_s)
    assert waited[1] - waited[0].duration_s > 0.8


def test_a_runs_environment_drops_inherited_cline_settings_and_keys_and_keeps_the_users_runtime_settings(monkeypatch):
    from cline.runner import child_environment

    monkeypatch.setenv("CLINE_MODEL", "someone-elses-model")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key-this-run-was-not-given")
    monkeypatch.setenv("PHOENIX_API_KEY", "a-secret-of-the-notebook")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "another-secret")
    env = child_environment({"HOME": "/state/home", "CLINE_DIR": "/state/cline"}, {"OPENAI_API_KEY": "given"})
    assert "CLINE_MODEL" not in env and "ANTHROPIC_API_KEY" not in env
    assert "PHOENIX_API_KEY" not in env and "AWS_SECRET_ACCESS_KEY" not in env  # an allow-list, not a deny-list
    assert env["PATH"] == os.environ["PATH"]
    assert env["CLINE_DIR"] == "/state/cline" and env["OPENAI_API_KEY"] == "given"
    assert env["BUN_JSC_useDFGJIT"] == "0"  # cline.runner.RUNTIME_ENV
    monkeypatch.setenv("BUN_JSC_useDFGJIT", "1")
    assert child_environment({}, {})["BUN_JSC_useDFGJIT"] == "1"  # the user's own setting wins
