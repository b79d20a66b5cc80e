"""The scripted dry run: the whole loop with no key, every model role played by the scripted server.

It is a demonstration of the machinery, not a result, and is labeled SCRIPTED DRY RUN wherever its
numbers appear. On the bundled house suite:
- the agent (the real agent CLI, scripted model) edits the files with the task's naive fix (fixes the bug,
  breaks a house convention) unless the rules it was given (in the system message, or in the project
  instructions some agents send in a user message) state every convention the task's hidden tests
  check; then it writes the gold fix. It edits with the tools the request offers: an `editor` or
  `apply_patch` tool, else a shell tool (`Bash`, `exec_command`) running `git apply` on the patch;
- the judge explains a failure by the convention the failing test checks;
- the optimizer adds a rule (the convention's rule sentence) for the conventions that failed most,
  at most MAX_NEW_RULES per call, so learning shows up over several loops.
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text, tool_call, tool_names
from helpers.families.coding.git import git
from helpers.families.coding.workspaces import prepare_workspace

MAX_NEW_RULES = 3
PLAN_MODE_MARKER = "you are in plan mode"  # agents' plan-mode system prompts say so (matched without case)
PLAN_MODE_ACTIVE = "plan mode is active"  # ... or the plan-mode reminder some agents put in the user message
# Tools that run a shell command, and the argument that takes it.
SHELL_TOOLS = {"Bash": "command", "exec_command": "cmd"}
PATCH_END = "PL_DRY_RUN_PATCH_END"  # the heredoc delimiter of a `git apply` command


class DryRunScript:
    """Builds the replies of all three roles from the house suite's tasks and conventions."""

    def __init__(self, tasks: Any = None, conventions: dict[str, dict] | None = None):
        from helpers.families.coding.house_suite import CONVENTIONS
        from helpers.families.coding.tasks import load_house_suite

        frame = tasks if tasks is not None else load_house_suite()
        self.tasks = {row["instance_id"]: dict(row) for _, row in frame.iterrows()}
        self.conventions = conventions or CONVENTIONS
        self._edits: dict[tuple[str, str], list[dict]] = {}
        self._lock = threading.Lock()

    # --- which task, which rules ---
    def task_in(self, text: str) -> dict | None:
        for task in self.tasks.values():
            if task["instance_id"] in text or _snippet(task["problem_statement"]) in text:
                return task
        return None

    def known_conventions(self, rules_text: str) -> set[str]:
        return {cid for cid, c in self.conventions.items() if c["rule"] in rules_text}

    # --- the agent ---
    def agent_reply(self, request: dict) -> Reply:
        task = self.task_in(message_text(request, "user"))
        if task is None:
            return Reply("I could not find a task I know in this request (scripted dry run).")
        system, user = message_text(request, "system"), message_text(request, "user")
        known = self.known_conventions(system + "\n" + user)  # rules may come as user context
        knows_all = set(task["conventions"]) <= known
        if PLAN_MODE_MARKER in system.lower() or PLAN_MODE_ACTIVE in user.lower():  # plan mode: the plan, no tools
            return Reply(self.plan_for(task, known))
        variant = "patch" if knows_all else "naive_patch"
        if any(m.get("role") == "assistant" for m in request.get("messages") or []):
            return Reply(f"Done: applied the {'convention-following' if knows_all else 'quick'} fix "
                         f"for {task['instance_id']} (scripted dry run).")
        return Reply("Fixing the issue (scripted dry run).", tool_calls=self.edits_for(task, variant, tool_names(request)))

    def plan_for(self, task: dict, known: set[str]) -> str:
        """A plan that names the house conventions the rules taught (scripted dry run)."""
        steps = [f"Plan for {task['instance_id']} (scripted dry run):",
                 f"1. Change the code so that: {task['problem_statement'].splitlines()[0]}."]
        steps += [f"{n}. Follow the house convention: {self.conventions[c]['title']}."
                  for n, c in enumerate(sorted(known & set(task["conventions"])), 2)]
        return "\n".join(steps)

    def edits_for(self, task: dict, variant: str, tools: list[str] | tuple[str, ...] = ("editor",)) -> list[dict]:
        """Tool calls, with tools from `tools`, that turn the base commit into the base commit + the task's
        patch: `editor` (whole files) or `apply_patch` calls, else a shell tool running `git apply`."""
        if "editor" in tools or "apply_patch" in tools:
            kind = "editor" if "editor" in tools else "apply_patch"
            key = (task["instance_id"], variant, kind)
            with self._lock:
                if key not in self._edits:
                    self._edits[key] = _patch_as_edits(task, task[variant], kind)
                return self._edits[key]
        shell = next((tool for tool in SHELL_TOOLS if tool in tools), None)
        if shell is None:
            raise ValueError(f"The request offers no tool the dry run can edit with (offered: {sorted(tools)}).")
        command = f"git apply --whitespace=nowarn <<'{PATCH_END}'\n{task[variant].rstrip()}\n{PATCH_END}"
        return [tool_call(shell, **{SHELL_TOOLS[shell]: command})]

    # --- the judge ---
    def judge_reply(self, request: dict) -> Reply:
        text = message_text(request, "user")
        task = self.task_in(text)
        if task is None:
            return Reply(json.dumps({"correctness": "incorrect", "explanation": "Unknown task (scripted dry run)."}))
        passed = bool(re.search(r"(?im)^\s*(?:test )?(?:outcome|result|pass_or_fail)\s*:\s*pass", text))
        titles = [self.conventions[c]["title"] for c in task["conventions"]]
        if re.search(r"(?im)^outcome: not run", text):  # plan mode: does the plan name every convention?
            passed = all(title in text for title in titles)
        if passed:
            explanation = (f"The patch fixes the reported bug and follows the house conventions the tests "
                           f"check ({'; '.join(titles)}).")
            answer = {"correctness": "correct", "explanation": explanation}
        else:
            broken = [c for c in task["conventions"] if self.conventions[c]["rule"] not in message_text(request)]
            parts = [f"it breaks the house convention '{self.conventions[c]['title']}' "
                     f"({self.conventions[c]['check']})" for c in task["conventions"]]
            habit = " ".join(self.conventions[c]["rule"] for c in task["conventions"])
            explanation = (f"The patch fixes the reported behaviour, but {'; '.join(parts)}. "
                           f"A general habit that avoids this: {habit}")
            answer = {"correctness": "incorrect", "explanation": explanation, "conventions": broken}
        return Reply(json.dumps({**answer, "note": "scripted dry run"}))

    # --- the optimizer ---
    def optimizer_reply(self, request: dict) -> Reply:
        text = message_text(request, "user")
        rules, _, examples = text.partition("## Examples")
        text = examples
        failing = Counter()
        for iid, chunk in _chunks_by_instance(text, self.tasks):
            if re.search(r"\bincorrect\b", chunk):
                failing.update(self.tasks[iid]["conventions"])
        known = self.known_conventions(rules.partition("## Current rules")[2])
        new = [cid for cid, _ in failing.most_common() if cid not in known][:MAX_NEW_RULES]
        edits = []
        for cid in new:
            sources = [iid for iid, chunk in _chunks_by_instance(text, self.tasks)
                       if cid in self.tasks[iid]["conventions"] and re.search(r"\bincorrect\b", chunk)]
            edits.append({"op": "add", "text": self.conventions[cid]["rule"],
                          "reason": f"Patches failed the '{self.conventions[cid]['title']}' check (scripted dry run).",
                          "sources": sources})
        return Reply(json.dumps({"edits": edits}))

    def script(self) -> Script:
        from helpers.learn.judge import JUDGE_SYSTEM_PROMPT
        from helpers.learn.optimizer import OPTIMIZER_SYSTEM_PROMPT

        return Script([
            Rule(system_contains=_first_line(JUDGE_SYSTEM_PROMPT), reply=self.judge_reply),
            Rule(system_contains=_first_line(OPTIMIZER_SYSTEM_PROMPT), reply=self.optimizer_reply),
            Rule(match=lambda request: bool(request.get("tools")), reply=self.agent_reply),  # agents bring tools
        ], default=Reply("This is the scripted dry-run model; it has no answer for this request."))


