"""The LLM judge explains each result in English, and never lets one bad answer sink the rest."""

import json

import pandas as pd
import pytest

from helpers.learn.judge import JUDGE_SYSTEM_PROMPT, evaluate_results
from helpers.llm.client import LLMClient
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text

VERDICT = json.dumps({"correctness": "incorrect", "explanation": "It skipped the changelog. Always add an entry."})


def rows(n=2, **overrides):
    base = {"instance_id": "t-1", "repo": "org/r", "problem_statement": "Deposits accept negatives.",
            "output": "diff --git a/x.py b/x.py\n+raise ValueError\n", "mode": "act", "ground_truth_patch": "GOLD-PATCH-TEXT",
            "pass_or_fail": "fail", "failed_tests": ["tests/test_x.py::test_error_type"], "test_log": "E AssertionError: LedgerError",
            "status": "completed", "error": "", "eval_error": ""}
    return pd.DataFrame([{**base, "instance_id": f"t-{i}", **overrides} for i in range(n)])


def judge(server, tmp_path, df, **kw):
    client = LLMClient("scripted-dry-run", base_url=server.base_url, api_key="k", cache_dir=tmp_path, backoff_s=0.01)
    return evaluate_results(df, client=client, **kw)


def test_each_row_gets_a_verdict_and_an_explanation(tmp_path):
    with ScriptedModelServer(Script(default=Reply(VERDICT))) as server:
        judged = judge(server, tmp_path, rows())
        request = server.chat_requests()[0]
    assert list(judged.correctness) == ["incorrect", "incorrect"]
    assert "changelog" in judged.explanation[0] and judged.judge_error[0] == ""
    user = message_text(request, "user")
    assert message_text(request, "system") == JUDGE_SYSTEM_PROMPT
    assert "outcome: fail" in user and "tests/test_x.py::test_error_type" in user and "LedgerError" in user


def test_the_gold_patch_is_shown_for_training_rows_only(tmp_path):
    with ScriptedModelServer(Script(default=Reply(VERDICT))) as server:
        judge(server, tmp_path, rows(1), include_gold=True)
        judge(server, tmp_path / "other", rows(1), include_gold=False)
        shown = [message_text(r, "user") for r in server.chat_requests()]
    assert "GOLD-PATCH-TEXT" in shown[0] and "GOLD-PATCH-TEXT" not in shown[1]


def test_a_huge_patch_is_cut_with_a_visible_marker(tmp_path):
    huge = "diff --git a/x.py b/x.py\n" + "+line of code\n" * 20_000
    with ScriptedModelServer(Script(default=Reply(VERDICT))) as server:
        judge(server, tmp_path, rows(1, output=huge))
        shown = message_text(server.chat_requests()[0], "user")
    assert "tokens cut here" in shown and len(shown) < len(huge)


def test_an_unparseable_answer_or_a_failed_request_is_a_judge_error_on_that_row_only(tmp_path):
    script = Script([Rule(user_contains="Task: t-0", reply=Reply("I think it is fine?")),
                     Rule(user_contains="Task: t-1", reply=Reply(status=400, error_message="context too long"))],
                    default=Reply(VERDICT))
    with ScriptedModelServer(script) as server:
        judged = judge(server, tmp_path, rows(3))
    assert "unparseable" in judged.judge_error[0] and judged.judge_raw[0] == "I think it is fine?"
    assert "context too long" in judged.judge_error[1]
    assert judged.judge_error[2] == "" and judged.correctness[2] == "incorrect"


def test_a_judge_answered_by_a_body_that_is_not_a_chat_completion_counts_a_failure_with_its_reason(tmp_path):
    """As with only ANTHROPIC_BASE_URL set and a server answering the judge's /v1/chat/completions with a
    Messages body: each row is a judge failure saying what was wrong, never a crash of the loop."""
    with ScriptedModelServer(Script(default=Reply(VERDICT, fault="wrong_api"))) as server:
        judged = judge(server, tmp_path, rows(2))
    assert judged.correctness.tolist() == ["", ""] and judged.judge_transient.tolist() == [False, False]
    assert all("the body is not a chat completion" in e and "no choices" in e for e in judged.judge_error)


def test_a_rerun_with_the_same_inputs_is_answered_from_the_cache(tmp_path):
    with ScriptedModelServer(Script(default=Reply(VERDICT))) as server:
        first = judge(server, tmp_path, rows())
        again = judge(server, tmp_path, rows())
        assert len(server.chat_requests()) == 2
    assert list(first.explanation) == list(again.explanation)


