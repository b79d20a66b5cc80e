"""Run any cookbook notebook headless through papermill, with parameters, reproducibly.

    python -m helpers.app.notebook_runner notebooks/quickstart.ipynb -p LOOPS 2 -p TRAIN_SIZE 4
    python -m helpers.app.notebook_runner notebooks/02_optimize_cline_act.ipynb LOOPS=3 EXPERIMENT=demo
    make notebook NB=notebooks/03_results.ipynb PARAMS="EXPERIMENT=demo"
    make notebook PARAMS="EXPERIMENT=terse JUDGE_PROMPT_FILE=my_judge.txt"   # a prompt from a file

Parameters are checked against the notebook's `parameters` cell before any kernel starts
(helpers.app.notebook_parameters): one error saying what to write instead. The executed copy goes to act_results/<EXPERIMENT>/
notebooks/<name>.ipynb; a run that stops (refused, failed, interrupted) never replaces a copy there that finished:
its own goes beside it, <name>.stopped.ipynb. Every output is scrubbed first (keys redacted, paths as <repo>, ~).

From the command line the run talks: each section's heading as its cells start, and whatever the
notebook prints (each loop's line), as it comes; not the frameworks' own warnings. A cell that stops
the run (LoopStopped, MissingCredentials, a bad setting) is one message naming the fault, in the console
and in the executed notebook, with the full traceback in a log file beside the notebook that the message
names. A run stopped with SIGTERM is scrubbed like one that ends.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, TextIO

from helpers.core.config import REPO_ROOT, STATE_DIR, read_env, results_root
from helpers.app.notebook_parameters import check_parameters, parse_parameters, parse_value
from helpers.isolation.processes import terminate_as_interrupt
from helpers.store.records import check_name, write_atomic

SECRET_VARIABLES = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "PHOENIX_API_KEY",
    "OPENROUTER_API_KEY",
    "MODAL_TOKEN_SECRET",
    "HF_TOKEN",
)
SECRET_SHAPES = re.compile(r"(sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|hf_[A-Za-z0-9]{20,})")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# The kernel's own start-up warnings ("Kernel is running over TCP without encryption": it only talks to
# this process, on loopback) are not the run's news.
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=ERROR"]


def kernel_environment() -> dict[str, str]:
    """Keep kernel, Jupyter and Hugging Face state in the checkout, not in $HOME."""
    state = Path(os.environ.get("PL_STATE_DIR", STATE_DIR))
    defaults = {
        "IPYTHONDIR": state / "ipython",
        "JUPYTER_CONFIG_DIR": state / "jupyter" / "config",
        "JUPYTER_DATA_DIR": state / "jupyter" / "data",
        "JUPYTER_RUNTIME_DIR": state / "jupyter" / "runtime",
        "HF_HOME": state / "huggingface",
    }
    env = {}
    for name, path in defaults.items():
        env[name] = os.environ.get(name) or str(path)
        Path(env[name]).mkdir(parents=True, exist_ok=True)
    return env


def scrub_text(text: str, secrets: list[str], paths: list[tuple[str, str]]) -> str:
    for secret in secrets:
        text = text.replace(secret, "[REDACTED]")
    text = SECRET_SHAPES.sub("[REDACTED]", text)
    for path, placeholder in paths:
        text = text.replace(path, placeholder)
    return text


def scrubber() -> Any:
    """A function that redacts secrets (env or .env, and anything shaped like a key) and machine paths."""
    from helpers.core.redact import scrub_machine_paths

    secrets = [v for name in SECRET_VARIABLES if len(v := read_env(name) or "") >= 8]  # env or .env
    # the results folder first (it may lie outside the repository), then the repository, then the home
    paths = [(str(results_root().resolve()), "<results>"), (str(REPO_ROOT), "<repo>"), (str(Path.home()), "~")]
    return lambda text: scrub_text(scrub_machine_paths(text), secrets, paths)


def log_path_for(notebook_output: Path) -> Path:
    """Where the full tracebacks of an executed notebook go: beside it, <name>.log."""
    return notebook_output.with_suffix(".log")


def scrub_notebook(path: Path, log: Path | None = None) -> str | None:
    """Redact secrets and machine paths from every string in an executed notebook, in place. Each error
    output keeps its name and message; its traceback moves to `log` (default log_path_for(path); scrubbed too). Returns
    the first error as one line, "Name: message", or None when no cell failed."""
    scrub = scrubber()

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return scrub(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    notebook = walk(json.loads(path.read_text(encoding="utf-8")))
    errors = [
        o for cell in notebook.get("cells", []) for o in cell.get("outputs", []) if o.get("output_type") == "error"
    ]
    if errors:
        log = log or log_path_for(path)
        detail = "\n\n".join(ANSI.sub("", "\n".join(o.get("traceback") or [])) for o in errors)
        write_atomic(log, detail + "\n")
        for output in errors:
            output["traceback"] = [
                f"{output.get('ename')}: {output.get('evalue')}",
                f"(the full traceback is in {log.name}, beside this notebook)",
            ]
    write_atomic(path, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return f"{errors[0].get('ename')}: {errors[0].get('evalue')}" if errors else None


def section_headings(notebook: Path, params: dict[str, Any]) -> dict[int, str]:
    """Cell index (as papermill counts, after injecting `params`) -> the heading of the section it is in."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    book = load_notebook_node(str(notebook))  # as papermill loads it (tags and metadata filled in)
    if params:  # papermill injects a parameters cell exactly when there are parameters
        book = parameterize_notebook(book, params, kernel_name="python3")
    headings, current = {}, ""
    for index, cell in enumerate(book.cells):
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "markdown" and first.startswith("#"):
            current = first.lstrip("#").strip()
        headings[index + 1] = current
    return headings


