"""What one run's row says: the one place that decides each run's outcome, so that every table, plot,
loop line and statistic counts the same runs the same way.

    run_outcome(row)           # "resolved", "failed", "forged", "errored: infrastructure" or "errored: rules"
    outcome_counts(frame)      # runs, passed, failed, errors (infra), rule_errors, forged, scored, accuracy, ...

The five outcomes:
- resolved: the patch passed the task's tests (plan mode: the judge found the plan correct);
- failed: it did not;
- forged: the grading's tripwires show its outcomes were forged from inside the test run (a test made to fail
  passed, the run exited 0 beside one, or the task's tests passed while one came out wrong: its `pass_or_fail`
  is "forged", helpers.families.coding.tripwires). Never resolved: the code under test is the ruleset's agent's,
  so it counts as a FAILURE of that ruleset, kept in accuracy's denominator on both sides of every comparison
  (dropping it would let forging take a failed task out of the count), and it is counted apart and named
  (outcome_counts' `forged`, the loop line's "1 forged grade");
- errored: rules: the agent ran and ended badly in a way the rules can cause (its time limit, its turn
  or mistake limit, a context window the rules filled, output the host refuses to take, a sandbox cap:
  processes, memory, disk, file size), or in any way the host did not see fail outside the sandbox: the
  agent ended its own CLI, its CLI exited without its final result, its own calls were refused. It is the
  agent's (so the ruleset's) doing, so it counts as a FAILURE of that ruleset, on both sides of every comparison;
- errored: infrastructure: the provider, the gateway, the budget, the workspace or the test harness
  failed, as the host saw it outside the sandbox (a run record's `host_error`, set by the engine from the
  gateway's record and the machine, never from what the agent printed); the run says nothing about the
  rules, so it is left out of accuracy (and a task with one is
  left out of both sides of a paired comparison), and counted, with its reason. A suspect pass (its
  `pass_or_fail` is "suspect": the tests passed, but the patch reaches into the test machinery, see
  helpers.families.coding.patches.suspect_lines) is counted apart the same way: its pass cannot be told
  from a forged one, so it is never resolved (outcome_counts' `suspect` says how many).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Mapping

import pandas as pd

from helpers.core.protocols import Limit

RESOLVED, FAILED, INFRA, RULES = "resolved", "failed", "errored: infrastructure", "errored: rules"
FORGED = "forged"  # also the `pass_or_fail` of such a run (helpers.engine.runs)
OUTCOMES = (RESOLVED, FAILED, FORGED, RULES, INFRA)
SCORED = (RESOLVED, FAILED, FORGED, RULES)  # the outcomes accuracy is computed over
# An agent that stops because of what it was told: out of turns, out of mistakes, out of context; or that left
# what the host refuses to take (a nested repository, a link where its rules were, a patch over its cap:
# helpers.isolation.untrusted.REFUSED), or that a sandbox cap ended, as words name them. Read in two places
# only: where a CLI's own report of its end is read (helpers.agents.base.ended_as_seen: its text is all a CLI
# gives), giving the run's typed AgentResult.limit, and for rows recorded before `host_error` (run_outcome).
LIMIT_WORDS = (
    (Limit.TURNS, r"max(?:imum)?[ _-]?turns|turn limit|mistake limit|too many (?:turns|mistakes)"),
    (Limit.CONTEXT, r"context (?:window|length)|prompt is too long|maximum context"),
    (Limit.REFUSED_OUTPUT, r"refused the agent's output"),  # helpers.isolation.untrusted.REFUSED
    (Limit.SANDBOX_CAP, r"sandbox cap reached"),
)  # helpers.isolation.confinement.CAP_PREFIX
# The limits only the host observes (its cap watcher, its refusal to read an output): a run's record says so from
# the host's own finding, never because the agent's words name them (an agent can print any sentence)
HOST_LIMITS = frozenset({Limit.REFUSED_OUTPUT, Limit.SANDBOX_CAP})
RULE_INDUCED = re.compile("|".join(words for _, words in LIMIT_WORDS), re.IGNORECASE)
# What an infrastructure error is called where a reason is listed (stats' exclusions, loop lines).
INFRA_REASONS = {
    "error": "errored",
    "budget": "stopped by the budget",
    "not_evaluated": "not evaluated",
    "pending": "not evaluated yet",
    "harness": "the test harness failed",
    "": "no outcome",
    "suspect": "a suspect pass (the patch reaches into the test machinery)",
}


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def limit_named(text: str) -> Limit | None:
    """The limit the rules can cause that `text` (a CLI's own account of its end) names, or None."""
    return next((limit for limit, words in LIMIT_WORDS if re.search(words, text or "", re.IGNORECASE)), None)


def run_outcome(row: Mapping[str, Any], outcome: str = "pass_or_fail") -> str:
    """The outcome of one result row (a run record, a results-CSV row, or a frame's row as a dict).

    Reads `status` ("completed", "error", "timeout", "budget"), `host_error`, `error`, `eval_error` and the
    `outcome` column ("pass", "fail", "forged" for a forged grade, "error" for a harness failure, "suspect" for a
    suspect pass, "not_evaluated", "pending"). A row with a `host_error` column (every run record the engine
    writes) is an infrastructure error only when the host saw one; an older row without it is read by its
    error's words.
    """
    status, verdict = _text(row.get("status")), _text(row.get(outcome))
    if status == "error" and "host_error" in row:
        return INFRA if _text(row.get("host_error")) else RULES
    if status == "timeout" or (status == "error" and RULE_INDUCED.search(_text(row.get("error")))):
        return RULES
    if status in ("error", "budget"):
        return INFRA
    if verdict == "pass":
        return RESOLVED
    if verdict == FORGED:
        return FORGED
    return FAILED if verdict == "fail" else INFRA


def infra_reason(row: Mapping[str, Any], outcome: str = "pass_or_fail") -> str:
    """Why an infrastructure-errored row is unusable, in a few words ("errored", "the test harness failed")."""
    status, verdict = _text(row.get("status")), _text(row.get(outcome))
    if status in ("error", "budget"):
        return INFRA_REASONS[status]
    harness = verdict == "error" and _text(row.get("eval_error"))  # SWE-bench: the harness broke, not the patch
    return INFRA_REASONS.get("harness" if harness else verdict, verdict or "no outcome")


def plan_scored(frame: pd.DataFrame) -> pd.DataFrame:
    """Plan-mode rows scored by the judge's correctness (their `pass_or_fail` is the judge's verdict)."""
    if len(frame) and (frame.get("mode", pd.Series(dtype=str)) == "plan").all() and "correctness" in frame:
        return frame.assign(
            pass_or_fail=frame["correctness"].map({"correct": "pass", "incorrect": "fail"}).fillna("not_evaluated")
        )
    return frame


def outcome_counts(frame: pd.DataFrame, plan: bool = False) -> dict[str, Any]:
    """Runs; passed; failed (rule-induced errors and forged grades included); infrastructure errors (`errors`,
    left out of accuracy; `suspect` of them are suspect passes), rule-induced errors (`rule_errors`, counted as
    failures) and forged grades (`forged`, counted as failures); `scored` = the runs accuracy
    is over; `accuracy` (None when nothing is scored); the most common error of each kind; `patched` the runs
    that produced a patch (None for plans)."""
    rows = (plan_scored(frame) if plan else frame).to_dict("records")
    outcomes = [run_outcome(row) for row in rows]
    kinds = Counter(outcomes)
    suspect = [o == INFRA and _text(r.get("pass_or_fail")) == "suspect" for r, o in zip(rows, outcomes)]
    infra = Counter(
        _text(r.get("error") or r.get("eval_error"))[:200]
        for r, o, s in zip(rows, outcomes, suspect)
        if o == INFRA and not s
    )
    rules = Counter(_text(r.get("error"))[:200] for r, o in zip(rows, outcomes) if o == RULES)
    scored = sum(kinds[o] for o in SCORED)
    top, top_rules = infra.most_common(1), rules.most_common(1)
    return {
        "runs": len(rows),
        "passed": kinds[RESOLVED],
        "failed": kinds[FAILED] + kinds[RULES] + kinds[FORGED],
        "errors": kinds[INFRA],
        "suspect": sum(suspect),
        "rule_errors": kinds[RULES],
        "forged": kinds[FORGED],
        "scored": scored,
        "accuracy": kinds[RESOLVED] / scored if scored else None,
        "top_error": top[0][0] if top else "",
        "top_error_count": top[0][1] if top else 0,
        "top_rule_error": top_rules[0][0] if top_rules else "",
        # runs whose agent left an edit (act mode): "0 of 4 runs produced a patch" is news, not a fail count
        "patched": None if plan else sum(bool(_text(r.get("output")).strip()) for r in rows),
    }


def errored_note(left_out: int, a: pd.DataFrame, b: pd.DataFrame) -> str:
    """One sentence on how errored pairs were counted in the paired comparison of `a` and `b` (by instance_id):
    `left_out` pairs (the comparison's own count) with an infrastructure error on either side, and the runs of
    the pairs kept that the agent ended itself (errored: rules, its limits included), counted as failures."""
    sides = [{row["instance_id"]: run_outcome(row) for row in frame.to_dict("records")} for frame in (a, b)]
    kept = [task for task in sides[0].keys() & sides[1].keys() if INFRA not in (sides[0][task], sides[1][task])]
    agents = sum(side[task] == RULES for side in sides for task in kept)
    pairs, runs = ("pair" if left_out == 1 else "pairs"), ("run" if agents == 1 else "runs")
    return (
        f"Errored pairs: {left_out} {pairs} with an infrastructure error on either side left out; {agents} "
        f"failed {runs} the agent ended itself (its own exit, its own calls, its limits) counted as failures."
    )


__all__ = [
    "run_outcome",
    "limit_named",
    "HOST_LIMITS",
    "infra_reason",
    "outcome_counts",
    "plan_scored",
    "errored_note",
    "RESOLVED",
    "FAILED",
    "FORGED",
    "INFRA",
    "RULES",
    "OUTCOMES",
    "RULE_INDUCED",
    "LIMIT_WORDS",
]  # documented in CODE_APPENDIX.md
