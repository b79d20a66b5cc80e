"""Benchmark: every agent side by side (Cline, Claude Code, Codex, mini-swe-agent, opencode, Gemini CLI) on the same scripted model.

Per agent: wall and CPU seconds of one run alone, at a fixed model latency per turn, and the run_tasks
wall / ideal ratio at W=2 and W=4 workers, where ideal = ceil(N / W) x (one run's wall time alone).

    .venv/bin/python benchmarks/bench_agents.py [--tasks 8 --latency 2.0 --agents cline,claude-code,codex,opencode]

Each task is two model turns (an edit with the agent's own tool, then "done"; mini-swe-agent's one: the edit and
its submit command). CPU is that of the
agent's processes and everything they ran (their git and shell calls included), per run. The CPU floor,
N x CPU per run / cores, bounds any schedule: a ratio near floor / ideal is the machine, not the engine.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from helpers.core.registry import make_agent
from helpers.engine.runs import run_tasks
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call, tool_names
from calc_tasks import BUGGY, FIXED, tasks

MODELS = {"cline": "scripted-dry-run", "claude-code": "claude-sonnet-4-5", "codex": "gpt-5",  # each agent's own kind of id
          "mini-swe-agent": "gpt-5", "opencode": "gpt-5", "gemini-cli": "gemini-2.5-pro"}
SHELL_FIX = "sed -i 's/a - b/a + b/' calc.py"


def script(latency: float) -> Script:
    """Turn 1: fix calc.py with the tool the request offers; turn 2: done. Each turn takes `latency` s."""
    def edit(request: dict) -> Reply:
        tools = tool_names(request)
        if any(m.get("role") == "assistant" for m in request.get("messages") or []):
            return Reply("Done.", delay_s=latency)
        if "editor" in tools:
            call = tool_call("editor", path="calc.py", old_text=BUGGY, new_text=FIXED)
        elif "Bash" in tools:
            call = tool_call("Bash", command=SHELL_FIX)
        elif "bash" in tools:  # mini-swe-agent ends a run only on its submit command (opencode takes the echo as one more command)
            return Reply("Fixing.", tool_calls=[tool_call("bash", command=SHELL_FIX),
                                                tool_call("bash", command="echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")],
                         delay_s=latency)
        elif "run_shell_command" in tools:  # the Gemini CLI
            call = tool_call("run_shell_command", command=SHELL_FIX)
        else:
            call = tool_call("exec_command", cmd=SHELL_FIX)
        return Reply("Fixing.", tool_calls=[call], delay_s=latency)
    return Script([Rule(match=lambda r: bool(r.get("tools")), reply=edit)])


def timed_run(frame: pd.DataFrame, agent, workers: int, results: Path, run_id: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds per task) of one run_tasks call."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    df = run_tasks(frame, agent, run_id=run_id, experiment="bench-agents", workers=workers, evaluate=False,
                   results_root=results, progress=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if set(df.status) != {"completed"} or not all("a + b" in patch for patch in df.output):
        raise RuntimeError(f"{agent.name}: runs failed:\n{df[['instance_id', 'status', 'error']]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu / len(frame)


def measure(name: str, frame: pd.DataFrame, url: str, root: Path) -> dict:
    agent = make_agent(name, model=MODELS[name], base_url=url, api_key="bench-key")
    alone = [timed_run(frame.head(1).assign(instance_id=f"alone-{i}"), agent, 1, root, f"{name}-alone{i}") for i in range(2)]
    row = {"agent": name, "wall_alone_s": min(w for w, _ in alone), "cpu_per_run_s": min(c for _, c in alone)}
    for workers in (2, 4):
        wall, cpu = timed_run(frame, agent, workers, root, f"{name}-w{workers}")
        ideal = math.ceil(len(frame) / workers) * row["wall_alone_s"]
        row[f"wall_w{workers}_s"], row[f"ratio_w{workers}"] = wall, wall / ideal
        row[f"cpu_floor_ratio_w{workers}"] = len(frame) * cpu / (os.cpu_count() or 1) / ideal
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds the model takes per turn (default 2)")
    parser.add_argument("--agents", default=",".join(MODELS), help="comma-separated agent names")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-agents-") as tmp, ScriptedModelServer(script(args.latency)) as server:
        frame = tasks(Path(tmp), args.tasks)
        for name in args.agents.split(","):
            rows.append(measure(name.strip(), frame, server.base_url, Path(tmp) / "results"))
    table = pd.DataFrame(rows).set_index("agent").round(2)
    print(f"{args.tasks} tasks, 2 turns each, model latency {args.latency:.1f} s per turn, {os.cpu_count()} cores")
    print(table.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
