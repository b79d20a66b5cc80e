"""The one test run pair by pair: a scripted dry run on the whole house suite stops as soon as the pre-declared
sequential test knows, says where and why, never counts the tasks it did not run, and resumes for free."""

import pytest

from helpers.analysis.evidence import sequential_verdict
from helpers.app.session import open_session
from helpers.engine.loop import LoopSettings
from helpers.engine.one_test import RUN_IDS, run_one_test, task_order
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.families.coding.tasks import load_house_suite
from helpers.store.loops import load_one_test, one_test_rows
from helpers.store.records import read_jsonl, run_records_path

RULES = "\n".join(f"- {convention['rule']}" for convention in CONVENTIONS.values())


@pytest.fixture(scope="module")
def house():
    return load_house_suite()


def test_a_scripted_one_test_on_48_tasks_stops_early_says_why_and_a_rerun_asks_the_model_nothing(isolated, house):
    assert len(house) >= 48
    settings = LoopSettings("one-test", workers=8, agent="codex", test_each_loop=False)
    with open_session(dry_run=True, phoenix=False, agent="codex") as session:
        result = run_one_test(house, settings, session, start=("no rules", ""), kept=("the house rules", RULES),
                              verbose=False)
        calls = len(session.gateway.calls())
    assert result.decision == "help" and result.tasks_run < len(house)
    assert result.sentence().startswith(f"Stopped after {result.tasks_run} of {len(house)} test tasks: the rules help")
    record = load_one_test("one-test")
    # the order was declared and recorded; only its first tasks ran, on both sides, and nothing after the stop
    assert record["order"] == task_order(list(house.instance_id), "one-test", 0)
    for side, run_id in RUN_IDS.items():
        ran = [r["instance_id"] for r in read_jsonl(run_records_path("one-test", run_id))]
        assert set(ran) == set(record["order"][: result.tasks_run]), side  # a try the host saw fail adds a record
        assert len(one_test_rows("one-test", side)) == result.tasks_run
    assert record["tasks_saved"] == len(house) - result.tasks_run and record["decision"] == "help"
    verdict = sequential_verdict(record, one_test_rows("one-test", "start"), one_test_rows("one-test", "kept"),
                                 no_charge="scripted: no charge")
    assert f"It saved {2 * record['tasks_saved']} agent runs against the fixed design (scripted: no charge)" in verdict

    with open_session(dry_run=True, phoenix=False, agent="codex") as session:  # the rerun: same sequence, no request
        again = run_one_test(house, settings, session, start=("no rules", ""), kept=("the house rules", RULES),
                             verbose=False)
        model_calls = [c for c in session.gateway.calls() if c["path"] != "/v1/models"]  # the session's model check
    assert model_calls == []
    assert (again.decision, again.tasks_run, again.looks) == (result.decision, result.tasks_run, result.looks)
    assert calls > 0


def test_a_rerun_with_other_rules_under_the_same_experiment_is_refused_before_any_run(isolated, house):
    settings = LoopSettings("declared", workers=4, agent="codex", test_each_loop=False)
    from helpers.engine.one_test import _begin
    from helpers.stats.sequential import SequentialDesign

    design = SequentialDesign(n_tasks=8, batch=4)
    _begin("declared", house.head(8), design, ("no rules", ""), ("v1", RULES), 0)
    with open_session(dry_run=True, phoenix=False, agent="codex") as session:
        with pytest.raises(ValueError, match="already declared its one test with another ruleset_sha"):
            run_one_test(house.head(8), settings, session, start=("no rules", ""), kept=("v2", RULES + "\n- more"))
        assert [c for c in session.gateway.calls() if c["path"] != "/v1/models"] == []


def test_settings_refuse_a_one_test_of_plans_or_of_several_attempts():
    with pytest.raises(ValueError, match="needs attempts=1 and mode='act'"):
        LoopSettings("x", test_each_loop=False, attempts=2)
    with pytest.raises(ValueError, match="test_each_loop True, False or None"):
        LoopSettings("x", test_each_loop="no")


def test_left_to_choose_loops_run_the_test_split_only_where_it_is_free_or_the_one_test_cannot_run_alone():
    from helpers.engine.loop_family import tests_each_loop

    auto = dict(test_each_loop=None)  # the notebooks' default (TEST_EACH_LOOP=None)
    assert tests_each_loop(LoopSettings("x", **auto), dry_run=True)  # the scripted dry run: the curve costs nothing
    assert not tests_each_loop(LoopSettings("x", **auto), dry_run=False)  # a real model: the one test pays what it needs
    assert tests_each_loop(LoopSettings("x", attempts=2, **auto), dry_run=False)
    assert tests_each_loop(LoopSettings("x", mode="plan", **auto), dry_run=False)
    assert tests_each_loop(LoopSettings("x", test_each_loop=True), dry_run=False)
    assert not tests_each_loop(LoopSettings("x", test_each_loop=False), dry_run=True)
