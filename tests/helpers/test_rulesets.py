"""Rulesets: a text format usable as .clinerules, and a store of every version with its metadata."""

import pytest

from helpers.rulesets import (FENCE_END, FENCE_START, Rule, Ruleset, RulesetStore, apply_edits, diff_rulesets,
                              parse_ruleset, render_ruleset, split_fenced)


def test_rendering_and_parsing_round_trip_with_multi_line_rules():
    ruleset = Ruleset([Rule("R1", "First rule."), Rule("R3", "Second rule,\nwith a second line.")], next_id=5)
    assert parse_ruleset(render_ruleset(ruleset)) == ruleset
    assert render_ruleset(Ruleset()) == ""


def test_a_hand_written_rules_file_is_imported_one_rule_per_bullet_with_its_heading():
    rules = parse_ruleset("# Testing\n- Run pytest before finishing.\n- Never edit tests.\n\n# Style\nUse type hints.\n")
    assert [r.text for r in rules.rules] == ["Testing: Run pytest before finishing.", "Testing: Never edit tests.",
                                             "Style: Use type hints."]
    assert rules.ids == ["R1", "R2", "R3"]


def test_a_bullet_added_by_hand_gets_a_fresh_id_and_ids_are_never_reused():
    text = "<!-- prompt-learning ruleset: keep the [Rn] ids when editing by hand; next id R7 -->\n- [R2] Kept.\n- New one.\n"
    assert parse_ruleset(text).ids == ["R2", "R7"]


def test_a_stray_line_or_a_repeated_id_is_a_clear_error():
    with pytest.raises(ValueError, match="line 2 belongs to no rule"):
        parse_ruleset("- [R1] Rule.\nstray text\n")
    with pytest.raises(ValueError, match="R1 appears more than once"):
        parse_ruleset("- [R1] a\n- [R1] b\n")


def test_edits_that_cannot_apply_are_rejected_with_a_reason_and_the_rest_apply():
    start = Ruleset([Rule("R1", "One.")], next_id=2)
    new, applied, rejected = apply_edits(start, [{"op": "update", "id": "R9", "text": "x"}, {"op": "add", "text": "Two."},
                                                 {"op": "rename", "id": "R1"}, {"op": "merge", "ids": ["R1"], "text": "y"}])
    assert [r.text for r in new.rules] == ["One.", "Two."]
    assert len(applied) == 1 and applied[0]["new_id"] == "R2"
    assert [r["rejection"].split(" ")[0] for r in rejected] == ["no", "unknown", "merge"]


def test_a_fence_splits_a_prompt_into_three_parts_that_join_back_byte_for_byte():
    text = f"Head  \n{FENCE_START}\n- [R1] x\n{FENCE_END}\ntail"
    before, region, after = split_fenced(text)
    assert before + region + after == text and region == "- [R1] x\n"
    assert split_fenced("no fence") is None
    with pytest.raises(ValueError, match="exactly one"):
        split_fenced(f"{FENCE_START}\n{FENCE_START}\n{FENCE_END}")


@pytest.fixture
def store(tmp_path):
    store = RulesetStore("demo", root=tmp_path)
    v0 = store.save("", parent=None, loop=None)
    v1 = store.save("- [R1] Add a changelog entry.\n", parent=v0, loop=0,
                    report={"edits_applied": [{"op": "add", "text": "Add a changelog entry.", "reason": "r", "sources": ["t-1"]}],
                            "cost_usd": 0.12, "model": "gpt-5"})
    store.save("- [R1] Add a changelog entry.\n- [R2] Log, never print.\n", parent=v1, loop=1)
    return store


def test_each_version_is_saved_as_clinerules_text_with_its_metadata(store, tmp_path):
    assert store.versions() == [0, 1, 2]
    assert (tmp_path / "demo/ruleset_1.txt").read_text() == "- [R1] Add a changelog entry.\n"
    meta = store.metadata(1)
    assert meta["parent"] == 0 and meta["loop"] == 0 and meta["cost_usd"] == 0.12 and meta["model"] == "gpt-5"
    assert meta["edits"][0]["sources"] == ["t-1"] and meta["created_at"]


def test_versions_diff_rule_by_rule(store):
    diff = store.diff(1, 2)
    assert [r.id for r in diff.added] == ["R2"] and diff.unchanged == ["R1"] and not diff.removed
    assert "+ [R2] Log, never print." in str(diff)
    assert diff_rulesets(store.rules(2), store.rules(1)).removed[0].id == "R2"


def test_a_rollback_makes_an_old_version_the_head_again(store):
    version = store.rollback(1, reason="v2 broke tests")
    assert version == 3 and store.load("latest") == store.load(1)
    assert store.metadata(3)["kind"] == "rollback" and store.metadata(3)["previous_head"] == 2


def test_the_next_loop_starts_from_the_latest_or_the_best_version(store):
    store.record_scores(1, train_accuracy=0.8, test_accuracy=0.5)
    store.record_scores(2, train_accuracy=0.6, test_accuracy=0.7)
    assert store.choose_start("latest") == 2
    assert store.choose_start("best", by="train_accuracy") == 1
    assert store.choose_start("best", by="test_accuracy") == 2
    assert store.load("best") == store.load(1)
    with pytest.raises(ValueError, match="start_from"):
        store.choose_start("newest")


def test_a_version_written_from_the_best_is_tried_before_the_best_again(store):
    store.record_scores(1, train_accuracy=0.8)
    store.record_scores(2, train_accuracy=0.6)
    v3 = store.save("- [R1] Add a changelog entry.\n- [R3] Type hints.\n", parent=1, loop=2)
    assert store.choose_start("best") == v3


def test_a_loop_rerun_after_a_crash_replaces_its_own_version(store):
    again = store.save("- [R1] Changed on rerun.\n", parent=1, loop=1)
    assert again == 2 and store.versions() == [0, 1, 2]


def test_scores_must_be_accuracies(store):
    with pytest.raises(ValueError, match="between 0 and 1"):
        store.record_scores(1, train_accuracy=80)


def test_export_writes_clinerules_and_never_overwrites_unasked(store, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    path = store.export("latest", project)
    assert path == project / ".clinerules" and path.read_text() == store.load(2)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        store.export(1, project)
    assert store.export(1, project, overwrite=True).read_text() == store.load(1)


def test_an_unknown_version_names_the_saved_ones(store):
    with pytest.raises(LookupError, match=r"saved versions: \[0, 1, 2\]"):
        store.load(9)
