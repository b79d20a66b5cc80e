"""The LLM judge: why each patch passed or failed, in English, and what habit would have avoided a failure.

    judged = evaluate_results(train_df)             # the cookbook's call; adds the columns below

Adds `correctness` ("correct" | "incorrect"), `explanation`, `judge_raw` (the model's answer),
`judge_error` ("" when fine), `judge_transient` (True when that error was a rate limit, an outage or a
spent budget, so a rerun may succeed), `judge_cost_usd` (None: unpriced; 0 for an answer from the cache) and
`judge_tokens` (input + output tokens of its answer, an answer from the cache included) to every row. The judge sees the problem statement,
the agent's output (the patch, or the plan in plan mode), the tests' outcome (failing tests, a log
excerpt, and which of the patch's files grading set aside) and, for training rows, the gold patch. Long texts are cut with a visible marker,
except that nothing can hide a patch's code: a patch over its budget is shown as every line it adds to graded
code (tests and set-aside files named, not shown), and if that is still too long, cut with a note saying what
was cut; the lines that reach into the test machinery (the row's `suspect`, a pass not counted) are always
shown in full, in a section of their own. A row whose
answer cannot be parsed, or whose request fails, gets a judge error; no row ever raises, and a spent
budget stops the remaining rows cleanly.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd

from helpers.core import config
from helpers.families.coding.patches import is_set_aside, patch_files, patch_paths, set_aside_note, suspect_lines
from helpers.llm.client import BudgetExceeded, LLMClient, LLMError, cut_at_length, parse_json_object
from helpers.core.tokens import count_tokens, truncate_tokens

JUDGE_SYSTEM_PROMPT = """\
You review a coding agent's work on one software task and explain the outcome in plain English.
You get the issue the agent was asked to resolve, the agent's output (a patch, or a plan), the result of
the repository's hidden tests when they were run, and sometimes the reference fix the maintainers wrote.
Explain WHY the output passed or failed: what it got right, what it missed, and which expectation of the
codebase (its conventions, its tests, its style) it did or did not meet. When it failed, name the general
habit that would have avoided the failure, phrased so that it would help on other tasks in this codebase,
not only on this one. Judge the output, not the agent's intentions.
Answer with one JSON object and nothing else:
{"correctness": "correct" or "incorrect", "explanation": "<3-8 sentences>"}"""

MAX_PATCH_TOKENS = 6_000
MAX_LOG_TOKENS = 2_500
MAX_STATEMENT_TOKENS = 3_000
MAX_SUSPECT_LINES, MAX_SUSPECT_LINE_CHARS = 60, 500  # the suspect lines are shown whole up to these (about 8k tokens)
JUDGE_COLUMNS = ("correctness", "explanation", "judge_raw", "judge_error", "judge_transient", "judge_cost_usd",
                 "judge_tokens")


def judge_messages(row: dict[str, Any], output_column: str = "output", include_gold: bool = True,
                   system_prompt: str | None = None) -> list[dict[str, str]]:
    """The judge's request for one row: system instructions (`system_prompt`, None: JUDGE_SYSTEM_PROMPT), then
    the task and its evidence."""
    output = str(row.get(output_column) or "")
    kind = "plan" if output_column == "plan" or row.get("mode") == "plan" else "patch"
    parts = [f"Task: {row.get('instance_id', '')} ({row.get('repo', '')})",
             "## Issue\n" + truncate_tokens(str(row.get("problem_statement") or ""), MAX_STATEMENT_TOKENS),
             f"## The agent's {kind}\n" + ((_patch_view(output, str(row.get("test_patch") or "")) if kind == "patch"
                                             else truncate_tokens(output, MAX_PATCH_TOKENS)) if output.strip()
                                            else f"(empty: the agent produced no {kind})")]
    suspect = row.get("suspect")
    if not isinstance(suspect, list):  # a row recorded before the engine kept it
        suspect = suspect_lines(output, str(row.get("test_patch") or "")) if kind == "patch" else []
    if suspect:
        shown = [line if len(line) <= MAX_SUSPECT_LINE_CHARS else line[:MAX_SUSPECT_LINE_CHARS] + " [... line cut ...]"
                 for line in suspect[:MAX_SUSPECT_LINES]]
        more = len(suspect) - len(shown)
        parts.append("## Suspect lines: code the patch adds that reaches into the test machinery (pytest's internals, "
                     "the report, sys.modules, the process's exit, builtins)\n" + "\n".join(shown)
                     + (f"\n[... {more} more suspect lines not shown ...]" if more > 0 else ""))
    if str(row.get("trajectory_summary") or "").strip():
        parts.append("## How the agent worked\n" + truncate_tokens(str(row["trajectory_summary"]), MAX_LOG_TOKENS))
    verdict = row.get("pass_or_fail")
    if verdict in ("pass", "fail", "suspect", "forged"):
        failed = row.get("failed_tests")
        failed = ", ".join(failed) if isinstance(failed, list) else str(failed or "")
        lines = [f"outcome: {verdict}" if verdict not in ("suspect", "forged") else
                 "outcome: forged: the grading's tripwires show the outcomes were forged from inside the test run "
                 "(see the evaluation error); it counts as a fail" if verdict == "forged" else
                 "outcome: the tests passed, but the pass is not counted: the patch reaches into the test machinery "
                 "(see the suspect lines); say whether it fixes the issue or makes failing tests read as passing"]
        if row.get("status") not in (None, "", "completed"):
            lines.append(f"agent status: {row.get('status')} ({row.get('error') or 'no details'})")
        if failed and failed != "[]":
            lines.append(f"failing tests: {failed}")
        if row.get("eval_error"):
            lines.append(f"evaluation error: {row.get('eval_error')}")
        aside = row.get("set_aside")
        if isinstance(aside, list) and aside:
            lines.append(f"set aside: {set_aside_note(aside)}")
        log = str(row.get("test_log") or "")
        if log.strip():
            lines.append("test log excerpt:\n" + truncate_tokens(log, MAX_LOG_TOKENS))
        parts.append("## Hidden tests\n" + "\n".join(lines))
    else:
        parts.append("## Hidden tests\noutcome: not run (judge the output on its merits)")
    gold = str(row.get("ground_truth_patch") or row.get("patch") or "") if include_gold else ""
    if gold.strip():
        parts.append("## Reference fix by the maintainers\n" + truncate_tokens(gold, MAX_PATCH_TOKENS))
    return [{"role": "system", "content": system_prompt or JUDGE_SYSTEM_PROMPT},
            {"role": "user", "content": "\n\n".join(parts)}]


def _patch_view(patch: str, test_patch: str = "", budget: int = MAX_PATCH_TOKENS) -> str:
    """The patch as the judge sees it: whole when it fits `budget` tokens; else a note saying so, then every
    line it adds to graded code under its file's and hunks' headers (tests and set-aside files named, removed
    and context lines left out), cut in the middle with a marker only if that is still over the budget."""
    if count_tokens(patch) <= budget:
        return patch
    test_paths = patch_paths(test_patch)
    kept, aside, added, dropped = [], [], 0, 0
    for paths, text in patch_files(patch):
        if paths and any(is_set_aside(p, test_paths) for p in paths):
            aside.append(", ".join(paths))
            continue
        for line in text.splitlines():
            if line.startswith(("diff --git", "--- ", "+++ ", "@@", "rename ", "new file", "deleted file")):
                kept.append(line)
            elif line.startswith("+"):
                kept.append(line)
                added += 1
            else:
                dropped += 1
    view = "\n".join(kept)
    note = (f"[This patch is {len(patch):,} characters, over the judge's budget: shown are the {added:,} lines it adds "
            f"to graded code, with their file and hunk headers; {dropped:,} removed and context lines are left out"
            + (f"; set aside in grading and not shown: {'; '.join(aside)[:2000]}" if aside else "") + ".")
    if count_tokens(view) > budget:
        note += (" Those lines are still over the budget and are cut in the middle below (the marker says how many "
                 "tokens); the suspect lines, if any, are listed in full after the patch.")
    return note + "]\n" + truncate_tokens(view, budget)


def _judge_row(client: LLMClient, row: dict[str, Any], output_column: str, include_gold: bool,
               system_prompt: str | None = None) -> dict[str, Any]:
    try:
        answer = client.complete(judge_messages(row, output_column, include_gold, system_prompt),
                                 max_tokens=config.JUDGE_MAX_TOKENS)
    except BudgetExceeded as error:
        return {"judge_error": f"budget exhausted: {error}", "judge_transient": True}
    except LLMError as error:
        return {"judge_error": str(error), "judge_transient": error.transient}
    result: dict[str, Any] = {"judge_raw": answer.text, "judge_cost_usd": answer.cost_usd,
                              "judge_tokens": answer.input_tokens + answer.output_tokens}
    try:
        parsed = parse_json_object(answer.text)
        correctness = str(parsed.get("correctness", "")).strip().lower()
        if correctness not in ("correct", "incorrect"):
            raise ValueError(f"correctness is {parsed.get('correctness')!r}, not 'correct' or 'incorrect'")
        result.update(correctness=correctness, explanation=str(parsed.get("explanation") or "").strip())
        client.remember(answer)  # cached only once it proved usable: a malformed answer is asked for again
    except ValueError as error:
        result["judge_error"] = (f"the judge's answer was cut at the length limit ({answer.output_tokens} tokens; "
                                 f"JUDGE_MAX_TOKENS={config.JUDGE_MAX_TOKENS}, or the model server's own cap)"
                                 if cut_at_length(answer) else f"unparseable judge answer: {error}")
    return result


def evaluate_results(df: pd.DataFrame, model: str | None = None, *, base_url: str | None = None,
                     api_key: str | None = None, workers: int = config.LLM_MAX_CONCURRENCY,
                     budget_usd: float | None = None, include_gold: bool = True, output_column: str | None = None,
                     client: LLMClient | None = None, system_prompt: str | None = None) -> pd.DataFrame:
    """A copy of `df` (run_act's rows) with the judge's verdict on every row (see the module docstring).
    `system_prompt`: the judge's instructions (None: JUDGE_SYSTEM_PROMPT); they must still ask for the JSON
    answer {"correctness": ..., "explanation": ...}."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a whole number of at least 1, not {workers!r}.")
    if df.empty:
        return df.assign(**{c: pd.Series(dtype=object) for c in JUDGE_COLUMNS})
    output_column = output_column or "output"
    if output_column not in df.columns:
        raise ValueError(f"The rows lack the output column {output_column!r}: pass run_tasks' (or run_act's) rows.")
    client = client or LLMClient(model or config.JUDGE_MODEL, api_key=api_key, base_url=base_url,
                                 budget_usd=budget_usd, max_concurrency=workers)
    rows = df.to_dict("records")
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        verdicts = list(pool.map(lambda r: _judge_row(client, r, output_column, include_gold, system_prompt), rows))
    judged = df.copy()
    defaults = {"correctness": "", "explanation": "", "judge_raw": "", "judge_error": "", "judge_transient": False,
                "judge_cost_usd": 0.0, "judge_tokens": 0}
    for column, default in defaults.items():
        judged[column] = [v.get(column, default) for v in verdicts]
    return judged

__all__ = ["evaluate_results", "judge_messages", "JUDGE_SYSTEM_PROMPT"]  # the public API, documented in CODE_APPENDIX.md
