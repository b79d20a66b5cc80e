"""The bundled house-conventions suite: the workshop path and the end-to-end test bed (no Docker).

Three small libraries of different kinds, shipped as source under repos/ and built into git repositories:
`ledger` (accounts and money), `todo` (a command-line tool) and `rows` (data processing on tables), with
16 tasks each in SWE-bench row form. Each task is a real bug fix or feature whose hidden tests ALSO check
house conventions the issue never mentions: team-wide ones that recur in every library (own exception types,
a changelog entry, the package logger, type hints and docstrings) and ones that hold in one library only,
whose rules say where ("In the todo command-line tool, ..."). The conventions recur across tasks, so rules
learned on older tasks carry to newer ones.

    tasks = load_house_suite()     # builds the git repositories once (in .cache/), returns a DataFrame

Every row carries the SWE-bench fields plus `conventions` (ids of CONVENTIONS its tests check),
`naive_patch` (fixes the issue, follows none of its conventions: what an agent without the rules
writes), `suite` = "house" and `repo_path` (the built repository). Importing this module is cheap.
"""

from __future__ import annotations

from typing import Any

# id -> title, the rule as a rules file would state it, what the hidden tests check, and its scope: "team" for a
# team-wide habit (seen in several libraries), else the one repository it holds in (its rule says where).
CONVENTIONS: dict[str, dict[str, str]] = {
    "errors": {
        "title": "errors are the package's own exceptions",
        "rule": "Raise errors as the package's own exception types (subclasses of the base error class in its "
        "errors module), never bare ValueError, KeyError or Exception.",
        "check": "pytest.raises(<the package's base error>) on the bad input",
        "scope": "team",
    },
    "changelog": {
        "title": "every change has a changelog entry",
        "rule": "Add a one-line entry under `## Unreleased` in CHANGELOG.md for every change you make.",
        "check": "CHANGELOG.md has an entry under '## Unreleased'",
        "scope": "team",
    },
    "logging": {
        "title": "report through the package logger, never print",
        "rule": "Report warnings and notable events through the package's logger (`logging.getLogger(__name__)` "
        "inside the package), never with print().",
        "check": "nothing printed; a record on the package's logger",
        "scope": "team",
    },
    "docs_types": {
        "title": "public functions have type hints and a docstring",
        "rule": "Give every new public function or method type hints on all parameters and on the return value, "
        "and a docstring.",
        "check": "inspect.signature has annotations and inspect.getdoc is not empty",
        "scope": "team",
    },
    "registry": {
        "title": "new exporters join the registry",
        "rule": "In the ledger library, register every new exporter in the exporter registry with its "
        "`@register(<format>)` decorator, so the generic export function finds it by format name.",
        "check": "EXPORTERS[format] is the new function",
        "scope": "house/ledger",
    },
    "decimal": {
        "title": "money is Decimal, never float",
        "rule": "In the ledger library, handle money as Decimal end to end (parse amounts with the package's own "
        "parser, quantize to cents); never convert amounts to float.",
        "check": "results are Decimal instances",
        "scope": "house/ledger",
    },
    "cli_help": {
        "title": "every CLI option and subcommand has help text",
        "rule": "In the todo command-line tool, give every new subcommand and every new option a `help=` text.",
        "check": "every action of the subcommand in build_parser() has help",
        "scope": "house/todo",
    },
    "cli_exit": {
        "title": "CLI failures exit with their named status",
        "rule": "In the todo command-line tool, a failing command returns `fail(error, status)` with the named "
        "exit-status constant for that kind of failure (not found, bad usage), never a bare 1 or a print.",
        "check": "main() returns the named status and writes one 'todo: ...' line on stderr",
        "scope": "house/todo",
    },
    "rows_pure": {
        "title": "transforms never change their input",
        "rule": "In the rows package, a transform returns new row dicts and never changes the rows it was given.",
        "check": "the input is unchanged and no returned row is an input row",
        "scope": "house/rows",
    },
    "rows_missing": {
        "title": "a missing value is None",
        "rule": "In the rows package, a missing value is None (never '' or 0), and aggregates skip it.",
        "check": "absent values come back as None",
        "scope": "house/rows",
    },
}


def load_house_suite(root: Any = None):
    """The suite's tasks as a DataFrame (see the module docstring); builds the repository if needed."""
    from helpers.families.coding.house_suite.build import load

    return load(root)


def build_house_repos(root: Any = None) -> dict[str, Any]:
    """repo name -> path of its built git repository (deterministic commits, built once per source)."""
    from helpers.families.coding.house_suite.build import build

    return build(root)[1]


__all__ = ["load_house_suite", "build_house_repos"]  # the public API, documented in CODE_APPENDIX.md
