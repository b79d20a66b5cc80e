"""The scripted dry run: the whole loop with no key, every model role played by the scripted server.

It is a demonstration of the machinery, not a result, and is labeled SCRIPTED DRY RUN wherever its
numbers appear. On the bundled house suite:
- the agent (the real agent CLI, scripted model) edits the files with the task's naive fix (fixes the bug,
  breaks a house convention) unless the rules it was given (in the system message, or in the project
  instructions some agents send in a user message) name every convention the task's hidden tests
  check; then it writes the gold fix. A rule names a convention when one line of it holds every group of
  the convention's KEY_WORDS (a rule in the reader's own words counts: "Put a line under ## Unreleased in
  the changelog" names `changelog`). It edits with the tools the request offers: an `editor` or
  `apply_patch` tool, else a shell tool (`Bash`, `exec_command`) running `git apply` on the patch;
- the judge explains a failure by what it sees: the hidden tests that failed and the conventions they
  check; it leaves the general habit to the optimizer;
- an init run (the agent's own /init, or the project's init prompt) reads README.md and CONTRIBUTING.md and
  writes the rules file asked for with the conventions they state, word for word: so the init arm knows the
  documented conventions only (two of each house library's), and learning has the others to find;
- the optimizer reads the feedback on every failing example (the judge's explanations; in continual mode a
  reviewer's comment or a CI failure), counts the conventions it names (by title or key words), and adds a rule (the convention's rule sentence) for those named most, with the examples that
  named it as its sources, at most MAX_NEW_RULES per call, so learning shows up over several loops.
A prompt's wording (JUDGE_PROMPT, OPTIMIZER_PROMPT) changes nothing here: the script answers the request
the code writes, whatever the instructions say; the instructions are recorded with every ruleset version.
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
from typing import Any, Mapping, Sequence

from helpers.core.wording import counted
from helpers.core.fences import outside_fences
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text
from helpers.stand_ins.file_edit_tools import ShellTool, choose_adapter, edit_tools_of_registered_agents, offered_tools

MAX_NEW_RULES = 3
OPTIMIZER_REQUEST_MARK = "## Current rules\n"  # helpers.learn.optimizer's request, whatever its instructions
JUDGE_REQUEST_MARK = "## Issue\n"  # helpers.learn.judge's request, whatever its instructions
PLAN_MODE_MARKER = "you are in plan mode"  # agents' plan-mode system prompts say so (matched without case)
PLAN_MODE_ACTIVE = "plan mode is active"  # ... or the plan-mode reminder some agents put in the user message
# The files an agent's init may be asked to write; the prompt names the one it asks for first
INIT_FILES = (".clinerules", "GEMINI.md", "CLAUDE.md", "AGENTS.md")


def init_file_asked(user_text: str) -> str | None:
    """The rules file a request with no known task asks the agent to create (an init run), or None."""
    asks = re.search(r"(?i)\b(?:create|generate|write|analy[sz]e)\b", user_text)
    named = [(user_text.find(name), name) for name in INIT_FILES if name in user_text]
    return min(named)[1] if asks and named else None  # the first named: a prompt may list others it reads


# How the scripted agent recognises a house convention in rules written in anyone's words: one line holds a match
# of every pattern (case-insensitive). Documented for readers in docs/workshop.md; a convention without key words
# (a mined repository's) is recognised by its rule sentence only.
KEY_WORDS: dict[str, tuple[str, ...]] = {
    "errors": (
        r"\bexceptions?\b|\berror (?:class|classes|types?)\b|\berrors module\b",
        r"\bown\b|\bcustom\b|\bsubclass|\bbare\b|\bvalueerror\b|\bkeyerror\b",
    ),
    "changelog": (r"change ?log", r"\bunreleased\b"),
    "logging": (r"\blog(?:ger|ging)\b", r"\bprint\b"),
    "docs_types": (r"\btype hints?\b|\btype annotations?\b|\bannotat|\btyped\b", r"\bdocstrings?\b"),
    "registry": (r"\bregist(?:er|ry|ered|ers)\b", r"\bexporters?\b"),
    "decimal": (r"\bdecimals?\b", r"\bmoney\b|\bamounts?\b|\bfloats?\b|\bcents?\b"),
    "cli_help": (r"\bhelp(?:=| text| string| message)", r"\boptions?\b|\bsubcommands?\b|\barguments?\b|\bflags?\b"),
    "cli_exit": (
        r"\bexit(?:[- ]status| status| code)s?\b|\bstatus constants?\b|\bfail\(",
        r"\bnamed\b|\bconstants?\b|\bfail\(",
    ),
    "rows_pure": (
        r"\btransforms?\b",
        r"\b(?:never|not|don't|do not) (?:change|modify|mutate|alter)|\bunchanged\b|\bin[- ]place\b"
        r"|\bnew (?:rows?|dicts?)\b|\bmutat",
    ),
    "rows_missing": (r"\b(?:missing|absent|empty) values?\b", r"\bnone\b"),
}


def named_conventions(text: str, conventions: Mapping[str, Mapping[str, str]]) -> set[str]:
    """The conventions `text` names: one of its lines (any case; `_` read as a space, so a test's name reads as
    words) holds every key-word pattern of the convention (KEY_WORDS), or, for a convention without key words, the
    text holds its rule sentence."""
    lines = [line.lower().replace("_", " ") for line in text.splitlines()]  # a test's name reads as words
    named = set()
    for cid, convention in conventions.items():
        patterns = KEY_WORDS.get(cid)
        if patterns is None:
            if convention["rule"] in text:
                named.add(cid)
        elif any(all(re.search(p, line) for p in patterns) for line in lines):
            named.add(cid)
    return named


class DryRunScript:
    """Builds the replies of all three roles from the house suite's tasks and conventions."""

    def __init__(
        self,
        tasks: Any = None,
        conventions: dict[str, dict] | None = None,
        edit_tools: Sequence[Any] | None = None,
        agent: str | None = None,
    ):
        from helpers.families.coding.house_suite import CONVENTIONS
        from helpers.families.coding.tasks import load_house_suite

        frame = tasks if tasks is not None else load_house_suite()
        # a task without conventions (mined from a team's history) is one the scripted agent fixes with its gold patch
        self.tasks = {row["instance_id"]: {"conventions": [], **dict(row)} for _, row in frame.iterrows()}
        self.conventions = conventions or CONVENTIONS
        # how to edit with each agent's tools (None: every registered agent's dry_run_tools, `agent`'s first)
        self.edit_tools = list(edit_tools) if edit_tools is not None else edit_tools_of_registered_agents(agent)
        self._edits: dict[tuple[str, str, Any], list[dict]] = {}
        self._lock = threading.Lock()

    # --- which task, which rules ---
    def task_in(self, text: str) -> dict | None:
        for task in self.tasks.values():
            if task["instance_id"] in text or _snippet(task["problem_statement"]) in text:
                return task
        return None

    def known_conventions(self, rules_text: str) -> set[str]:
        """The conventions the rules name, in the rule sentence's words or the reader's (KEY_WORDS)."""
        return named_conventions(rules_text, self.conventions)

    # --- the agent ---
    def agent_reply(self, request: dict) -> Reply:
        task = self.task_in(message_text(request, "user"))
        if task is None and init_file_asked(message_text(request, "user")):
            return self.init_reply(request)
        if task is None:
            return Reply("I could not find a task I know in this request (scripted dry run).")
        system, user = message_text(request, "system"), message_text(request, "user")
        known = self.known_conventions(system + "\n" + user)  # rules may come as user context
        knows_all = set(task["conventions"]) <= known
        if PLAN_MODE_MARKER in system.lower() or PLAN_MODE_ACTIVE in user.lower():  # plan mode: the plan, no tools
            return Reply(self.plan_for(task, known))
        variant = "patch" if knows_all else "naive_patch"
        if any(m.get("role") == "assistant" for m in request.get("messages") or []):
            return Reply(
                f"Done: applied the {'convention-following' if knows_all else 'quick'} fix "
                f"for {task['instance_id']} (scripted dry run)."
            )
        return Reply(
            "Fixing the issue (scripted dry run).", tool_calls=self.edits_for(task, variant, offered_tools(request))
        )

    # --- the agent's own init (/init): a rules file written from what the repository documents ---
    def init_reply(self, request: dict) -> Reply:
        """An init run, in three turns through the agent's own shell tool: read README.md and CONTRIBUTING.md;
        write the file the prompt asks for (INIT_FILES) with the conventions those documents state, word for word
        (so the init file teaches the documented conventions only); then say it is done."""
        shell = choose_adapter([t for t in self.edit_tools if isinstance(t, ShellTool)], offered_tools(request))
        if shell is None:
            return Reply("The request offers no shell tool to read the repository with (scripted dry run).")
        turn = sum(1 for m in request.get("messages") or [] if m.get("role") == "assistant")
        if turn == 0:  # a plain step: an agent that submits with its last command must not submit yet
            return Reply(
                "Reading the repository's documents (scripted dry run).",
                tool_calls=ShellTool.step(shell, "cat README.md CONTRIBUTING.md"),
            )
        target = init_file_asked(message_text(request, "user"))
        if turn == 1:
            read = _unescaped("\n".join(message_text(request, role) for role in ("tool", "user")))
            rules = [self.conventions[c]["rule"] for c in sorted(self.known_conventions(read))]
            text = "\n".join(
                [
                    "# Repository Guidelines",
                    "",
                    "Written by the scripted dry run's init from README.md and CONTRIBUTING.md.",
                    "",
                    "## Conventions",
                    *[f"- {rule}" for rule in rules],
                    "",
                    "## Build and test",
                    "Run `python -m pytest`.",
                    "",
                ]
            )
            # base64, so that no shell (nor an agent's screen for command substitution) reads the rules' backticks
            encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
            return Reply(
                f"Writing {target} (scripted dry run).",
                tool_calls=shell.step(f"printf %s {encoded} | base64 -d > {target}"),
            )
        return Reply(f"Wrote {target} (scripted dry run).")

    def plan_for(self, task: dict, known: set[str]) -> str:
        """A plan that names the house conventions the rules taught (scripted dry run)."""
        steps = [
            f"Plan for {task['instance_id']} (scripted dry run):",
            f"1. Change the code so that: {task['problem_statement'].splitlines()[0]}.",
        ]
        steps += [
            f"{n}. Follow the house convention: {self.conventions[c]['title']}."
            for n, c in enumerate(sorted(known & set(task["conventions"])), 2)
        ]
        return "\n".join(steps)

    def plan_verdict(self, task: dict, text: str) -> dict[str, Any]:
        """The judge on a plan (plan mode: nothing was run): correct when the plan names every house convention
        the task's hidden tests check; otherwise the explanation says, in a plan's terms, how many of them its
        steps name and which it leaves out, by title (what the optimizer reads), never a patch's verdict."""
        missing = [c for c in task["conventions"] if self.conventions[c]["title"] not in text]
        named = len(task["conventions"]) - len(missing)
        if not missing:
            return {
                "correctness": "correct",
                "explanation": f"The plan addresses the issue and names every house "
                f"convention the change must keep ({counted(named, 'convention')}).",
            }
        parts = [
            f"'{self.conventions[c]['title']}' (the hidden tests check: {self.conventions[c]['check']})"
            for c in missing
        ]
        return {
            "correctness": "incorrect",
            "explanation": (
                "The plan addresses the issue"
                + (f" and names {named} of the conventions the change must keep" if named else "")
                + f", but no step keeps the house convention"
                f"{'s' if len(parts) > 1 else ''} {' and '.join(parts)}: a change made from this plan would fail "
                f"those tests."
            ),
        }

    def edits_for(self, task: dict, variant: str, offered: Mapping[str, frozenset[str] | None]) -> list[dict]:
        """Tool calls, with the first declared edit tool the request offers (by name and arguments: see
        helpers.stand_ins.file_edit_tools), that turn the base commit into the base commit + the task's `variant` patch."""
        adapter = choose_adapter(self.edit_tools, offered)
        if adapter is None:
            raise ValueError(
                f"The request offers no tool the dry run can edit with (offered: {sorted(offered)}; "
                f"known: {[a.tool for a in self.edit_tools]}): declare the agent's dry_run_tools."
            )
        key = (task["instance_id"], variant, adapter)
        with self._lock:
            if key not in self._edits:
                self._edits[key] = adapter.calls(task, task[variant])
            return self._edits[key]

    # --- the judge ---
    def judge_reply(self, request: dict) -> Reply:
        text = message_text(request, "user")
        task = self.task_in(text)
        if task is None:
            return Reply(json.dumps({"correctness": "incorrect", "explanation": "Unknown task (scripted dry run)."}))
        passed = bool(
            re.search(r"(?im)^\s*(?:test )?(?:outcome|result|pass_or_fail)\s*:\s*pass", outside_fences(text))
        )  # the host's grade, never a line the agent fenced in
        titles = [self.conventions[c]["title"] for c in task["conventions"]]
        if re.search(r"(?im)^outcome: not run", text):  # plan mode: a plan is judged as a plan
            return Reply(json.dumps({**self.plan_verdict(task, text), "note": "scripted dry run"}))
        if re.search(
            r"(?im)^outcome: not run", outside_fences(text)
        ):  # plan mode: does the plan name every convention?
            passed = all(title in text for title in titles)
        if passed:
            explanation = (
                f"The patch fixes the reported bug and follows the house conventions the tests "
                f"check ({'; '.join(titles)})."
            )
            answer = {"correctness": "correct", "explanation": explanation}
        else:
            failing = re.search(r"(?im)^failing tests:\s*(.+)$", text)
            tests = f"the hidden tests {failing.group(1).strip()} fail" if failing else "the hidden tests fail"
            parts = [
                f"'{self.conventions[c]['title']}' (checked: {self.conventions[c]['check']})"
                for c in task["conventions"]
            ]
            explanation = (
                f"The patch fixes the reported behaviour, but {tests}: it breaks the house "
                f"convention{'s' if len(parts) > 1 else ''} {' and '.join(parts)}."
            )
            answer = {"correctness": "incorrect", "explanation": explanation}
        return Reply(json.dumps({**answer, "note": "scripted dry run"}))

    # --- the optimizer ---
    def optimizer_reply(self, request: dict) -> Reply:
        """Edits written from the feedback: each failing example's feedback (the judge's explanation, a review
        comment, a CI failure) names the conventions its patch broke; the conventions named most, and not in the
        current rules, become rules, each citing the examples whose feedback named it."""
        text = message_text(request, "user")
        rules, _, examples = text.partition("## Examples")
        named: dict[str, list[str]] = {}
        for iid, chunk in _chunks_by_instance(examples, self.tasks):
            if re.search(r"\bincorrect\b", chunk):
                for cid in self._named_in(chunk):
                    named.setdefault(cid, []).append(iid)
        known = self.known_conventions(rules.partition("## Current rules")[2])
        ranked = sorted((cid for cid in named if cid not in known), key=lambda cid: -len(named[cid]))
        edits = []
        for cid in ranked[:MAX_NEW_RULES]:
            convention, sources = self.conventions[cid], named[cid]
            said = "1 example says its patch" if len(sources) == 1 else f"{len(sources)} examples says their patches"
            edits.append(
                {
                    "op": "add",
                    "text": convention["rule"],
                    "reason": f"The feedback on {said} broke '{convention['title']}' (the hidden tests "
                    f"check: {convention['check']}); the rule states that habit for every task "
                    f"(scripted dry run).",
                    "sources": sources,
                }
            )
        return Reply(json.dumps({"edits": edits}))

    def _named_in(self, example: str) -> list[str]:
        """The conventions an example's feedback names: by their titles (the judge's explanations), in the order
        it names them, then by their key words (a reviewer's comment, a CI failure's message). Only the feedback
        is read (after "Feedback:", when the example has that part), never the task or the patch."""
        feedback = example.split("Feedback:", 1)[1] if "Feedback:" in example else example
        found = sorted(
            (feedback.find(c["title"]), cid) for cid, c in self.conventions.items() if c["title"] in feedback
        )
        titled = [cid for _, cid in found]
        return titled + sorted(
            named_conventions(feedback, self.conventions) - set(titled), key=list(self.conventions).index
        )

    # --- the check of a learned rule by meaning ---
    def rule_check_reply(self, request: dict) -> Reply:
        """The scripted answer to helpers.learn.rule_check: the floor's verdict on the fenced rule, said to be
        scripted (a real run asks the judge's model)."""
        from helpers.rules.planted import harm_categories, planted_reasons

        rule = re.search(r"(?s)^<<<DATA-(\w+) [^\n]*>>>\n(.*?)\n?<<<END-\1>>>$", message_text(request, "user"), re.M)
        reasons = planted_reasons(rule.group(2) if rule else "")
        categories = harm_categories(reasons)
        return Reply(
            json.dumps(
                {
                    "harmful": bool(categories),
                    "category": categories[0] if categories else "none",
                    "reason": "scripted dry run: the floor's reading" + (f" ({'; '.join(reasons)})" if reasons else ""),
                    "note": "scripted dry run",
                }
            )
        )

    def script(self) -> Script:
        from helpers.learn.judge import JUDGE_SYSTEM_PROMPT
        from helpers.learn.optimizer import OPTIMIZER_SYSTEM_PROMPT
        from helpers.learn.rule_check import RULE_CHECK_PROMPT

        return Script(
            [
                Rule(system_contains=_first_line(RULE_CHECK_PROMPT), reply=self.rule_check_reply),
                Rule(system_contains=_first_line(JUDGE_SYSTEM_PROMPT), reply=self.judge_reply),
                Rule(system_contains=_first_line(OPTIMIZER_SYSTEM_PROMPT), reply=self.optimizer_reply),
                Rule(match=lambda request: bool(request.get("tools")), reply=self.agent_reply),  # agents bring tools
                # A reader's own instructions (JUDGE_PROMPT, OPTIMIZER_PROMPT) change the system message, not the
                # request our code writes: the optimizer's names the current rules, the judge's the issue.
                Rule(user_contains=OPTIMIZER_REQUEST_MARK, reply=self.optimizer_reply),
                Rule(user_contains=JUDGE_REQUEST_MARK, reply=self.judge_reply),
            ],
            default=Reply("This is the scripted dry-run model; it has no answer for this request."),
        )