class _SectionPrinter(logging.Handler):
    """Turns papermill's "Executing Cell N" log lines into the section's heading, once per section."""

    def __init__(self, headings: dict[int, str], out: TextIO):
        super().__init__(logging.INFO)
        self.headings, self.out, self.shown = headings, out, ""

    def emit(self, record: logging.LogRecord) -> None:
        match = re.match(r"Executing Cell (\d+)", record.getMessage())
        heading = self.headings.get(int(match.group(1)), "") if match else ""
        if heading and heading != self.shown:
            self.shown = heading
            self.out.write(f"-- {heading}\n")
            self.out.flush()


@contextmanager
def _echo(notebook: Path, params: dict[str, Any], enabled: bool) -> Iterator[dict[str, Any]]:
    """papermill's arguments that print the run as it goes (section headings, the cells' printed output)."""
    if not enabled:
        yield {}
        return
    logger = logging.getLogger("papermill")
    handler = _SectionPrinter(section_headings(notebook, params), sys.stdout)
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # its own lines (each output again, "Ending Cell") are not for the console
    try:
        yield {"log_output": True, "stdout_file": sys.stdout}
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


# Notebooks that read an experiment another notebook made: with EXPERIMENT=None they resolve it
# (helpers.store.loops.resolve_experiment), and their executed copy goes with it.
RESULT_READERS = ("03_results",)
# The parameter a notebook names its results by (05's continual mode keeps an inbox, not an experiment), and the
# name a notebook gives itself when that parameter is None ("-dry-run" added for the scripted dry run).
NAME_PARAMETERS = ("EXPERIMENT", "INBOX")
SELF_NAMES = {"05_continual": "continual"}
# 07 names its experiment after the repository it mines (REPO's folder, else the demo repository's)
NAMED_AFTER_REPO = "07_your_repo"