def test_plans_are_judged_on_their_merits_without_test_results(tmp_path):
    plans = rows(1, output="1. Raise LedgerError.", pass_or_fail="not_evaluated", mode="plan")
    with ScriptedModelServer(Script(default=Reply(json.dumps({"correctness": "correct", "explanation": "ok"})))) as server:
        judged = judge(server, tmp_path, plans)
        shown = message_text(server.chat_requests()[0], "user")
    assert judged.correctness[0] == "correct"
    assert "## The agent's plan\n<<<DATA-" in shown and "the agent's plan>>>\n1. Raise LedgerError.\n<<<END-" in shown
    assert "outcome: not run" in shown


def test_a_spent_budget_marks_the_remaining_rows_transient_so_a_rerun_judges_them(tmp_path):
    with ScriptedModelServer(Script(default=Reply(VERDICT))) as server:
        client = LLMClient("gpt-4.1", base_url=server.base_url, api_key="k", cache_dir=tmp_path, budget_usd=1e-9)
        judged = evaluate_results(rows(3), client=client, workers=1)
    assert judged.judge_error[0] == "" and judged.judge_transient.tolist() == [False, True, True]
    assert all("budget" in e for e in judged.judge_error[1:])


@pytest.mark.parametrize("workers", [0, -2, 1.5, None])
def test_bad_worker_counts_are_refused_at_once(tmp_path, workers):
    with pytest.raises(ValueError, match="workers"):
        evaluate_results(rows(1), workers=workers, client=object())


def test_every_judge_call_is_capped_and_an_answer_cut_at_the_cap_is_named_as_such(tmp_path):
    from helpers.core import config

    cut = Reply('{"correctness": "incorrect", "explanation": "It skipped the change', finish_reason="length")
    with ScriptedModelServer(Script(default=cut)) as server:
        judged = judge(server, tmp_path, rows(1))
        sent = [r["body"] for r in server.requests]
    assert all(body["max_tokens"] == config.JUDGE_MAX_TOKENS for body in sent)
    assert judged.judge_error[0].startswith("the judge's answer was cut at the length limit")
    assert "not a JSON object" not in judged.judge_error[0]


def test_reasoning_models_get_their_cap_as_max_completion_tokens():
    from helpers.llm.client import output_cap

    assert output_cap("gpt-5", {"max_tokens": 10}) == {"max_completion_tokens": 10}
    assert output_cap("o3-mini", {"max_tokens": 10, "temperature": 0}) == {"max_completion_tokens": 10, "temperature": 0}
    assert output_cap("gpt-4.1", {"max_tokens": 10}) == {"max_tokens": 10}


def test_the_judge_is_told_which_of_the_patchs_files_grading_set_aside():
    from helpers.learn.judge import judge_messages

    shown = judge_messages(rows(1, set_aside=["conftest.py"]).iloc[0].to_dict())[1]["content"]
    assert "set aside: the patch's conftest.py was not used in grading" in shown
    for old in ({}, {"set_aside": ""}, {"set_aside": []}):  # records from before grading set anything aside
        assert "set aside" not in judge_messages(rows(1, **old).iloc[0].to_dict())[1]["content"]


def test_a_long_patch_shows_the_judge_every_line_it_adds_to_graded_code():
    from helpers.learn.judge import judge_messages

    def new_file(path, lines):
        return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
                f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines))

    before, after = ("".join(f" unchanged line {i} of the old module, long enough to count\n" for i in part)
                     for part in (range(750), range(750, 1_500)))
    header = "diff --git a/ledger/money.py b/ledger/money.py\n--- a/ledger/money.py\n+++ b/ledger/money.py\n"
    fix = f"{header}@@ -1,1500 +1,1502 @@\n{before}+def rounded(x):\n+    return round(x, 2)\n{after}"
    tests = new_file("tests/test_big.py", [f"def test_{i}():\n    assert {i} == {i}" for i in range(2_000)])
    row = {"instance_id": "t1", "output": tests + fix, "pass_or_fail": "pass", "failed_tests": []}
    shown = judge_messages(row)[1]["content"]
    assert len(row["output"]) > 100_000
    assert "+def rounded(x):\n+    return round(x, 2)" in shown  # every added line of graded code
    assert "set aside in grading and not shown: tests/test_big.py" in shown and "removed and context lines" in shown
    assert "tokens cut" not in shown and "test_1999" not in shown
    small = {**row, "output": f"{header}@@ -1 +1,3 @@\n unchanged\n+def rounded(x):\n+    return round(x, 2)\n"}
    assert small["output"] in judge_messages(small)[1]["content"]  # within budget: the patch whole
