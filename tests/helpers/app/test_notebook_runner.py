"""Headless runs: parameters from the command line, executed copies that are safe to share."""

import json
import os
import time

import nbformat
import pytest

from helpers.core.config import REPO_ROOT
from helpers.app.notebook_parameters import check_parameters, parse_parameters, parse_value
from helpers.app.notebook_runner import main, output_path_for, run_notebook, scrub_notebook

NOTEBOOKS = REPO_ROOT / "notebooks"


@pytest.mark.parametrize("text, value", [("3", 3), ("0.5", 0.5), ("True", True), ("None", None),
                                         ("['a', 'b']", ["a", "b"]), ("house-demo", "house-demo"),
                                         ("false", False), ("true", True), ("none", None)])
def test_parameter_values_are_read_as_python_literals_or_kept_as_text(text, value):
    assert parse_value(text) == value


def test_parameters_come_as_NAME_VALUE_pairs_or_p_flags():
    assert parse_parameters(["LOOPS=2", "EXPERIMENT=demo"], [["WORKERS", "4"]]) == {
        "LOOPS": 2, "EXPERIMENT": "demo", "WORKERS": 4}


def test_a_parameter_without_a_value_is_a_clear_error():
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        parse_parameters(["LOOPS"], [])


def test_executed_notebooks_lose_keys_and_machine_paths(tmp_path, monkeypatch):
    shaped = "sk-" + "proj-" + "abcdefghijklmnopqrstuv"  # built here so no key-shaped literal is committed
    monkeypatch.setenv("OPENAI_API_KEY", "my-very-private-key-123")
    monkeypatch.setenv("PL_RESULTS_DIR", str(tmp_path / "results"))  # results outside the repository
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(1)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=(
        f"key my-very-private-key-123 at {REPO_ROOT}/act_results/x and {shaped}\n"))]
    nb.cells.append(cell)
    nb.metadata["papermill"] = {"output_path": str(tmp_path / "results/demo/notebooks/out.ipynb")}
    path = tmp_path / "out.ipynb"
    nbformat.write(nb, path)
    scrub_notebook(path)
    text = path.read_text()
    assert "my-very-private-key-123" not in text and shaped not in text
    assert str(REPO_ROOT) not in text and str(tmp_path) not in text
    assert "<repo>/act_results/x" in "".join(json.loads(text)["cells"][0]["outputs"][0]["text"])
    assert json.loads(text)["metadata"]["papermill"]["output_path"] == "<results>/demo/notebooks/out.ipynb"


def test_the_executed_copy_goes_to_the_experiment_the_notebook_will_write_to(monkeypatch, tmp_path):
    monkeypatch.setenv("PL_RESULTS_DIR", str(tmp_path))
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    quickstart, optimize = REPO_ROOT / "notebooks/quickstart.ipynb", REPO_ROOT / "notebooks/02_optimize_cline_act.ipynb"

    def folder(notebook, **params):
        path = output_path_for(notebook, params)
        assert path.parent.name == "notebooks" and path.name == notebook.name
        return path.parent.parent.relative_to(tmp_path).as_posix()

    assert folder(quickstart, EXPERIMENT="demo") == "demo"
    assert folder(optimize) == "house"  # the notebook's own default
    assert folder(quickstart, DRY_RUN=True) == "quickstart-dry-run"  # as the quickstart names it
    assert folder(quickstart, DRY_RUN=False) == "quickstart"
    monkeypatch.setenv("OPENAI_API_KEY", "a-key")
    assert folder(quickstart) == "quickstart"  # a key: a real run
    monkeypatch.delenv("OPENAI_API_KEY")
    from helpers.core import config

    if not config.has_credentials():  # a key in this checkout's .env would make it a real run
        assert folder(quickstart) == "quickstart-dry-run"
    continual = REPO_ROOT / "notebooks/05_continual.ipynb"  # 05 keeps an inbox: its copy goes with it
    assert folder(continual, DRY_RUN=True) == "continual-dry-run" and folder(continual, INBOX="team") == "team"
    your_repo = REPO_ROOT / "notebooks/07_your_repo.ipynb"  # 07's is named after the repository it mines
    assert folder(your_repo, DRY_RUN=True) == "invoices-dry-run"
    assert folder(your_repo, DRY_RUN=True, REPO=str(tmp_path / "billing")) == "billing-dry-run"


