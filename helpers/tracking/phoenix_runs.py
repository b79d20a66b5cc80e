"""One result row as a run of a Phoenix experiment: its output as the compare view shows it (Phoenix renders a lone
string as Markdown: the agent's patch as a ```diff block, a plan as ```markdown, then a short list of tests, agent
status, tokens, cost and ruleset) and its evaluations (`resolved` from the tests, `correctness` from the judge).

Separate from helpers.tracking.phoenix_experiments (which finds or creates the experiment and logs, retries or
keeps for later): this part only shapes a row, and talks to no server.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from helpers.tracking.phoenix_datasets import code_block


def agent_output(row: dict[str, Any]) -> tuple[str, str]:
    """(what it is, the text): the row's `output` column, else its `cline_patch` / `plan` (older
    rows). "plan" when `mode == "plan"`, "patch" for an act run or a diff, else "output" (e.g. the
    page a prompt task's model wrote)."""
    text = row.get("output")
    if text is None:
        return (
            ("plan", row["plan"])
            if row.get("plan") and not row.get("cline_patch")
            else ("patch", row.get("cline_patch") or "")
        )
    if row.get("mode") == "plan":
        return "plan", text
    is_diff = text.lstrip().startswith(("diff --git", "--- ", "Index: "))
    return ("patch" if row.get("mode") == "act" or is_diff else "output"), text


def _details(row: dict[str, Any]) -> list[str]:
    """The short list under the patch: tests, agent, tokens and cost, ruleset and run."""
    lines = []
    verdict = row.get("pass_or_fail")
    if verdict:
        failed = row.get("failed_tests")
        failed = failed if isinstance(failed, list) else [failed] if failed and failed != "[]" else []
        shown = ", ".join(f"`{t}`" for t in failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
        lines.append(
            f"- **tests**: {verdict}"
            + (f" ({shown})" if shown else "")
            + (f"; {row['eval_error']}" if row.get("eval_error") else "")
        )
    agent = [row.get("status") or "completed"]
    if row.get("error"):
        agent.append(str(row["error"])[:300])
    if row.get("iterations") is not None:
        agent.append(f"{row['iterations']} iterations")
    if row.get("duration_s") is not None:
        agent.append(f"{float(row['duration_s']):.0f} s")
    lines.append("- **agent**: " + ", ".join(str(a) for a in agent))
    if row.get("input_tokens") is not None or row.get("cost_usd") is not None:
        lines.append(
            f"- **tokens**: {row.get('input_tokens') or 0} in, {row.get('output_tokens') or 0} out; "
            f"**cost** ${float(row.get('cost_usd') or 0):.4f}"
        )
    if row.get("ruleset_sha") or row.get("run_id"):
        lines.append(f"- **ruleset** `{row.get('ruleset_sha') or '?'}`, run `{row.get('run_id') or '?'}`")
    return lines


def run_output(row: dict[str, Any]) -> dict[str, str]:
    """A run's output as the compare view shows it: {"patch" | "plan" | "output": Markdown}, the
    patch as a ```diff block (a plan as ```markdown, other output as ```json or ```text) first, then
    the short list of details."""
    kind, text = agent_output(row)
    if not text.strip():
        return {
            kind: "\n\n".join(
                [
                    f"*No {kind}: the agent {'changed no file' if kind == 'patch' else 'wrote nothing'}.*",
                    "\n".join(_details(row)),
                ]
            )
        }
    language = {"patch": "diff", "plan": "markdown"}.get(kind) or ("json" if text.lstrip()[:1] in "{[" else "text")
    return {kind: "\n\n".join([code_block(text, language), "\n".join(_details(row))])}


def _run(row: dict[str, Any]) -> dict[str, Any]:
    """log_run's arguments for a row (without the experiment and example ids)."""
    end = datetime.now(timezone.utc)
    start = end - timedelta(seconds=float(row.get("duration_s") or 0.0))
    status = row.get("status") or "completed"
    error = f"{status}: {row.get('error') or 'no details'}"[:4000] if status != "completed" else None
    return {"output": run_output(row), "start_time": start, "end_time": end, "repetition_number": 1, "error": error}


def _evaluations(row: dict[str, Any], judged: bool) -> list[dict[str, Any]]:
    """log_evaluation's arguments: 'resolved' (tests; score 1/0, the failed tests as explanation) and,
    on judged rows, the judge's 'correctness' with its explanation."""
    verdict = row.get("pass_or_fail")
    resolved: dict[str, Any] = {"name": "resolved", "annotator_kind": "CODE"}
    if verdict in ("pass", "fail"):
        failed = row.get("failed_tests")
        failed = ", ".join(failed) if isinstance(failed, list) else (failed or "")
        resolved.update(
            label=verdict,
            score=1.0 if verdict == "pass" else 0.0,
            explanation=f"failed tests: {failed}"
            if verdict == "fail" and failed not in ("", "[]")
            else (row.get("eval_error") or None),
        )
    else:
        resolved["error"] = row.get("eval_error") or (
            "a suspect pass, not counted: the patch reaches into the test machinery"
            if verdict == "suspect"
            else f"not evaluated ({verdict})"
        )
    evals = [resolved]
    if judged:
        judge: dict[str, Any] = {
            "name": "correctness",
            "annotator_kind": "LLM",
            "metadata": {"judge_cost_usd": row.get("judge_cost_usd")},
        }
        if row.get("judge_error"):
            judge["error"] = row["judge_error"]
        elif row.get("correctness") in ("correct", "incorrect"):
            judge.update(
                label=row["correctness"],
                score=1.0 if row["correctness"] == "correct" else 0.0,
                explanation=row.get("explanation") or None,
            )
        else:
            judge["error"] = f"no judge verdict ({row.get('correctness')!r})"
        evals.append(judge)
    return evals


__all__ = ["run_output"]  # documented in CODE_APPENDIX.md
