"""The scripted dry run teaches in the reader's words: its agent follows a rule that names a convention by its
key words, its judge explains the failure it sees, and its optimizer writes rules from several explanations."""

import json

import pytest

from helpers.families.coding.house_suite import CONVENTIONS
from helpers.families.coding.tasks import load_house_suite
from helpers.learn.judge import judge_messages
from helpers.learn.examples import render_example
from helpers.learn.optimizer import PromptLearningOptimizer
from helpers.rules.ruleset import parse_ruleset
from helpers.stand_ins.dry_run import KEY_WORDS, DryRunScript, named_conventions
from helpers.stand_ins.file_edit_tools import PATCH_END, ShellTool

# Rules as a reader might write them: none uses the canonical sentence's words in its order.
READERS_WORDS = {
    "errors": "Never raise a bare ValueError: use the package's own exception classes.",
    "changelog": "Every change needs a line under ## Unreleased in the changelog.",
    "logging": "Don't print() anything; use the module logger (logging.getLogger).",
    "docs_types": "New public functions need type hints and a docstring.",
    "registry": "A new exporter must be registered with @register so export() can find it.",
    "decimal": "Money stays Decimal; never turn amounts into float.",
    "cli_help": "Each new option or subcommand of the todo CLI needs help text.",
    "cli_exit": "When a todo command fails, exit with the named exit status constant via fail().",
    "rows_pure": "A rows transform must not modify its input; build new row dicts.",
    "rows_missing": "In rows, missing values are None, never '' or 0.",
}


@pytest.fixture(scope="module")
def tasks():
    return load_house_suite()


def test_every_convention_has_key_words_and_its_own_rule_sentence_names_it_alone():
    assert set(KEY_WORDS) == set(CONVENTIONS)
    for cid, convention in CONVENTIONS.items():
        assert named_conventions(convention["rule"], CONVENTIONS) == {cid}


@pytest.mark.parametrize("cid", sorted(READERS_WORDS))
def test_a_rule_in_the_readers_own_words_names_its_convention_and_no_other(cid):
    assert READERS_WORDS[cid] != CONVENTIONS[cid]["rule"]
    assert named_conventions(f"- {READERS_WORDS[cid]}", CONVENTIONS) == {cid}
    assert named_conventions(f"- [R4] {READERS_WORDS[cid].upper()}", CONVENTIONS) == {cid}  # any case, any id


def test_key_words_count_only_on_one_line_and_no_task_names_a_convention_by_itself(tasks):
    assert named_conventions("Keep the changelog tidy.\nRelease notes go under Unreleased.", CONVENTIONS) == set()
    assert named_conventions("Write good code. Test it.", CONVENTIONS) == set()
    for row in tasks.to_dict("records"):  # an issue alone never teaches its conventions
        assert named_conventions(row["problem_statement"], CONVENTIONS) == set(), row["instance_id"]


def test_the_scripted_agent_writes_the_gold_fix_when_rules_in_the_readers_words_name_every_convention(tasks):
    script = DryRunScript(tasks, edit_tools=[ShellTool("bash")])
    tool = [{"type": "function", "function": {"name": "bash", "parameters": {"properties": {"command": {}}}}}]
    for row in tasks.groupby("repo").tail(2).to_dict("records"):
        def patch_written(rules):
            request = {"messages": [{"role": "system", "content": rules},
                                    {"role": "user", "content": row["problem_statement"]}], "tools": tool}
            command = script.agent_reply(request).tool_calls[0]["arguments"]["command"]
            return command.split("\n", 1)[1].rsplit(f"\n{PATCH_END}", 1)[0]

        own = [f"- {READERS_WORDS[c]}" for c in row["conventions"]]
        assert patch_written("\n".join(own)) == row["patch"].rstrip()
        assert patch_written("\n".join(own[:-1])) == row["naive_patch"].rstrip()
        assert patch_written("") == row["naive_patch"].rstrip()


def judged(script, row, outcome="fail", failing="['tests/test_x.py::test_the_change_is_in_the_changelog']"):
    row = {**row, "output": row["naive_patch"], "pass_or_fail": outcome, "failed_tests": failing}
    return json.loads(script.reply_for({"messages": judge_messages(row, system_prompt="Be terse.")}).content)


def test_the_scripted_judge_names_the_failing_tests_and_broken_conventions_and_leaves_the_habit_to_the_optimizer(tasks):
    script = DryRunScript(tasks).script()
    row = tasks.iloc[0].to_dict()  # ledger-0001: errors, changelog
    answer = judged(script, row)
    assert answer["correctness"] == "incorrect"
    assert "test_the_change_is_in_the_changelog" in answer["explanation"]
    for cid in row["conventions"]:
        assert f"'{CONVENTIONS[cid]['title']}'" in answer["explanation"]
    assert not any(c["rule"] in answer["explanation"] for c in CONVENTIONS.values())  # no rule sentence given away
    assert "habit" not in answer["explanation"]
    assert judged(script, row, "pass", "")["correctness"] == "correct"


def test_the_scripted_optimizer_writes_rules_from_the_explanations_with_the_examples_that_named_them(tasks):
    script = DryRunScript(tasks).script()
    rows = {r["instance_id"]: r for r in tasks.to_dict("records")}
    chosen = ["house__ledger-0001", "house__todo-0001", "house__ledger-0002", "house__rows-0002"]
    examples = []
    for iid in chosen:
        row = {**rows[iid], "output": rows[iid]["naive_patch"], "pass_or_fail": "fail"}
        row.update(judged(script, rows[iid]))
        examples.append(render_example(row, "output", ["correctness", "explanation"]))
    # an explanation that names no convention teaches nothing, whatever its task checks
    examples[-1] = examples[-1].split("Feedback:")[0] + "Feedback:\n- correctness: incorrect\n- explanation: It failed."
    optimizer = PromptLearningOptimizer(system_prompt="Few, broad rules.", client=object())
    current = parse_ruleset(f"- {READERS_WORDS['changelog']}")  # known already, in the reader's words
    answer = json.loads(script.reply_for({"messages": optimizer.messages(current, examples)}).content)
    edits = {e["text"]: e for e in answer["edits"]}
    assert list(edits) == [CONVENTIONS["errors"]["rule"], CONVENTIONS["docs_types"]["rule"]]
    assert edits[CONVENTIONS["errors"]["rule"]]["sources"] == ["house__ledger-0001", "house__ledger-0002"]
    assert edits[CONVENTIONS["docs_types"]["rule"]]["sources"] == ["house__todo-0001"]
    assert "The feedback on 2 examples says their patches broke 'errors are the package's own exceptions'" in \
        edits[CONVENTIONS["errors"]["rule"]]["reason"]
