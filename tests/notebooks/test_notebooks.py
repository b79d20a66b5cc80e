"""Every notebook runs headless under papermill, as CI and workshop presenters run them.

The dry run is the real thing except for the models: the real Cline CLI edits real files, the local
evaluator runs the house suite's hidden tests, a real local Phoenix (the session's) records the loops.
"""

import json
import re

import nbformat
import pandas as pd
import papermill
import pytest

from helpers.core.config import REPO_ROOT
from helpers.engine.loop import describe_loop, phoenix_metadata
from helpers.app.session import DRY_RUN_LABEL
from helpers.app.notebook_runner import run_notebook

pytestmark = pytest.mark.slow
NOTEBOOKS = REPO_ROOT / "notebooks"
TINY = {"TRAIN_SIZE": 3, "TEST_SIZE": 3, "LOOPS": 2, "WORKERS": 2, "DRY_RUN": True}


@pytest.fixture(scope="module")
def isolated(tmp_path_factory, phoenix_url):
    """Outputs, rulesets and caches in a temporary folder; no key in sight; the session's Phoenix."""
    root = tmp_path_factory.mktemp("notebooks")
    mp = pytest.MonkeyPatch()
    for name, sub in (("PL_RESULTS_DIR", "act_results"), ("PL_RULESETS_DIR", "act_rulesets"), ("PL_CACHE_DIR", "cache")):
        mp.setenv(name, str(root / sub))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "PHOENIX_COLLECTOR_ENDPOINT"):
        mp.delenv(name, raising=False)
    yield {"root": root, "phoenix": phoenix_url}
    mp.undo()


def outputs(path) -> str:
    """All text a notebook showed (streams, results, errors)."""
    book = nbformat.read(path, as_version=4)
    parts = []
    for cell in book.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.extend(str(v) for k, v in out.get("data", {}).items() if k.startswith("text/"))
    return "\n".join(parts)