def output_path_for(notebook: Path, params: dict[str, Any]) -> Path:
    """act_results/<experiment>/notebooks/<name>: the EXPERIMENT (or INBOX) parameter, else the notebook's
    default, else (a notebook that names its experiment itself, as the quickstart and 05 do) the name it
    gives itself (SELF_NAMES, else its own), with "-dry-run" when it has a DRY_RUN parameter and will run the
    scripted dry run; a reader of results (RESULT_READERS) the experiment it will read."""
    name = next((n for n in NAME_PARAMETERS if n in params), None)
    experiment = params.get(name) if name else None
    if experiment is None:  # only then is the notebook itself read
        import papermill

        defaults = papermill.inspect_notebook(str(notebook))
        name = name or next((n for n in NAME_PARAMETERS if n in defaults), "EXPERIMENT")
        default = defaults.get(name, {}).get("default")
        experiment = parse_value(default) if default else None
        if experiment is None and notebook.stem in RESULT_READERS:  # it reads the experiment it resolves
            from helpers.store.loops import resolve_experiment

            experiment = resolve_experiment(None)
        elif experiment is None and "DRY_RUN" in defaults:
            from helpers.app.session import is_dry_run

            dry_run = params.get("DRY_RUN", parse_value(defaults["DRY_RUN"]["default"]))
            experiment = _self_name(notebook, params) + ("-dry-run" if is_dry_run(dry_run) else "")
    experiment = experiment or notebook.stem
    return results_root() / check_name(str(experiment)) / "notebooks" / notebook.name


def _self_name(notebook: Path, params: dict[str, Any]) -> str:
    if notebook.stem == NAMED_AFTER_REPO:
        from helpers.families.coding.mining_demo import DEMO_NAME

        return Path(str(params["REPO"])).expanduser().name if params.get("REPO") else DEMO_NAME
    return SELF_NAMES.get(notebook.stem, notebook.stem)


def run_notebook(
    notebook: Path | str,
    params: dict[str, Any] | None = None,
    output: Path | str | None = None,
    timeout_s: int | None = None,
    echo: bool = False,
) -> Path:
    """Execute `notebook` with `params`; returns the scrubbed executed copy's path. `echo` prints each
    section's heading and the cells' printed output as the run goes.

    Bad parameters raise check_parameters' ValueError before any kernel starts or file is written.
    Raises papermill's PapermillExecutionError when a cell fails (the executed copy, scrubbed, is
    still written, showing the failing cell's message; its traceback is in log_path_for(<copy>)). A failed run
    never replaces an earlier copy at `output` that finished: its own goes beside it, <name>.stopped.ipynb
    (settle_executed_copy; the exception's `executed_copy` says where).
    """
    import papermill

    notebook = Path(notebook).resolve()
    params = check_parameters(notebook, dict(params or {}))
    output = Path(output) if output else output_path_for(notebook, params)
    output.parent.mkdir(parents=True, exist_ok=True)
    running = running_path_for(output)  # written as the cells run; settled into place when the run ends
    running.unlink(missing_ok=True)  # a copy left by a killed run
    previous = {name: os.environ.get(name) for name in kernel_environment()}
    os.environ.update(kernel_environment())
    if echo:  # the kernel's progress bars as lines the console shows (helpers.core.progress)
        previous.setdefault("PL_PROGRESS", os.environ.get("PL_PROGRESS"))
        os.environ["PL_PROGRESS"] = "lines"
    try:
        with terminate_as_interrupt(), _echo(notebook, params, echo) as printing:
            papermill.execute_notebook(
                str(notebook),
                str(running),
                parameters=params,
                kernel_name="python3",
                cwd=str(notebook.parent),
                progress_bar=False,
                execution_timeout=timeout_s,
                extra_arguments=KERNEL_ARGUMENTS,
                **printing,
            )
    except BaseException as error:  # main() says where the stopped run's copy is
        error.executed_copy = settle_executed_copy(running, output, failed=True)  # type: ignore[attr-defined]
        raise
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    settle_executed_copy(running, output, failed=False)
    return output


def running_path_for(output: Path) -> Path:  # a run's copy while its cells run: beside the output, hidden
    return output.with_name(f".{output.stem}.running{output.suffix}")


def stopped_path_for(output: Path) -> Path:  # a stopped run's copy when `output` holds one that finished
    return output.with_name(f"{output.stem}.stopped{output.suffix}")


def finished_without_error(path: Path) -> bool:
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError):
        return False
    return not any(o.get("output_type") == "error" for c in cells for o in c.get("outputs", []))


