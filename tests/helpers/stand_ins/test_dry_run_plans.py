"""Plan mode's scripted judge judges plans as plans: which conventions the plan's steps keep and which they leave
out, never a patch's verdict."""

import json

from helpers.families.coding.house_suite import CONVENTIONS
from helpers.families.coding.tasks import load_house_suite
from helpers.stand_ins.dry_run import DryRunScript


def judged(script, task, known):
    plan = script.plan_for(task, known)
    request = {"messages": [{"role": "system", "content": "You judge a coding agent's work."},
                            {"role": "user", "content": f"## Issue\n{task['problem_statement']}\n\n## The agent's plan\n"
                                                        f"{plan}\n\noutcome: not run"}]}
    return json.loads(script.judge_reply(request).content)


def test_a_plan_is_judged_by_the_conventions_its_steps_keep():
    tasks = load_house_suite()
    script = DryRunScript(tasks)
    task = next(t for t in script.tasks.values() if len(t["conventions"]) >= 2)
    first, second = task["conventions"][:2]
    none = judged(script, task, set())
    assert none["correctness"] == "incorrect" and "The patch" not in none["explanation"]
    assert none["explanation"].startswith("The plan addresses the issue, but no step keeps")
    assert all(CONVENTIONS[c]["title"] in none["explanation"] for c in task["conventions"])
    part = judged(script, task, {first})
    assert part["correctness"] == "incorrect" and CONVENTIONS[first]["title"] not in part["explanation"]
    assert CONVENTIONS[second]["title"] in part["explanation"] and "names 1 of the conventions" in part["explanation"]
    whole = judged(script, task, set(task["conventions"]))
    assert whole["correctness"] == "correct" and "names every house convention" in whole["explanation"]
