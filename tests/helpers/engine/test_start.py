"""What an experiment starts from: START_RULES (a rules file or its text) and the instructions' files."""

import pytest

from helpers.engine.loop import LoopSettings, run_loop, start_experiment
from helpers.engine.start import instructions_from, start_rules
from helpers.families.coding.tasks import load_house_suite

OWN_RULES = """# Our house rules, in our own words
- Every change needs a line under ## Unreleased in the changelog.
- New public functions need type hints and a docstring.
"""


def test_start_rules_are_none_a_files_rules_or_the_text_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.md").write_text(OWN_RULES)
    assert start_rules(None) == "" and start_rules("  ") == ""
    from_file = start_rules("mine.md")
    assert "- [R1] " in from_file and "- [R2] " in from_file  # two rules, with ids the optimizer can edit
    assert "Every change needs a line under ## Unreleased in the changelog." in from_file
    assert start_rules(tmp_path / "mine.md") == from_file == start_rules(OWN_RULES)
    assert "[R1] Keep functions short." in start_rules("Keep functions short.")  # one line of text is a rule
    team = "# Team\n\nKeep it short.\n<!-- prompt-learning:rules:start -->\n- Log changes.\n<!-- prompt-learning:rules:end -->\n"
    started = start_rules(team)  # a team's file: its text kept around the learned section, whose rules get ids
    assert started.startswith("# Team\n\nKeep it short.\n<!-- prompt-learning:rules:start -->\n<!-- prompt-learning ruleset")
    assert started.endswith("- [R1] Log changes.\n<!-- prompt-learning:rules:end -->\n")
    empty = team.replace("- Log changes.\n", "")  # as import_rules_file gives it: the team's file says it all
    assert start_rules(empty) == empty


@pytest.mark.parametrize("missing", ["my_rules.md", "rules/team.txt", "~/nowhere/AGENTS.md"])
def test_a_start_that_looks_like_a_path_and_names_no_file_is_one_error_never_rules(tmp_path, monkeypatch, missing):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="START_RULES=.*no such file"):
        start_rules(missing)


def test_instructions_come_from_the_text_or_the_file_never_both(tmp_path):
    judge = tmp_path / "judge.txt"
    judge.write_text("Be terse.\nAnswer with JSON.\n")
    assert instructions_from(None, None, "JUDGE_PROMPT") is None
    assert instructions_from("Mine.", None, "JUDGE_PROMPT") == "Mine."
    assert instructions_from(None, str(judge), "JUDGE_PROMPT") == "Be terse.\nAnswer with JSON.\n"
    with pytest.raises(ValueError, match="Give JUDGE_PROMPT or JUDGE_PROMPT_FILE, not both"):
        instructions_from("Mine.", str(judge), "JUDGE_PROMPT")
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(ValueError, match="OPTIMIZER_PROMPT_FILE=.*is empty"):
        instructions_from(None, str(tmp_path / "empty.txt"), "OPTIMIZER_PROMPT")
    with pytest.raises(FileNotFoundError, match="JUDGE_PROMPT_FILE="):
        instructions_from(None, str(tmp_path / "gone.txt"), "JUDGE_PROMPT")


def test_an_experiment_refuses_to_resume_from_other_start_rules(isolated):
    class Dry:
        dry_run = True

    settings = LoopSettings("started")
    start_experiment(settings, Dry(), start_rules(OWN_RULES))
    start_experiment(settings, Dry(), start_rules(OWN_RULES))  # the same start resumes
    start_experiment(settings, Dry(), "")  # no start given resumes from what it holds
    with pytest.raises(ValueError, match="started from other rules .* START_RULES"):
        start_experiment(settings, Dry(), start_rules("Keep functions short."))


@pytest.mark.slow
def test_a_rules_file_in_the_readers_own_words_makes_test_tasks_pass_in_the_dry_run_where_no_rules_pass_none(
        isolated, tmp_path):
    """The real Cline CLI, the scripted model: the tasks that check only the changelog and docstring conventions
    pass from the start with the reader's file; a task checking a convention it does not name still fails, as
    every task does with no rules (the quickstart's loop 0 shows that on all 22 of its tasks)."""
    from helpers.app.session import open_session

    tasks = load_house_suite().set_index("instance_id")
    train = tasks.loc[["house__todo-0001"]].reset_index()  # docs_types, changelog
    test = tasks.loc[["house__todo-0015", "house__ledger-0016"]].reset_index()  # docs+changelog; errors+changelog
    (tmp_path / "ours.md").write_text(OWN_RULES)
    with open_session(dry_run=True, agent="cline", phoenix=False) as session:
        ours = run_loop(train, test, LoopSettings("own-start", loops=1, workers=2), session,
                        initial_ruleset=start_rules(str(tmp_path / "ours.md")), verbose=False)
    assert ours.iloc[0]["test_passed"] == 1 and ours.iloc[0]["train_passed"] == 1
    from helpers.core.config import results_root
    from helpers.store.records import read_jsonl

    passed = {r["instance_id"] for p in (results_root() / "own-start" / "runs").glob("test_*.jsonl")
              for r in read_jsonl(p) if r.get("pass_or_fail") == "pass"}
    assert passed == {"house__todo-0015"}