def test_the_results_notebook_reads_the_quickstarts_experiment_by_default_and_its_copy_goes_there(monkeypatch, tmp_path):
    from helpers.store.loops import finished_experiments, resolve_experiment
    from helpers.store.records import append_jsonl, loops_path

    monkeypatch.setenv("PL_RESULTS_DIR", str(tmp_path))
    results = REPO_ROOT / "notebooks/03_results.ipynb"
    with pytest.raises(ValueError, match="No experiment has a finished loop yet: run the quickstart"):
        resolve_experiment(None)
    (tmp_path / "started-only").mkdir()  # a folder without a finished loop is not a result
    for name in ("older", "quickstart-dry-run", "newest"):
        append_jsonl(loops_path(name), {"loop": 0, "ruleset_version": 0})
        os.utime(loops_path(name), (time.time() + len(finished_experiments()), time.time() + len(finished_experiments())))
    assert finished_experiments() == ["newest", "quickstart-dry-run", "older"]
    assert resolve_experiment(None) == "quickstart-dry-run"  # right after the no-key quickstart
    assert output_path_for(results, {}).parent.parent.name == "quickstart-dry-run"
    append_jsonl(loops_path("quickstart"), {"loop": 0, "ruleset_version": 0})
    assert resolve_experiment(None) == "quickstart"  # a real quickstart before its dry run
    assert resolve_experiment("older") == "older"
    with pytest.raises(ValueError, match=r"'nope' has no finished loop\. Experiments with results: newest, quickstart-dry-run, older, quickstart\. "):
        resolve_experiment("nope")


# Parameters are checked against the notebook's parameters cell before any kernel starts.

PARAMETERS_CELL = """from typing import Optional
LOOPS = 3
WORKERS = 2
TRAIN_SIZE = 6
CONTEXT_SIZE_K = 400_000
TEMPERATURE = 0.5
EXPERIMENT = "demo"
DRY_RUN = None  # None: decided by the keys
BUDGET_USD: Optional[float] = None
"""


def write_notebook(folder, parameters=PARAMETERS_CELL):
    """A notebook whose one cell after the parameters leaves a file behind: proof that it ran."""
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell(parameters)
    cell.metadata["tags"] = ["parameters"]
    book.cells = [cell, nbformat.v4.new_code_cell("from pathlib import Path\nPath('ran.txt').write_text(str(LOOPS))")]
    path = folder / "demo.ipynb"
    nbformat.write(book, path)
    return path


def test_good_parameters_pass_whole_floats_become_ints_and_ints_pass_for_floats(tmp_path):
    notebook = write_notebook(tmp_path)
    params = {"LOOPS": 3.0, "TEMPERATURE": 1, "EXPERIMENT": "x", "DRY_RUN": True, "BUDGET_USD": 2, "WORKERS": 1}
    checked = check_parameters(notebook, params)
    assert checked == params and type(checked["LOOPS"]) is int
    assert check_parameters(notebook, {"BUDGET_USD": None, "DRY_RUN": "anything: a None default says no type"})


