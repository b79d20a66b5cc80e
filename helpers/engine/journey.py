"""One training task followed through the loop, as a reader wants to see the method happen.

    show_journey("quickstart")                       # picks a task whose outcome changed, and says why
    show_journey("quickstart", "ledger-007")         # or the task you name

The journey, from the experiment's saved records (nothing runs again): the task's issue; the agent's diff
in the first loop; the hidden tests that failed, with the test log's message; the judge's explanation; the
part of the meta-prompt that carried that feedback to the optimizer; the edits the optimizer made from it,
each with its reason and source tasks; and the same task's diff and result in a later loop. Diffs render as
diffs in Jupyter (a fenced ```diff block) and as plain text in a headless run's executed copy.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pandas as pd

from helpers.engine.loop_family import FEEDBACK_COLUMNS
from helpers.learn.examples import render_example
from helpers.store.loops import completed_loops, loop_rows
from helpers.store.rulesets import RulesetStore

MAX_DIFF_LINES = 60  # a journey shows the shape of a diff; the whole text is one call away (journey())
MAX_LOG_LINES = 12


def pick_journey_task(experiment: str, results_root: Any = None) -> tuple[str | None, str]:
    """(instance_id, why): the training task best followed through `experiment`: one that failed in the
    first loop and passed in a later one; else one whose outcome changed at all; else one that failed
    first (the rules did not turn it); (None, why) when no loop has finished."""
    outcomes = _train_outcomes(experiment, results_root)
    if outcomes.empty:
        return None, f"{experiment} has no finished loop with training rows."
    first, later = outcomes.columns[0], list(outcomes.columns[1:])
    checks: tuple[tuple[Callable[[Any], bool], str], ...] = (
        (
            lambda row: row[first] == "fail" and any(row[c] == "pass" for c in later),
            "it failed in the first loop and passed in a later one",
        ),
        (lambda row: any(row[c] not in ("", row[first]) for c in later), "its outcome changed between loops"),
        (
            lambda row: row[first] == "fail",
            "no training task changed its outcome between loops: this one failed first and kept failing",
        ),
    )
    for want, why in checks:
        chosen = [iid for iid, row in outcomes.iterrows() if want(row)]
        if chosen:
            return chosen[0], why
    return outcomes.index[0], "no training task failed or changed its outcome: this one passed throughout"


def _train_outcomes(experiment: str, results_root: Any) -> pd.DataFrame:
    """instance_id x loop -> "pass" | "fail" | "" (not graded), over the finished loops' training rows."""
    frames = []
    for loop in sorted(completed_loops(experiment, results_root)):
        rows = loop_rows(experiment, "train", loop, results_root)
        if rows is not None and len(rows):
            frames.append(rows.assign(loop=loop)[["instance_id", "loop", "pass_or_fail"]])
    if not frames:
        return pd.DataFrame()
    both = pd.concat(frames, ignore_index=True).astype({"pass_or_fail": str})
    return both.pivot_table(index="instance_id", columns="loop", values="pass_or_fail", aggfunc="last", fill_value="")


def journey(experiment: str, instance_id: str, results_root: Any = None, rulesets_root: Any = None) -> dict[str, Any]:
    """The journey of one training task as plain data: `issue`, `first` and `later` (each: loop, version,
    patch, pass_or_fail, failed_tests, test_log, explanation, status, error), `carried` (the task's block of
    the meta-prompt), `edits` (the optimizer's edits after the first loop: op, text, reason, sources, and
    `from_this_task`). `later` is the last finished loop that ran the task again (None when none did).
    KeyError naming the task when the first loop did not train on it."""
    loops = completed_loops(experiment, results_root)
    rows = [(loop, _row(experiment, loop, instance_id, results_root)) for loop in sorted(loops)]
    seen = [(loop, row) for loop, row in rows if row is not None]
    if not seen:
        raise KeyError(f"{instance_id!r} is not a training task of {experiment!r}'s finished loops.")
    (first_loop, first), later = seen[0], (seen[-1] if len(seen) > 1 else None)
    version = loops[first_loop]["ruleset_version"]
    store = RulesetStore(experiment, rulesets_root)
    made = [v for v in store.versions() if store.metadata(v).get("loop") == first_loop]
    edits = [
        {**edit, "from_this_task": instance_id in (edit.get("sources") or [])}
        for v in made
        for edit in store.metadata(v).get("edits", [])
    ]
    return {
        "experiment": experiment,
        "instance_id": instance_id,
        "issue": str(first.get("problem_statement") or ""),
        "first": _step(first_loop, version, first),
        "carried": render_example(first, "output", FEEDBACK_COLUMNS),
        "edits": edits,
        "new_version": made[-1] if made else None,
        "later": _step(later[0], loops[later[0]]["ruleset_version"], later[1]) if later else None,
    }


def _row(experiment: str, loop: int, instance_id: str, results_root: Any) -> dict[str, Any] | None:
    rows = loop_rows(experiment, "train", loop, results_root)
    if rows is None or "instance_id" not in rows:
        return None
    match = rows[rows["instance_id"] == instance_id]
    return match.iloc[-1].to_dict() if len(match) else None


