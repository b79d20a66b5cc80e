"""One loop, a step at a time, each step shown: the steps run_one_loop calls (helpers.engine.loop.LoopSteps),
called one by one by a notebook.

    steps = loop_in_steps(train_df, test_df, settings, session, datasets=datasets, val_df=val_df)
    steps.run_agent();  steps.show_runs()        # 1. the agent on every split; each patch tested
    steps.show_tests()                           # 2. which hidden tests failed, and their messages
    steps.judge();      steps.show_judged()      # 3. the judge's English (then both splits logged to Phoenix)
    steps.show_meta_prompt()                     # 4. the block the optimizer reads
    steps.optimize();   steps.show_edits()       # 5. the optimizer's edits, saved with the loop's record

Whatever calls the steps writes exactly what run_loop writes (it is run_loop's own loop body), so run_loop
called afterwards resumes after this loop. A loop already finished is shown from its saved rows and the
version it made: nothing runs, no model is asked, nothing is logged or saved again. Each `show_*`
is one output: its text and, last, a sentence drawn from the data saying what to see in it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from helpers.engine.journey import MAX_DIFF_LINES, _cut, _outcome, _step
from helpers.core.protocols import RunContext
from helpers.engine.loop import LoopSteps, meta_prompt, start_experiment
from helpers.engine.settings import LoopSettings
from helpers.rules.rules_file import RulesFile

SPLIT_NAMES = {"train": "training", "val": "validation", "test": "test"}


class StepView:
    """One step's output: text sections ("text" or "diff") and, last, what to see. Markdown in Jupyter (a diff as
    a ```diff block), plain text headless."""

    def __init__(self, sections: list[tuple[str, str]], what_to_see: str):
        self.sections, self.what_to_see = sections, what_to_see

    def _repr_markdown_(self) -> str:
        blocks = [f"```{'diff' if kind == 'diff' else 'text'}\n{text}\n```" for kind, text in self.sections]
        return "\n\n".join(blocks + [f"**What to see:** {self.what_to_see}"])

    def __repr__(self) -> str:
        return "\n\n".join([text for _, text in self.sections] + [f"What to see: {self.what_to_see}"])


class ShownLoopSteps(LoopSteps):
    """LoopSteps (the loop's own steps), and what each step shows."""

    # --- what each step shows ---
    def show_runs(self) -> StepView:
        """Each training task and its outcome, every split's count, and the first failing training task's diff."""
        train = self.runs["train"]
        failed = [
            len(_step(self.loop, self.version, r)["failed_tests"].split(", "))
            if r.get("failed_tests") not in (None, "", "[]", [])
            else 0
            for r in train.to_dict("records")
        ]
        table = train[["instance_id", "status", "pass_or_fail"]].assign(failing_tests=failed).to_string(index=False)
        counts = "; ".join(
            f"{(f['pass_or_fail'] == 'pass').sum()} of {len(f)} {SPLIT_NAMES.get(s, s)} tasks"
            for s, f in self.runs.items()
        )
        sections = [("text", f"{table}\n\nPassed: {counts}.")]
        see = f"with rules version {self.version} ({self._rules_said()}), the agent passed {counts}."
        failing = train[train["pass_or_fail"] != "pass"]
        if len(failing):
            row = failing.iloc[0]
            diff = str(row.get("output") or "") or "(empty: the agent changed nothing)"
            sections.append(("diff", f"{row['instance_id']}'s diff:\n" + _cut(diff, MAX_DIFF_LINES)))
            files = sum(1 for line in diff.splitlines() if line.startswith("diff --git"))
            see += (
                f" The diff is {row['instance_id']}'s: {files} file{'s' if files != 1 else ''} changed, and it failed."
            )
        return StepView(sections, see)

    def show_tests(self) -> StepView:
        """Each failing training task's failing hidden tests and their messages."""
        train = self.runs["train"].to_dict("records")
        failing = [row for row in train if row.get("pass_or_fail") != "pass"]
        blocks = [f"{row['instance_id']}\n{_outcome(_step(self.loop, self.version, row))}" for row in failing]
        tests = [t for row in failing for t in _step(self.loop, self.version, row)["failed_tests"].split(", ") if t]
        see = (
            f"{len(failing)} of {len(train)} training patches failed, {len(tests)} hidden tests in all "
            f"({len(set(tests))} different)."
            if failing
            else f"all {len(train)} training patches passed their tests."
        )
        if failing:
            see += " The tests' names say what each checks; the judge reads them, and their messages, next."
        return StepView([("text", "\n\n".join(blocks) or "(no failing test)")], see)

    def show_judged(self, explanations: int = 2) -> StepView:
        """The judge's explanations of the first `explanations` failing training results (else the first rows)."""
        rows = self.judged().to_dict("records")
        chosen = [r for r in rows if r.get("correctness") == "incorrect"][:explanations] or rows[:explanations]
        text = "\n\n".join(
            f"{r['instance_id']}: {r.get('correctness') or 'not judged'}\n{r.get('explanation') or r.get('judge_error')}"
            for r in chosen
        )
        incorrect = sum(r.get("correctness") == "incorrect" for r in rows)
        errors = sum(bool(r.get("judge_error")) for r in rows)
        see = (
            f"the judge explained {len(rows) - errors} of {len(rows)} training results ({incorrect} incorrect"
            f"{f', {errors} it could not answer' if errors else ''}). Each explanation says what this patch broke; "
            "the general habit is left to the optimizer, which reads them all."
        )
        return StepView([("text", text)], see)

    def show_meta_prompt(self, output_lines: int = 8) -> StepView:
        """The meta-prompt's user message as the optimizer reads it (the current rules, then the first training
        example), the example's patch cut to `output_lines` lines; the instructions before it are section 3's."""
        from helpers.core.tokens import count_tokens
        from helpers.learn.examples import render_example

        train = self.judged()
        whole = meta_prompt(self.optimizer, train, self.ruleset, examples=len(train))
        example = render_example(train.iloc[0].to_dict(), "output", self.family.feedback_columns)
        head, marked, rest = example.partition("Output (output):\n")
        patch, _, feedback = rest.partition("\n\nFeedback:")
        if marked and feedback:  # the patch cut, the feedback whole
            kept = patch.splitlines()
            fenced = len(kept) > 1 and kept[0].startswith("<<<DATA-") and kept[-1].startswith("<<<END-")
            opening, body, closing = (kept[:1], kept[1:-1], kept[-1:]) if fenced else ([], kept, [])  # the fence kept
            more = (
                (f"[... {len(body) - output_lines} more lines of the patch ...]",) if len(body) > output_lines else ()
            )
            cut = "\n".join([*opening, *body[:output_lines], *more, *closing])
            example = f"{head}Output (output):\n{cut}\n\nFeedback:{feedback}"
        rules = whole.split("## Current rules\n", 1)[-1].split("\n\n", 1)[0]
        others = len(train) - 1
        block = f"## Current rules\n{rules}\n\n## Examples\n{example}" + (
            f"\n\n[... {others} more example{'s' if others != 1 else ''} ...]" if others else ""
        )
        see = (
            f"the optimizer reads the current rules ({self._rules_said()}) and all {len(train)} training "
            f"examples like this one, each with its patch, its outcome and the judge's explanation: "
            f"{count_tokens(whole):,} tokens with its instructions, sent in batches under CONTEXT_SIZE_K."
        )
        return StepView([("text", block)], see)

    def show_edits(self) -> StepView:
        """Each edit the optimizer made, with its reason and sources; each refused one, with why."""
        report = self.report
        lines = [
            f"{e.get('op')}: {e.get('text') or e.get('id')}\n    why: {e.get('reason') or '(no reason given)'}\n"
            f"    from: {', '.join(e.get('sources') or []) or '(no source named)'}"
            for e in report.get("edits_applied") or []
        ]
        lines += [
            f"REFUSED {e.get('op')}: {e.get('text') or e.get('id')}\n    refused because: {e.get('rejection')}"
            for e in report.get("edits_rejected") or []
        ]
        applied, refused = len(report.get("edits_applied") or []), len(report.get("edits_rejected") or [])
        new = (self.record or {}).get("next_ruleset_version", self.version)
        see = (
            f"{applied} edit{'s' if applied != 1 else ''} applied, {refused} refused"
            + (f", {len(report['errors'])} optimizer errors" if report.get("errors") else "")
            + "; "
            + (
                f"they make version {new} ({len(self.store.rules(new).rules)} rules), which the next loop runs."
                if new != self.version
                else f"the rules did not change: the next loop runs version {self.version} again."
            )
        )
        return StepView([("text", "\n".join(lines) or "(no edit)")], see)

    def _rules_said(self) -> str:
        count = len(self.store.rules(self.version).rules)
        return "no rules" if count == 0 else f"{count} rule{'s' if count != 1 else ''}"


def loop_in_steps(
    train_df: pd.DataFrame,
    test_df: pd.DataFrame,
    settings: LoopSettings,
    session: RunContext,
    initial_ruleset: str | RulesFile = "",
    datasets: dict[str, Any] | None = None,
    val_df: pd.DataFrame | None = None,
    loop: int = 0,
) -> ShownLoopSteps:
    """Loop `loop` of a coding experiment as steps (the experiment started as run_loop starts it)."""
    from helpers.engine.loop_family import CodingLoopFamily

    frames = tuple(f for f in (train_df, val_df, test_df) if f is not None)
    store = start_experiment(settings, session, initial_ruleset, tasks=frames)
    return ShownLoopSteps(
        loop, CodingLoopFamily(train_df, test_df, settings, session, val_df=val_df), settings, session, store, datasets
    )


__all__ = ["ShownLoopSteps", "StepView", "loop_in_steps"]  # the public API, documented in CODE_APPENDIX.md