def start_dry_run_server(tasks: Any = None, agent: str | None = None) -> ScriptedModelServer:
    """A started scripted server playing agent, judge and optimizer (editing with `agent`'s tools first, when
    given); stop() it when done."""
    return ScriptedModelServer(DryRunScript(tasks, agent=agent).script()).start()


def _unescaped(text: str) -> str:
    """What the shell printed, however the agent passed it on: as JSON string escapes (mini-swe-agent's
    observation: \\u0027, \\n, \\") or as HTML entities."""
    text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    return html.unescape(text.replace("\\n", "\n").replace('\\"', '"'))


def _snippet(problem_statement: str) -> str:
    return problem_statement.strip()[:80]


def _first_line(prompt: str) -> str:
    return prompt.strip().splitlines()[0][:120]


def _chunks_by_instance(text: str, tasks: dict[str, dict]) -> list[tuple[str, str]]:
    """(instance id, the text from its mention up to the next task's) for each task in `text`."""
    positions = sorted((text.find(iid), iid) for iid in tasks if iid in text)
    return [
        (iid, text[pos : (positions[i + 1][0] if i + 1 < len(positions) else len(text))])
        for i, (pos, iid) in enumerate(positions)
    ]


__all__ = [
    "DryRunScript",
    "start_dry_run_server",
    "named_conventions",
    "KEY_WORDS",
]  # the public API, documented in CODE_APPENDIX.md