def start_dry_run_server(tasks: Any = None) -> ScriptedModelServer:
    """A started scripted server playing agent, judge and optimizer; stop() it when done."""
    return ScriptedModelServer(DryRunScript(tasks).script()).start()


def _snippet(problem_statement: str) -> str:
    return problem_statement.strip()[:80]


def _first_line(prompt: str) -> str:
    return prompt.strip().splitlines()[0][:120]


def _chunks_by_instance(text: str, tasks: dict[str, dict]) -> list[tuple[str, str]]:
    """(instance id, the text from its mention up to the next task's) for each task in `text`."""
    positions = sorted((text.find(iid), iid) for iid in tasks if iid in text)
    return [(iid, text[pos:(positions[i + 1][0] if i + 1 < len(positions) else len(text))])
            for i, (pos, iid) in enumerate(positions)]


def _patch_as_edits(task: dict, patch: str, kind: str = "editor") -> list[dict]:
    """Apply `patch` in a scratch clone and express the result as tool calls: whole-file `editor`
    calls, or one `apply_patch` call (its `*** Begin Patch` grammar, every old line out, every new in)."""
    with tempfile.TemporaryDirectory(prefix="dry-run-") as scratch:
        workspace = prepare_workspace(task, scratch)
        applied = git("apply", "--whitespace=nowarn", "-", cwd=workspace, input=patch, check=False)
        if applied.returncode != 0:
            raise ValueError(f"{task['instance_id']}: the scripted patch does not apply: {applied.stderr}")
        git("add", "-A", cwd=workspace)
        changes = git("diff", "--cached", "--name-status", "HEAD", cwd=workspace).stdout.splitlines()
        calls, sections = [], []
        for line in changes:
            status, path = line.split("\t")[0], line.split("\t")[-1]
            old = git("show", f"HEAD:{path}", cwd=workspace, check=False)
            old_text = old.stdout if old.returncode == 0 and not status.startswith("A") else ""
            new_text = "" if status.startswith("D") else (Path(workspace) / path).read_text()
            if status.startswith("D"):
                calls.append(tool_call("run_commands", commands=[f"rm -f {path}"]))
                sections.append(f"*** Delete File: {path}")
            elif not old_text:
                calls.append(tool_call("editor", path=path, new_text=new_text))
                sections.append(f"*** Add File: {path}\n" + "".join(f"+{l}\n" for l in new_text.splitlines()))
            else:
                calls.append(tool_call("editor", path=path, old_text=old_text, new_text=new_text))
                sections.append(f"*** Update File: {path}\n@@\n" + "".join(f"-{l}\n" for l in old_text.splitlines())
                                + "".join(f"+{l}\n" for l in new_text.splitlines()))
        if kind == "apply_patch":
            body = "".join(s if s.endswith("\n") else s + "\n" for s in sections)
            return [tool_call("apply_patch", input=f"*** Begin Patch\n{body}*** End Patch")]
        return calls

__all__ = ["DryRunScript", "start_dry_run_server"]  # the public API, documented in CODE_APPENDIX.md