def test_every_notebook_has_a_parameters_cell_and_no_outputs():
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        book = nbformat.read(path, as_version=4)
        tagged = [c for c in book.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{path.name} needs exactly one cell tagged 'parameters'"
        for cell in book.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{path.name} is committed with outputs"
        assigned = re.findall(r"^([A-Z_][A-Z0-9_]*)\s*=", tagged[0].source, re.M)
        assert list(papermill.inspect_notebook(str(path))) == assigned, f"papermill cannot read every parameter of {path.name}"


# A reader's own instructions for the judge and the optimizer (the quickstart invites a changed line)
OWN_JUDGE = "You review a coding agent's patch for a small team.\nBe terse. Answer with one JSON object:\n" \
            '{"correctness": "correct" or "incorrect", "explanation": "<2-4 sentences>"}'
OWN_OPTIMIZER = "You keep a coding agent's rules file short: prefer few, broad rules.\nAnswer with one JSON " \
                'object: {"edits": [...]} as ops add, update, merge or delete.'
QUICKSTART = {"DRY_RUN": True, "JUDGE_PROMPT": OWN_JUDGE, "OPTIMIZER_PROMPT": OWN_OPTIMIZER}
# The time limit of each test that reads the one quickstart run: whichever of them runs first pays for that run (190 s
# on a quiet machine) in its own limit, and 03's baselines run the agent on the 16 test tasks twice (216 s more).
# pytest-timeout's limit does not stretch with load as the time budget does: the default 600 s stopped the quickstart's
# run mid-loop on a machine twelve times busier than its cores.
QUICKSTART_TIMEOUT_S = 1200


def reads_the_quickstart(test):
    """The tests that read the one quickstart run share a worker (and so the module's fixtures) under xdist."""
    return pytest.mark.timeout(QUICKSTART_TIMEOUT_S)(pytest.mark.xdist_group("quickstart")(test))


@pytest.fixture(scope="module")
def quickstart(isolated):
    """The quickstart as a reader first runs it, headless with no key: its defaults (6 + 16 house tasks, two
    loops), with the reader's own judge and optimizer instructions, which the scripted server answers as it
    answers the defaults. Run once (about two minutes): every test of the quickstart, its rerun and 03 read it."""
    executed = run_notebook(NOTEBOOKS / "quickstart.ipynb", {**QUICKSTART, "PHOENIX_URL": isolated["phoenix"]})
    results = isolated["root"] / "act_results/quickstart-dry-run"
    return {"executed": executed, "shown": outputs(executed), "results": results,
            "loops": [json.loads(line) for line in (results / "loops.jsonl").read_text().splitlines()]}


CLASS_NAME = re.compile(r"\b(?:[A-Z][a-z0-9]+){2,}(?:Error|Exception)\b")  # ClientPayloadError, APIConnectionError, ...


@reads_the_quickstart
def test_the_quickstart_dry_run_with_its_defaults_tells_one_story_labeled_as_scripted(isolated, quickstart):
    """The rules grow from none and accuracy rises with them; validation climbs, so the version kept is the
    learned one; on the 16-task test its gain is significant, with its p-value, interval and what the split can
    detect; no loop line shows dollars or a library's class name; figures saved, no machine path shown."""
    shown, loops = quickstart["shown"], quickstart["loops"]
    assert "SCRIPTED DRY RUN" in shown and all(r["dry_run"] for r in loops) and [r["loop"] for r in loops] == [0, 1]
    assert "Validation: 2 of the pool's 6 tasks decide which ruleset version is kept" in shown
    assert loops[0]["ruleset_rules"] == 0 and loops[1]["ruleset_rules"] > 0  # learned from the judge's English
    assert loops[1]["train_accuracy"] > loops[0]["train_accuracy"]
    validation = [r["val_accuracy"] for r in loops]
    assert validation == sorted(validation) and validation[0] == 0.0 and validation[-1] == 0.5
    assert f"Kept version: v{loops[-1]['ruleset_version']}: the highest validation accuracy (0.50" in shown
    assert loops[-1]["ruleset_version"] > 0 and loops[-1]["test_accuracy"] > loops[0]["test_accuracy"]
    # 7 of 16 test tasks flip to a pass (the team-wide rules learned carry to every library), none the other way
    assert "Primary test: v1 vs no rules on 16 tasks: +43.8 points (95% CI +15.4 to +66.8), p = 0.016: significant" in shown
    assert re.search(r"The rules help: \+43\.8 points \(p = 0\.016\), at [+-]\d+% tokens per run \(95% CI .*\)", shown)
    assert "With 16 test tasks, an observed gain under 38 points can never be significant" in shown  # what it can detect
    lines = [line for line in shown.splitlines() if re.match(r"Loop \d+: train ", line)]  # the loop lines, not captions
    assert len(lines) == 2 and all("scripted: no charge" in line and "tokens" in line for line in lines)
    assert "$0.00" not in shown and not CLASS_NAME.findall("\n".join(lines))
    assert sorted(p.name for p in (quickstart["results"] / "plots").glob("*.png")), "the quickstart saves its figures"
    assert quickstart["executed"].is_relative_to(quickstart["results"])  # act_results/<experiment>/notebooks/
    assert str(REPO_ROOT) not in quickstart["executed"].read_text()  # no machine paths in the executed copy


@reads_the_quickstart
def test_the_quickstart_follows_one_training_task_from_its_failing_diff_to_its_later_pass(quickstart):
    """Its first diff, the hidden test that failed, the judge's English on it, the edit it taught (with its
    reason and sources) and the same task passing later."""
    journey = quickstart["shown"][quickstart["shown"].index("Following training task "):]
    assert re.match(r"Following training task \S+ \(it failed in the first loop and passed in a later one\)", journey)
    assert re.search(r"== Loop 0: the agent's diff, with rules version 0\ndiff --git .*\n(.*\n)*@@ ", journey)
    assert re.search(r"== Loop 0: the hidden tests\noutcome: fail\nfailing tests: tests/", journey)
    assert re.search(r"== Loop 0: the judge's explanation\nThe patch fixes the reported behaviour, but", journey)
    assert "### Example " in journey and "<- from this task" in journey and "    why: " in journey
    assert re.search(r"== Loop [12]: the hidden tests\noutcome: pass", journey)


@reads_the_quickstart
def test_the_quickstart_shows_loop_zero_in_five_steps_each_with_what_to_see_before_run_loop_does_the_rest(quickstart):
    """Each step's cell has one output, ending in a sentence drawn from the data; run_loop then reads loop 0 back."""
    book = nbformat.read(quickstart["executed"], as_version=4)
    headings = [c.source.splitlines()[0] for c in book.cells if c.cell_type == "markdown"]
    steps = ["### Step 1: run the agent", "### Step 2: test", "### Step 3: the judge", "### Step 4: the meta-prompt",
             "### Step 5: the optimizer's edits", "### The other loops: `run_loop`"]
    assert [h for h in headings if h in steps] == steps
    shown = {}
    for index, cell in enumerate(book.cells):
        if cell.cell_type == "markdown" and cell.source.splitlines()[0] in steps[:5]:
            code = book.cells[index + 1]
            texts = [o["data"]["text/plain"] for o in code.outputs if "text/plain" in o.get("data", {})]
            texts += [o.get("text", "") for o in code.outputs if o["output_type"] == "stream"]
            progress = re.compile(r"^\w+_\d+: ")  # "train_0: 4/4 tasks done", or its progress bar
            assert len([t for t in texts if not progress.match(t)]) == 1, f"{cell.source.splitlines()[0]}: one output"
            texts = [t for t in texts if "What to see:" in t]
            shown[cell.source.splitlines()[0]] = texts[0]
    runs, tests, judge, block, edits = shown.values()
    first = quickstart["loops"][0]
    assert runs.endswith(".") and "What to see: with rules version 0 (no rules), the agent passed " \
        f"{first['train_passed']} of {first['train_size']} training tasks; 0 of {first['val_size']} validation " \
        f"tasks; {first['test_passed']} of {first['test_size']} test tasks." in runs and "diff --git" in runs
    assert "failing tests: tests/" in tests and "house convention broken" in tests and "What to see: 4 of 4 training" in tests
    assert judge.count(": incorrect\nThe patch fixes the reported behaviour, but the hidden tests") == 2
    assert "What to see: the judge explained 4 of 4 training results (4 incorrect)" in judge
    assert block.startswith("## Current rules\n(none yet")
    assert re.search(r"- explanation: \n<<<DATA-\w+ [^\n]*>>>\nThe patch fixes", block)  # fenced as data, whole
    assert "What to see: the optimizer reads" in block
    assert edits.count("\n    why: The feedback on ") == 3 and edits.count("\n    from: house__") == 3
    assert f"they make version {first['next_ruleset_version']} (3 rules), which the next loop runs." in edits
    assert describe_loop(first, DRY_RUN_LABEL) + " (already finished)" in quickstart["shown"]  # run_loop read it back


@reads_the_quickstart
def test_the_readers_own_judge_and_optimizer_instructions_are_shown_and_recorded_with_every_version(isolated, quickstart):
    assert "===== the judge's instructions (yours) =====\n" + OWN_JUDGE in quickstart["shown"]  # shown as given ...
    metadata = [json.loads(p.read_text()) for p in (isolated["root"] / "act_rulesets/quickstart-dry-run").glob("*.json")]
    assert len(metadata) >= 2 and all(m["judge_prompt"] == OWN_JUDGE and m["optimizer_prompt"] == OWN_OPTIMIZER
                                      for m in metadata)  # ... and recorded with every version made under them


@reads_the_quickstart
def test_a_rerun_of_the_finished_quickstart_asks_the_model_nothing_and_shows_the_same_loop_lines(isolated, quickstart):
    again = outputs(run_notebook(NOTEBOOKS / "quickstart.ipynb", {**QUICKSTART, "PHOENIX_URL": isolated["phoenix"]}))
    requests = re.search(r"Model requests answered by the scripted server in this session: (\d+)", again)
    assert requests and int(requests.group(1)) == 0, "a rerun of a finished experiment asks the model nothing"
    for record in quickstart["loops"]:  # and shows the same loop lines, numbers and all
        assert describe_loop(record, DRY_RUN_LABEL) + " (already finished)" in again


@reads_the_quickstart
def test_the_results_notebook_with_its_defaults_reads_the_quickstarts_experiment_ablates_and_transfers(isolated, quickstart):
    """Run right after the no-key quickstart, 03 finds its experiment; ABLATE measures each kept rule (its forest
    plot inline and saved); TRANSFER_AGENTS tries the kept rules on another agent, a second, labeled question;
    BASELINES (on by default) runs the agent's own init file and the team's file on the same test tasks and prints
    the four Holm-corrected secondary comparisons, the two answers and the forest plot."""
    params = {"ABLATE": True, "ABLATE_SPLIT": "val", "COMPARE_WITH": ["quickstart-dry-run"],
              "TRANSFER_AGENTS": ["codex"], "TRANSFER_SPLIT": "val"}  # on the 2 validation tasks: cheap
    executed = run_notebook(NOTEBOOKS / "03_results.ipynb", params)
    shown = outputs(executed)
    assert "Experiment: quickstart-dry-run" in shown and "SCRIPTED DRY RUN" in shown and "Ruleset v0 -> v1" in shown
    assert executed.is_relative_to(quickstart["results"])  # its executed copy goes with the experiment it read
    assert (quickstart["results"] / "plots/ablation.png").read_bytes().startswith(b"\x89PNG")
    images = [out for cell in nbformat.read(executed, as_version=4).cells for out in cell.get("outputs", [])
              if "image/png" in out.get("data", {}) and "ABLATE" in cell.source]
    assert len(images) == 1  # the ablation forest plot, inline
    assert "A second, separate question (not the primary test)" in shown
    assert "Resolved share per repository, first loop to last:" in shown and "Leaving out R" in shown  # captions
    rows = [line.split() for line in shown.splitlines() if re.match(r"^\d\s+codex\s", line)]
    assert [row[1] for row in rows] == ["codex"] and rows[0][3] == "SCRIPTED", rows  # one paired row, labeled
    assert re.search(r"^codex \(.*?\): (Noise|The rules help|The rules hurt|No test)", shown, re.M)
    # Baselines (on by default): the agent's own init file and the house suite's team file on the same 16 test tasks
    assert "Do the learned rules beat what the agent's own /init writes? " in shown
    assert "Do the learned rules beat the file the team already has? " in shown
    assert "- init (cline: the project's own init prompt (cline has no init)): " in shown  # Cline has no /init: said
    assert re.search(r"- team \(the team's team_rules\.md\): [\d.]+ on 16 test tasks; .*scripted: no charge", shown)
    secondaries = re.findall(r"^Secondary: (\w+) vs (\w+): .*Holm-adjusted p = ", shown, re.M)
    assert secondaries == [("learned", "init"), ("learned", "team"), ("init", "none"), ("team", "none")]
    assert "Holm-corrected together" in shown and (quickstart["results"] / "plots/baselines.png").read_bytes().startswith(b"\x89PNG")
    forest = [out for cell in nbformat.read(executed, as_version=4).cells for out in cell.get("outputs", [])
              if "image/png" in out.get("data", {}) and "run_baselines" in cell.source]
    assert len(forest) == 1  # the forest plot of each arm against no rules, inline


def test_the_setup_notebook_reports_what_is_here(isolated):
    shown = outputs(run_notebook(NOTEBOOKS / "00_setup.ipynb", {"PHOENIX_URL": isolated["phoenix"]}, 
                                 output=isolated["root"] / "00_setup.ipynb"))
    assert "Everything the loop needs is here." in shown and "Phoenix answers at" in shown
    from helpers.app.doctor import PLATFORM_NOTES, platform_of

    assert PLATFORM_NOTES[platform_of()] in shown and "Real agent runs can start here." in shown  # which, and so


def test_the_split_notebook_loads_a_local_swebench_file_and_uploads_it(isolated):
    fixture = REPO_ROOT / "tests/fixtures/swebench/lite_sample.jsonl"
    params = {"EXPERIMENT": "ci-split", "TASK_SOURCE": str(fixture), "TRAIN_SIZE": 2, "TEST_SIZE": 2,
              "SPLIT_STRATEGY": "by_repo", "PHOENIX_URL": isolated["phoenix"]}
    shown = outputs(run_notebook(NOTEBOOKS / "01_dataset_split.ipynb", params))
    assert "train: dataset 'cline: ci-split train' (1 tasks)" in shown  # a pool of 2: one learns, one validates
    assert "val: dataset 'cline: ci-split val' (1 tasks)" in shown
    split = json.loads((isolated["root"] / "act_results/ci-split/split.json").read_text())
    sides = [set(split[side]) for side in ("train", "validation", "test")]
    assert [len(side) for side in sides] == [1, 1, 2] and not (sides[0] & sides[1] or sides[0] & sides[2] or sides[1] & sides[2])


def test_the_act_notebook_writes_the_cookbooks_loop_out_for_the_chosen_agent_as_run_loop_would(isolated):
    """02 writes the loop out as the seed does (a plain for over run_tasks, evaluate_results,
    log_experiment_to_phoenix, optimize) for the AGENT chosen: Codex here, where Cline is the quickstart's (every
    registered agent goes through the same run_tasks, and each runs for real in its own package's tests). The
    library's run_loop on the same split writes the same records, and each split is logged to Phoenix as an
    experiment named and tagged as run_loop tags it (phoenix_metadata)."""
    from phoenix.client import Client

    from helpers import LoopSettings, load_or_make_split, run_loop
    from helpers.app.session import open_session
    from helpers.store.loops import loop_records, loop_rows

    agent = "codex"
    params = {**TINY, "EXPERIMENT": "ci-act", "TASK_SOURCE": "house", "LOOPS": 1, "AGENT": agent,
              "PHOENIX_URL": isolated["phoenix"]}
    with pytest.MonkeyPatch.context() as mp:  # both runs ask the models afresh: a cached answer costs nothing
        mp.setenv("PL_CACHE_DIR", str(isolated["root"] / "notebook-cache"))
        executed = run_notebook(NOTEBOOKS / "02_optimize_cline_act.ipynb", params)
    shown = outputs(executed)
    sides = load_or_make_split("ci-act-library", "house", TINY["TRAIN_SIZE"], TINY["TEST_SIZE"], "chronological")
    with pytest.MonkeyPatch.context() as mp, open_session(dry_run=True, agent=agent, phoenix=False) as session:
        mp.setenv("PL_CACHE_DIR", str(isolated["root"] / "library-cache"))  # its own calls, not the notebook's answers
        run_loop(sides[0], sides[2], LoopSettings("ci-act-library", loops=1, workers=TINY["WORKERS"], agent=agent),
                 session, val_df=sides[1])
    # Apart from names and times (pytest's log ends with its duration), only token counts may differ: the models
    # read their scratch folder's path, and the notebook's kernel and this process have pids of other lengths.
    differ = {"experiment", "started_at", "finished_at", "agent_tokens", "judge_tokens", "duration_s", "log_path",
              "test_log", "input_tokens", "output_tokens", "cached_tokens", "cost_usd", "agent_cost_usd"}
    notebook, library = loop_records("ci-act")[0], loop_records("ci-act-library")[0]
    assert notebook["agent"] == library["agent"] == agent
    assert {k: v for k, v in notebook.items() if k not in differ} == {k: v for k, v in library.items() if k not in differ}
    assert abs(notebook["agent_tokens"] - library["agent_tokens"]) < 0.01 * library["agent_tokens"]
    for split in ("train", "val", "test"):
        ours, theirs = (loop_rows(name, split, 0).drop(columns=list(differ), errors="ignore")
                        for name in ("ci-act", "ci-act-library"))
        pd.testing.assert_frame_equal(ours, theirs, obj=split)
    assert "Loop 0: train " in shown and "SCRIPTED DRY RUN" in shown
    assert "===== system =====" in shown and "## Current rules" in shown  # the optimizer's real meta-prompt
    whole = executed.read_text()  # progress as widgets without a warning; no path of this machine anywhere
    assert "TqdmWarning" not in whole and "IProgress not found" not in whole
    assert str(REPO_ROOT) not in whole and str(isolated["root"]) not in whole
    assert (isolated["root"] / "act_rulesets/ci-act/ruleset_1.txt").exists()
    assert (isolated["root"] / "act_results/ci-act/plots/accuracy.png").read_bytes().startswith(b"\x89PNG")
    images = [out for cell in nbformat.read(executed, as_version=4).cells for out in cell.get("outputs", [])
              if "image/png" in out.get("data", {})]
    assert len(images) == 1  # the accuracy curve, inline
    assert "Loop 0 ran with v0, the latest version." in shown
    assert "Following training task " in shown and "== Loop 0: the judge's explanation" in shown  # the journey
    client = Client(base_url=isolated["phoenix"])
    with open_session(dry_run=True, agent=agent, phoenix=False) as session:  # the tags run_loop would give
        tags = {split: phoenix_metadata(0, 0, LoopSettings("ci-act", agent=agent), session, split)
                for split in ("Train", "Val", "Test")}
    for split in ("train", "val", "test"):
        dataset = client.datasets.get_dataset(dataset=f"{agent}: ci-act {split}")
        logged = {e["name"]: e.get("metadata") or {} for e in client.experiments.list(dataset_id=dataset.id)}
        assert list(logged) == [f"{split.title()} 0 (scripted dry run)"]  # the dry run says so in the name
        assert tags[split.title()].items() <= logged[f"{split.title()} 0 (scripted dry run)"].items()


def test_the_plan_mode_notebook_judges_plans(isolated):
    params = {**TINY, "EXPERIMENT": "ci-plan", "LOOPS": 1, "PHOENIX_URL": isolated["phoenix"]}
    shown = outputs(run_notebook(NOTEBOOKS / "04_cline_plan_mode.ipynb", params))
    assert "--- plan ---" in shown and "SCRIPTED DRY RUN" in shown
    assert "--- the kept rules (version 0) ---" in shown  # one loop, no validation result beat the start: v0 is kept
    assert "The plan addresses the issue" in shown and "The patch" not in shown  # plans judged as plans
    assert "Loop 0 (one loop: nothing to compare yet): train" in shown  # each figure followed by what to read in it
    assert (isolated["root"] / "act_results/ci-plan/plots/accuracy.png").read_bytes().startswith(b"\x89PNG")


def test_the_latent_rules_notebook_reproduces_the_tables_shape_and_its_dry_run_learns_ten_rules(isolated):
    params = {"EXPERIMENT": "ci-latent", "RULE_COUNTS": [10], "TRAIN_SIZE": 8, "TEST_SIZE": 8, "LOOPS": 6,
              "WORKERS": 2, "DRY_RUN": True, "PHOENIX_URL": isolated["phoenix"]}
    shown = outputs(run_notebook(NOTEBOOKS / "06_latent_rules.ipynb", params))
    assert "SCRIPTED DRY RUN" in shown and "published all, loop 5" in shown
    loops = [json.loads(line) for line in (isolated["root"] / "act_results/ci-latent-10rules/loops.jsonl").read_text().splitlines()]
    assert loops[0]["test_accuracy"] == 0.0 and loops[5]["test_accuracy"] == 1.0  # every rule learned by loop 5
    assert "explanations vs scores only on 8 tasks: +100.0 points" in shown  # what the English adds
    assert (isolated["root"] / "act_results/ci-latent-10rules/plots/latent_rules.png").read_bytes().startswith(b"\x89PNG")
    assert "Test pages that follow every rule, at the last loop run: 10 rules 1.00 after loop 5" in shown


def test_the_continual_notebook_learns_from_a_prs_feedback_applies_and_rolls_back(isolated):
    shown = outputs(run_notebook(NOTEBOOKS / "05_continual.ipynb", {"DRY_RUN": True, "INBOX": "ci-continual"}))
    assert "SCRIPTED DRY RUN" in shown and "Proposal p0001" in shown and "Approved p0001: ruleset v1" in shown
    assert "prompt-learning: learned rules v1 (p0001, 3 edits)" in shown and "Rolled back v1 -> no learned rules" in shown
    assert "cost scripted: no charge" in shown and "unpriced" not in shown and "Patches failed" not in shown
    assert "why: maria-reviewer's review comment: 'Every change gets a line under `## Unreleased`" in shown
    assert "2 untrusted records, kept out of the optimizer" in shown and "helpful-stranger is FIRST_TIME_CONTRIBUTOR" in shown
    assert re.search(r"Committed v1 to \S+ on prompt-learning/rules in \S+ \(the demo's scratch clone", shown)
    assert "continual-demo-" not in shown  # no scratch folder's path in the executed copy


def test_the_your_repo_notebook_mines_a_history_runs_the_loop_and_exports_the_rules(isolated):
    """With AGENT = "codex" (any registered agent runs it; Cline, the default, runs the quickstart's chain): its
    rules file, AGENTS.md, is the one written."""
    params = {"DRY_RUN": True, "EXPERIMENT": "ci-your-repo", "AGENT": "codex", "PHOENIX_URL": isolated["phoenix"]}
    shown = outputs(run_notebook(NOTEBOOKS / "07_your_repo.ipynb", params))
    assert "Mined 6 commits of ci-your-repo: 4 kept as tasks, 2 dropped." in shown and "no tests touched" in shown
    assert DRY_RUN_LABEL in shown and "Written: AGENTS.md" in shown
    tasks = (isolated["root"] / "act_results/ci-your-repo/tasks.jsonl").read_text().splitlines()
    assert len(tasks) == 4 and all(json.loads(t)["FAIL_TO_PASS"] for t in tasks)
    assert (isolated["root"] / "act_results/ci-your-repo/plots/mining.png").read_bytes().startswith(b"\x89PNG")
    assert re.search(r"Written: AGENTS\.md in \S+ \(the demo's scratch copy", shown)
    assert "[R1] Add a one-line entry under `## Unreleased` in CHANGELOG.md" in shown  # the demo's habit, learned
    assert "Of 6 commits scanned, 4 became tasks. Dropped: " in shown  # the figure, explained