def settle_executed_copy(running: Path, output: Path, failed: bool) -> Path | None:
    """Scrub the run's executed copy and put it where it is kept; returns that path (None when the run wrote
    none). A run that failed (refused before any work, stopped, interrupted) never replaces an earlier copy at
    `output` that finished: its copy and log go beside it (stopped_path_for). Otherwise the copy goes to `output`,
    with its log, and an earlier run's log is removed (it is not this run's)."""
    if not running.exists():
        return None
    kept = stopped_path_for(output) if failed and output.exists() and finished_without_error(output) else output
    log_path_for(kept).unlink(missing_ok=True)  # an earlier run's log is not this run's
    scrub_notebook(running, log_path_for(kept))
    os.replace(running, kept)
    if kept == output:  # this run's copy is the one kept: a stopped copy beside it is an older run's
        stopped_path_for(output).unlink(missing_ok=True)
        log_path_for(stopped_path_for(output)).unlink(missing_ok=True)
    return kept


def shown_path(path: Path) -> Path:
    return path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path


def stop_message(error: BaseException, output: Path) -> str:
    """One message for a run that did not finish: the fault (the failing cell's error name and message, which
    say what to change), and where the full detail is."""
    log = log_path_for(output)
    if hasattr(error, "ename") and hasattr(error, "evalue"):  # papermill's PapermillExecutionError: a cell raised
        fault = f"{error.ename}: {ANSI.sub('', str(error.evalue)).strip()}"
    else:  # the kernel died, a timeout, an interrupt
        fault = (
            f"{type(error).__name__}: {ANSI.sub('', str(error)).strip().splitlines()[0] if str(error).strip() else ''}"
        )
        import traceback

        log.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(log, scrubber()("".join(traceback.format_exception(error))))
    where = f"\nFull detail: {shown_path(log)}" if log.exists() else ""
    kept = f"\nExecuted notebook (up to the stop): {shown_path(output)}" if output.exists() else ""
    return scrubber()(f"{fault}{where}{kept}")


def main(argv: list[str] | None = None) -> int:
    """The command line: `python -m helpers.app.notebook_runner NOTEBOOK [NAME=VALUE ...]`; 0 on success."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook", type=Path)
    parser.add_argument("params", nargs="*", help="NAME=VALUE parameters")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    parser.add_argument(
        "--params",
        dest="params_string",
        default="",
        metavar="'NAME=VALUE ...'",
        help="more NAME=VALUE pairs in one string, split as a shell splits words (make's PARAMS: "
        "quoted values may span lines)",
    )
    parser.add_argument("-o", "--output", type=Path, help="where to write the executed notebook")
    parser.add_argument("--timeout", type=int, default=None, help="seconds allowed per cell")
    args = parser.parse_args(argv)
    try:
        params = parse_parameters(args.params + shlex.split(args.params_string), args.parameter)
    except ValueError as error:  # an unclosed quote
        print(f"error: PARAMS: {error}", file=sys.stderr)
        return 2
    try:
        params = check_parameters(args.notebook, params)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    output = args.output or output_path_for(args.notebook.resolve(), params)
    started = time.monotonic()
    print(f"Running {args.notebook} with {params or 'its default parameters'} ...", flush=True)
    try:
        run_notebook(args.notebook, params, output, args.timeout, echo=True)
    except BaseException as error:  # papermill's error names the failing cell; an interrupt stops the run
        kept = getattr(error, "executed_copy", None) or output
        earlier = (
            f"\nThe earlier executed copy, which finished, is kept as it was: {shown_path(output)}"
            if kept != output
            else ""
        )
        print(
            f"\nStopped after {time.monotonic() - started:.0f} s. {stop_message(error, kept)}{earlier}", file=sys.stderr
        )
        return 130 if isinstance(error, KeyboardInterrupt) else 1
    print(f"Done in {time.monotonic() - started:.0f} s. Executed notebook: {shown_path(output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["run_notebook", "main"]  # the public API, documented in CODE_APPENDIX.md
