"""Probes an attacker would run inside an agent run, run by the real Cline CLI (the scripted model asks it
to): nothing of the key, the hidden tests or the user's files comes back, and nothing it starts survives.

Needs bubblewrap (as every run with a real model does); skipped, saying so, where it cannot start.
"""

import json
import subprocess

import pytest

from cline import run_act
from helpers.core.config import REPO_ROOT
from helpers.core.sandbox import unavailable_reason
from helpers.families.coding.house_suite import load_house_suite
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
SECRET = "probe-secret-" + "4" * 24
DAEMON = "sleep 4243"
PROBES = [
    # every environment and command line it can read (the notebook kernel and the gateway hold the key)
    "for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; done > probe_proc.txt 2>/dev/null",
    "for f in /proc/[0-9]*/mem; do head -c 1000000 $f 2>/dev/null; done | grep -a -o 'probe-secret-[0-9]*' > probe_mem.txt",
    # the checkout's .env, through the working folders of other processes, VIRTUAL_ENV and the home folder
    "for f in /proc/[0-9]*/cwd; do ls -a $f/; done > probe_cwd.txt 2>&1; cat $VIRTUAL_ENV/../.env >> probe_cwd.txt 2>&1",
    f"ls -a $HOME ~ /root {REPO_ROOT} > probe_home.txt 2>&1",
    # the hidden tests and gold patches
    "cat .git/objects/info/alternates > probe_hidden.txt 2>&1; find / -name tasks.json >> probe_hidden.txt 2>/dev/null",
    f"(setsid {DAEMON} > /dev/null 2>&1 &)",
]


def added(patch: str, name: str) -> str:
    """The lines a patch adds to the new file `name`."""
    section = patch.split(f"+++ b/{name}\n", 1)[1].split("diff --git", 1)[0] if f"+++ b/{name}" in patch else ""
    return "\n".join(line[1:] for line in section.splitlines() if line.startswith("+"))


def test_probes_inside_a_cline_run_find_no_key_no_hidden_tests_no_outside_files_and_leave_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # as a notebook kernel started with the key holds it
    script = Script([Rule(reply=[
        Reply("Probing.", tool_calls=[tool_call("run_commands", commands=[" ; ".join(PROBES)])]),
        Reply("Done."),
    ])])
    task = load_house_suite().head(1)
    with ScriptedModelServer(script) as server, \
            Gateway({"agent": Upstream(server.base_url, SECRET, "openai-compatible")}) as gateway:
        rows = run_act(tasks=task, run_id="probes", model="gpt-4.1", base_url=server.base_url, api_key=SECRET,
                       results_root=tmp_path, progress=False, gateway=gateway, evaluate=False)
        sent = [r["authorization"] for r in server.requests]
    patch = rows["output"][0]
    assert rows["status"][0] == "completed" and "+++ b/probe_proc.txt" in patch, rows["error"][0]
    everything = patch + json.dumps(rows.to_dict("records"), default=str) + "".join(
        p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    assert SECRET not in everything  # not in the patch, the rows, the run records or the trajectories
    assert all(SECRET in header for header in sent)  # yet every model request carried it, from the gateway
    hidden = added(patch, "probe_hidden.txt")
    assert "No such file" in hidden and "tasks.json" not in hidden and ".cache" not in hidden, hidden
    home = added(patch, "probe_home.txt")
    assert "pyproject.toml" not in home and "act_results" not in home  # the checkout shows only what runs need
    cwd = added(patch, "probe_cwd.txt").splitlines()
    assert ".env" not in cwd and any(".env: No such file" in line for line in cwd)
    survivors = subprocess.run(["pgrep", "-f", DAEMON], capture_output=True, text=True).stdout.split()
    assert survivors == []