def _step(loop: int, version: int, row: dict[str, Any]) -> dict[str, Any]:
    return {
        "loop": loop,
        "version": version,
        "patch": str(row.get("output") or ""),
        "pass_or_fail": str(row.get("pass_or_fail") or "not graded"),
        "failed_tests": _listed(row.get("failed_tests")),
        "test_log": str(row.get("test_log") or ""),
        "explanation": str(row.get("explanation") or ""),
        "status": str(row.get("status") or ""),
        "error": str(row.get("error") or ""),
    }


def _listed(cell: Any) -> str:
    """A list cell as saved (a JSON list in the CSV, or a list) as "a, b"."""
    if isinstance(cell, str) and cell.startswith("["):
        try:
            cell = json.loads(cell)
        except ValueError:
            return str(cell)
    return ", ".join(map(str, cell)) if isinstance(cell, list) else str(cell or "")


def journey_sections(story: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The journey as (heading, kind, text) sections, kind "text" or "diff", in the order a reader follows."""
    first, later = story["first"], story["later"]
    sections = [
        ("The task's issue", "text", _cut(story["issue"], 25)),
        (
            f"Loop {first['loop']}: the agent's diff, with rules version {first['version']}",
            "diff",
            first["patch"] or "(empty: the agent changed nothing)",
        ),
        (f"Loop {first['loop']}: the hidden tests", "text", _outcome(first)),
        (
            f"Loop {first['loop']}: the judge's explanation",
            "text",
            first["explanation"] or "(none: the judge gave no explanation for this row)",
        ),
        ("What the meta-prompt carried to the optimizer (this task's block)", "text", story["carried"]),
    ]
    if story["edits"]:
        lines = []
        for edit in story["edits"]:
            mark = "  <- from this task" if edit["from_this_task"] else ""
            lines.append(
                f"{edit.get('op')}: {edit.get('text') or edit.get('id')}{mark}\n"
                f"    why: {edit.get('reason') or '(no reason given)'}\n"
                f"    from: {', '.join(edit.get('sources') or []) or '(no source named)'}"
            )
        sections.append(
            (
                f"The optimizer's edits after loop {first['loop']} (version {story['new_version']})",
                "text",
                "\n".join(lines),
            )
        )
    else:
        sections.append(
            (f"The optimizer's edits after loop {first['loop']}", "text", "(none: the rules did not change)")
        )
    if later:
        sections += [
            (
                f"Loop {later['loop']}: the same task with rules version {later['version']}",
                "diff",
                later["patch"] or "(empty: the agent changed nothing)",
            ),
            (f"Loop {later['loop']}: the hidden tests", "text", _outcome(later)),
        ]
    else:
        sections.append(("A later loop", "text", "(none: the experiment finished one loop only)"))
    return sections


def _outcome(step: dict[str, Any]) -> str:
    text = f"outcome: {step['pass_or_fail']}"
    if step["status"] not in ("", "completed"):
        text += f" (agent {step['status']}: {step['error'] or 'no details'})"
    if step["failed_tests"]:
        text += f"\nfailing tests: {step['failed_tests']}"
    message = [
        line for line in step["test_log"].splitlines() if line.strip().startswith(("E ", "FAILED", "AssertionError"))
    ]
    if message:
        text += "\n" + "\n".join(message[:MAX_LOG_LINES])
    return text


def _cut(text: str, lines: int) -> str:
    kept = text.splitlines()
    return "\n".join(kept[:lines]) + (
        f"\n... ({len(kept) - lines} more lines; journey() has them all)" if len(kept) > lines else ""
    )


class ShownDiff:
    """A diff under its heading: a coloured ```diff block in Jupyter, plain text in a headless copy."""

    def __init__(self, heading: str, diff: str):
        self.heading, self.diff = heading, diff

    def _repr_markdown_(self) -> str:
        return f"**{self.heading}**\n\n```diff\n{self.diff}\n```"

    def __repr__(self) -> str:
        return f"== {self.heading}\n{self.diff}"


def show_journey(experiment: str, instance_id: str | None = None, results_root: Any = None) -> dict[str, Any]:
    """Show one training task's journey (see the module docstring); `instance_id` None picks one
    (pick_journey_task) and says why. Returns the journey's data."""
    from IPython.display import display

    why = "you named it"
    if instance_id is None:
        instance_id, why = pick_journey_task(experiment, results_root)
        if instance_id is None:
            print(why)
            return {}
    story = journey(experiment, instance_id, results_root)
    print(f"Following training task {instance_id} ({why}).")
    for heading, kind, text in journey_sections(story):
        if kind == "diff":
            text = _cut(text, MAX_DIFF_LINES)
            display(ShownDiff(heading, text))  # type: ignore[no-untyped-call]  # IPython leaves display() unannotated
        else:
            print(f"\n== {heading}\n{text}")
    return story


__all__ = [
    "show_journey",
    "ShownDiff",
    "journey",
    "journey_sections",
    "pick_journey_task",
]  # documented in CODE_APPENDIX.md