@pytest.mark.parametrize("params, says", [
    ({"LOOP": 1}, "unknown parameter LOOP (did you mean LOOPS?); known: LOOPS, WORKERS, TRAIN_SIZE"),
    ({"LOOPS": "abc"}, "LOOPS='abc' is a str, expected an int (default 3)"),
    ({"LOOPS": 2.5}, "LOOPS=2.5 is a float, expected an int (default 3)"),
    ({"LOOPS": True}, "LOOPS=True is a bool, expected an int (default 3)"),
    ({"TEMPERATURE": "hot"}, "TEMPERATURE='hot' is a str, expected a float (default 0.5)"),
    ({"EXPERIMENT": 2024}, "EXPERIMENT=2024 is an int, expected a str (default \"demo\"); to pass it as text, quote it"),
    ({"BUDGET_USD": "ten"}, "BUDGET_USD='ten' is a str, expected a float or None (default None)"),
    ({"WORKERS": 0}, "WORKERS=0: must be at least 1"),
    ({"LOOPS": -1}, "LOOPS=-1: must be at least 1"),
    ({"TRAIN_SIZE": 0}, "TRAIN_SIZE=0: must be at least 1"),
    ({"CONTEXT_SIZE_K": 0}, "CONTEXT_SIZE_K=0: must be at least 1"),
])
def test_a_bad_parameter_is_one_error_saying_what_was_wrong(tmp_path, params, says):
    with pytest.raises(ValueError) as caught:
        check_parameters(write_notebook(tmp_path), params)
    assert says in str(caught.value) and "nothing was run" in str(caught.value)


def test_every_problem_is_listed_in_the_one_error(tmp_path):
    with pytest.raises(ValueError) as caught:
        check_parameters(write_notebook(tmp_path), {"LOOPS": "abc", "WORKERS": 0, "SEEDS": 1})
    assert str(caught.value).count("\n  ") == 3


def test_a_notebook_without_a_parameters_cell_takes_none(tmp_path):
    notebook = write_notebook(tmp_path, parameters="LOOPS = 3")
    book = nbformat.read(notebook, as_version=4)
    book.cells[0].metadata["tags"] = []
    nbformat.write(book, notebook)
    with pytest.raises(ValueError, match="unknown parameter LOOPS; known: none"):
        check_parameters(notebook, {"LOOPS": 3})


def test_bad_parameters_stop_the_run_before_a_kernel_starts_or_a_file_is_written(tmp_path):
    notebook, output = write_notebook(tmp_path), tmp_path / "out" / "executed.ipynb"
    for params in ({"LOOP": 1}, {"LOOPS": "abc"}, {"WORKERS": 0}):
        with pytest.raises(ValueError, match="nothing was run"):
            run_notebook(notebook, params, output)
        assert not (tmp_path / "ran.txt").exists() and not output.parent.exists()


def test_good_parameters_run_the_notebook(tmp_path):  # the control for the test above: a kernel starts
    notebook, output = write_notebook(tmp_path), tmp_path / "out" / "executed.ipynb"
    assert run_notebook(notebook, {"LOOPS": 2.0}, output) == output
    assert (tmp_path / "ran.txt").read_text() == "2"


