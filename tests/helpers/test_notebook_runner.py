"""Headless runs: parameters from the command line, executed copies that are safe to share."""

import json

import nbformat
import pytest

from helpers.config import REPO_ROOT
from helpers.notebook_runner import output_path_for, parse_parameters, parse_value, scrub_notebook


@pytest.mark.parametrize("text, value", [("3", 3), ("0.5", 0.5), ("True", True), ("None", None),
                                         ("['a', 'b']", ["a", "b"]), ("house-demo", "house-demo")])
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
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(1)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=(
        f"key my-very-private-key-123 at {REPO_ROOT}/act_results/x and {shaped}\n"))]
    nb.cells.append(cell)
    path = tmp_path / "out.ipynb"
    nbformat.write(nb, path)
    scrub_notebook(path)
    text = path.read_text()
    assert "my-very-private-key-123" not in text and shaped not in text
    assert str(REPO_ROOT) not in text
    assert "<repo>/act_results/x" in "".join(json.loads(text)["cells"][0]["outputs"][0]["text"])


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
    assert folder(optimize) == "swebench-lite"  # the notebook's own default
    assert folder(quickstart, DRY_RUN=True) == "quickstart-dry-run"  # as the quickstart names it
    assert folder(quickstart, DRY_RUN=False) == "quickstart"
    monkeypatch.setenv("OPENAI_API_KEY", "a-key")
    assert folder(quickstart) == "quickstart"  # a key: a real run
    monkeypatch.delenv("OPENAI_API_KEY")
    from helpers import config

    if not config.has_credentials():  # a key in this checkout's .env would make it a real run
        assert folder(quickstart) == "quickstart-dry-run"
