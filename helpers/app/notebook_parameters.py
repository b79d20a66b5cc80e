"""A notebook's parameters as people give them on the command line, checked against the notebook's `parameters`
cell before any kernel starts: an unknown name, a value of the wrong type (the default's, or the cell's
annotation: `X: Optional[float] = None`) or a count below 1 (`VAL_SIZE` may be 0) is one error saying what to
write instead.

Separate from helpers.app.notebook_runner (which runs the notebook through papermill and scrubs what it wrote):
this part reads text and a notebook's declarations, and runs nothing.
"""

from __future__ import annotations

import ast
import difflib
import re
from pathlib import Path
from typing import Any

from helpers.core.config import REPO_ROOT

SHELL_WORDS = {"true": True, "false": False, "none": None, "null": None}  # as people type them in a shell
TYPE_NAMES = {"int": int, "float": float, "str": str, "bool": bool, "None": type(None)}
SAID_AS = {int: "an int", type(None): "None"}  # else "a <type>"
POSITIVE_NAMES = ("WORKERS", "LOOPS", "ATTEMPTS")  # counts and sizes below 1 hang or do nothing
POSITIVE_SUFFIXES = ("_SIZE", "_SIZE_K")
MAY_BE_ZERO = ("VAL_SIZE",)  # 0: no validation side (the kept version is then the latest); below 0 is refused


def parse_value(text: str) -> Any:
    """'3' -> 3, '0.5' -> 0.5, 'True' or 'true' -> True, 'None' -> None, "['a']" -> ['a'], else the string."""
    if text.strip().lower() in SHELL_WORDS:
        return SHELL_WORDS[text.strip().lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def parse_parameters(pairs: list[str], flagged: list[list[str]]) -> dict[str, Any]:
    params = {name: parse_value(value) for name, value in flagged}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"Bad parameter {pair!r}: write NAME=VALUE (e.g. LOOPS=2) or -p NAME VALUE.")
        name, value = pair.split("=", 1)
        params[name.strip()] = parse_value(value)
    return params


def accepted_types(default: str, annotation: str) -> tuple[type, ...]:
    """The types a parameter takes, from papermill's view of its line in the `parameters` cell: an
    annotation made of int/float/str/bool/None (`Optional[float]`, `Union[int, str]`) if it has one,
    else the default's type; () takes anything (None or an expression as default, another annotation)."""
    if annotation and annotation != "None":  # papermill says "None" when there is no annotation
        names = [w for w in re.findall(r"\w+", annotation) if w not in ("Optional", "Union")]
        if not names or any(name not in TYPE_NAMES for name in names):
            return ()
        return tuple(TYPE_NAMES[name] for name in names) + ((type(None),) if "Optional" in annotation else ())
    try:
        value = ast.literal_eval(default)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return ()
    return () if value is None else (type(value),)


def parameter_problem(name: str, value: Any, types: tuple[type, ...], default: str) -> tuple[Any, str | None]:
    """(the value to pass, None) when `value` suits the parameter, else (value, what is wrong). Ints pass
    for floats; whole floats (3.0) pass for ints, as ints."""
    int_for_float = float in types and type(value) is int
    if types and type(value) not in types and not int_for_float:
        if int in types and type(value) is float and value.is_integer():
            value = int(value)
        else:
            expected = " or ".join(SAID_AS.get(t, f"a {t.__name__}") for t in types)
            given = SAID_AS.get(type(value), f"a {type(value).__name__}")
            number_as_text = str in types and type(value) in (int, float)
            quote = f"; to pass it as text, quote it: {name}=\"'{value}'\"" if number_as_text else ""
            return value, f"{name}={value!r} is {given}, expected {expected} (default {default}){quote}"
    least = 0 if name in MAY_BE_ZERO else 1
    positive = name in POSITIVE_NAMES or name.endswith(POSITIVE_SUFFIXES)
    if positive and type(value) in (int, float) and value < least:
        return value, f"{name}={value!r}: must be at least {least}"
    return value, None


def check_parameters(notebook: Path | str, params: dict[str, Any]) -> dict[str, Any]:
    """`params` checked against the notebook's `parameters` cell, before anything runs; returns them
    ready to inject (3.0 for an int parameter becomes 3). Raises one ValueError listing every unknown
    name (with the closest known one), wrong type and count below 1; FileNotFoundError without a notebook."""
    import papermill

    notebook = Path(notebook).resolve()
    if not notebook.is_file():
        raise FileNotFoundError(
            f"No notebook at {notebook}; the cookbook's notebooks are in {REPO_ROOT / 'notebooks'}."
        )
    declared = papermill.inspect_notebook(str(notebook))
    checked, problems = {}, []
    for name, value in params.items():
        if name not in declared:
            close = difflib.get_close_matches(name, declared, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"unknown parameter {name}{hint}; known: {', '.join(declared) or 'none'}")
            continue
        types = accepted_types(declared[name]["default"], declared[name]["inferred_type_name"])
        checked[name], problem = parameter_problem(name, value, types, declared[name]["default"])
        if problem:
            problems.append(problem)
    if problems:
        raise ValueError(f"Bad parameters for {notebook.name}, nothing was run:\n  " + "\n  ".join(problems))
    return checked


__all__ = ["check_parameters"]  # documented in CODE_APPENDIX.md