def test_the_command_line_refuses_bad_parameters_with_one_message_and_no_traceback(tmp_path, capsys):
    notebook = write_notebook(tmp_path)
    assert main([str(notebook), "LOOPS=abc", "-p", "LOOP", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Bad parameters for demo.ipynb") and "Traceback" not in err
    assert "LOOPS='abc' is a str" in err and "did you mean LOOPS?" in err
    assert not (tmp_path / "ran.txt").exists()
    assert main([str(tmp_path / "missing.ipynb")]) == 2 and "No notebook at" in capsys.readouterr().err


def test_the_cookbook_notebooks_take_what_their_tests_and_the_readme_pass():
    tiny = {"TRAIN_SIZE": 3, "TEST_SIZE": 3, "LOOPS": 2, "WORKERS": 2, "DRY_RUN": True}
    check_parameters(NOTEBOOKS / "quickstart.ipynb", {**tiny, "EXPERIMENT": "ci", "PHOENIX_URL": "http://127.0.0.1:1"})
    check_parameters(NOTEBOOKS / "02_optimize_cline_act.ipynb", {**tiny, "TASK_SOURCE": "house", "EXPERIMENT": "x"})
    for name in ("quickstart", "02_optimize_cline_act"):  # the exercises' parameters, as make notebook passes them
        check_parameters(NOTEBOOKS / f"{name}.ipynb", {"START_RULES": "my_rules.md", "JUDGE_PROMPT_FILE": "judge.txt",
                                                      "OPTIMIZER_PROMPT_FILE": "optimizer.txt", "RULES_MAX_TOKENS": 100})
    check_parameters(NOTEBOOKS / "04_cline_plan_mode.ipynb", {**tiny, "EXPERIMENT": "ci-plan"})
    check_parameters(NOTEBOOKS / "01_dataset_split.ipynb", {"TASK_SOURCE": "x.jsonl", "SPLIT_STRATEGY": "by_repo"})
    check_parameters(NOTEBOOKS / "00_setup.ipynb", {"PHOENIX_URL": "http://127.0.0.1:1"})
    check_parameters(NOTEBOOKS / "03_results.ipynb", {"EXPERIMENT": "lite-small"})
    with pytest.raises(ValueError, match="did you mean LOOPS"):
        check_parameters(NOTEBOOKS / "quickstart.ipynb", {"LOOP": 1})


def test_a_validation_side_of_zero_is_a_choice_the_notebooks_take_and_below_zero_is_refused():
    for name in ("quickstart", "01_dataset_split", "02_optimize_cline_act", "04_cline_plan_mode"):
        assert check_parameters(NOTEBOOKS / f"{name}.ipynb", {"VAL_SIZE": 0}) == {"VAL_SIZE": 0}
    with pytest.raises(ValueError, match="VAL_SIZE=-1: must be at least 0"):
        check_parameters(NOTEBOOKS / "quickstart.ipynb", {"VAL_SIZE": -1})
    with pytest.raises(ValueError, match="TRAIN_SIZE=0: must be at least 1"):
        check_parameters(NOTEBOOKS / "quickstart.ipynb", {"TRAIN_SIZE": 0})


def talking_notebook(folder, last_cell="print('loop 0: train 2/4 passed')"):
    """Two sections that print, and a last cell given by the test."""
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    parameters = nbformat.v4.new_code_cell("LOOPS = 1")
    parameters.metadata["tags"] = ["parameters"]
    book.cells = [parameters, nbformat.v4.new_markdown_cell("## 1. Models\nwhat runs"),
                  nbformat.v4.new_code_cell("print('session opened')"),
                  nbformat.v4.new_markdown_cell("## 2. The loop"), nbformat.v4.new_code_cell(last_cell)]
    path = folder / "talk.ipynb"
    nbformat.write(book, path)
    return path


def test_a_headless_run_prints_each_section_and_what_the_notebook_prints_as_it_goes(tmp_path, capfd):
    notebook = talking_notebook(tmp_path)
    assert main([str(notebook), "LOOPS=2", "-o", str(tmp_path / "out.ipynb")]) == 0
    out, err = capfd.readouterr()
    lines = out.splitlines()
    assert lines.index("-- 1. Models") < lines.index("session opened") < lines.index("-- 2. The loop") \
        < lines.index("loop 0: train 2/4 passed")
    assert "Executing Cell" not in out and "Kernel is running over TCP" not in out + err


def test_a_stop_is_one_message_naming_the_fault_with_the_traceback_in_a_log_it_names(tmp_path, capfd):
    stop = "class LoopStopped(RuntimeError): pass\nraise LoopStopped('2 of 2 runs failed: set OPENAI_API_KEY')"
    notebook, output = talking_notebook(tmp_path, stop), tmp_path / "out.ipynb"
    assert main([str(notebook), "-o", str(output)]) == 1
    err = capfd.readouterr().err
    assert "LoopStopped: 2 of 2 runs failed: set OPENAI_API_KEY" in err and "Traceback" not in err
    assert "Full detail: " in err and str(output.with_suffix(".log")) in err
    assert "Traceback" in output.with_suffix(".log").read_text() or "raise LoopStopped" in output.with_suffix(".log").read_text()
    error = [o for c in json.loads(output.read_text())["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert error[0]["traceback"][0] == "LoopStopped: 2 of 2 runs failed: set OPENAI_API_KEY"
    assert len(error[0]["traceback"]) == 2 and "out.log" in error[0]["traceback"][1]


def test_a_run_stopped_with_sigterm_still_leaves_a_scrubbed_notebook(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    wait = f"import time\nprint({str(REPO_ROOT)!r}, flush=True)\ntime.sleep(120)"
    notebook, output = talking_notebook(tmp_path, wait), tmp_path / "out.ipynb"
    run = subprocess.Popen([sys.executable, "-m", "helpers.app.notebook_runner", str(notebook), "-o", str(output)],
                           cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in run.stdout:  # the last cell has started when it prints
        if str(REPO_ROOT) in line:
            break
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait(timeout=120) == 130
    assert output.exists() and str(REPO_ROOT) not in output.read_text() and "<repo>" in output.read_text()


def refusing_notebook(folder):
    """Prints a line per section and a figure-sized output; refuses LOOPS over 5 in its second section, as the
    quickstart refuses changed instructions under an old EXPERIMENT."""
    return talking_notebook(folder, "if LOOPS > 5:\n    raise ValueError('refused: choose another EXPERIMENT name')\n"
                                    "print('loop 0: train 2/4 passed', 'x' * 5000)")


def test_a_refused_rerun_leaves_the_earlier_finished_copy_byte_for_byte_and_writes_its_own_beside_it(tmp_path, capfd):
    notebook, output = refusing_notebook(tmp_path), tmp_path / "out" / "talk.ipynb"
    assert main([str(notebook), "LOOPS=2", "-o", str(output)]) == 0
    earlier = output.read_bytes()
    for _ in range(2):  # refused twice: the finished copy stays, the latest refusal is beside it
        assert main([str(notebook), "LOOPS=9", "-o", str(output)]) == 1
        assert output.read_bytes() == earlier
        stopped = output.with_name("talk.stopped.ipynb")
        assert "refused: choose another EXPERIMENT name" in stopped.read_text()
        assert output.with_name("talk.stopped.log").exists() and not output.with_suffix(".log").exists()
        err = capfd.readouterr().err
        assert "ValueError: refused" in err and f"kept as it was: {output}" in err and "talk.stopped.ipynb" in err
    assert sorted(p.name for p in output.parent.iterdir()) == ["talk.ipynb", "talk.stopped.ipynb", "talk.stopped.log"]
    assert main([str(notebook), "LOOPS=3", "-o", str(output)]) == 0  # a finished run replaces it, and the refusal goes
    assert sorted(p.name for p in output.parent.iterdir()) == ["talk.ipynb"]


def test_a_stopped_run_replaces_an_earlier_copy_that_stopped_too(tmp_path):
    notebook, output = refusing_notebook(tmp_path), tmp_path / "out" / "talk.ipynb"
    assert main([str(notebook), "LOOPS=9", "-o", str(output)]) == 1  # no earlier copy: the stopped one is the copy
    assert "refused" in output.read_text() and output.with_suffix(".log").exists()
    assert main([str(notebook), "LOOPS=8", "-o", str(output)]) == 1
    assert "LOOPS = 8" in output.read_text() and not output.with_name("talk.stopped.ipynb").exists()


def test_params_given_as_one_string_are_split_as_a_shell_splits_them_quoted_lines_included(tmp_path):
    """`make notebook PARAMS="..."` passes PARAMS this way: a prompt of two lines arrives whole."""
    notebook = tmp_path / "prompt.ipynb"
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    parameters = nbformat.v4.new_code_cell("JUDGE_PROMPT = None\nLOOPS = 1")
    parameters.metadata["tags"] = ["parameters"]
    book.cells = [parameters, nbformat.v4.new_code_cell(f"open({str(tmp_path / 'seen.txt')!r}, 'w').write(f'{{LOOPS}}|{{JUDGE_PROMPT}}')")]
    nbformat.write(book, notebook)
    assert main([str(notebook), "LOOPS=1", "--params", "LOOPS=2 JUDGE_PROMPT='Be terse.\nAnswer with JSON.'",
                 "-o", str(tmp_path / "out.ipynb")]) == 0
    assert (tmp_path / "seen.txt").read_text() == "2|Be terse.\nAnswer with JSON."
    assert main([str(notebook), "--params", "JUDGE_PROMPT='unclosed"]) == 2
