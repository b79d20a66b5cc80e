"""The bundled house-conventions suite: the workshop path and the end-to-end test bed (no Docker).

A small library (`ledger`, shipped as source under repos/) and tasks on it in SWE-bench row form. Each
task is a real bug fix or feature whose hidden tests ALSO check house conventions the issue never
mentions. The conventions recur across tasks, so rules learned on training tasks carry to test tasks.

    tasks = load_house_suite()     # builds the git repository once (in .cache/), returns a DataFrame

Every row carries the SWE-bench fields plus `conventions` (ids of CONVENTIONS its tests check),
`naive_patch` (fixes the issue, follows none of its conventions: what an agent without the rules
writes), `suite` = "house" and `repo_path` (the built repository). Importing this module is cheap.
"""

from __future__ import annotations

from typing import Any

# id -> title, the rule as a rules file would state it, and what the hidden tests check.
CONVENTIONS: dict[str, dict[str, str]] = {
    "errors": {
        "title": "errors are the package's own exceptions",
        "rule": "Raise errors as the package's own exception types (subclasses of its base error, e.g. "
                "`LedgerError`), never bare ValueError, KeyError or Exception.",
        "check": "pytest.raises(LedgerError) on the bad input",
    },
    "changelog": {
        "title": "every change has a changelog entry",
        "rule": "Add a one-line entry under `## Unreleased` in CHANGELOG.md for every change you make.",
        "check": "CHANGELOG.md has an entry under '## Unreleased'",
    },
    "logging": {
        "title": "report through the package logger, never print",
        "rule": "Report warnings and notable events through the package's logger (`logging.getLogger(__name__)` "
                "inside the package), never with print().",
        "check": "nothing printed; a record on a 'ledger' logger",
    },
    "docs_types": {
        "title": "public functions have type hints and a docstring",
        "rule": "Give every new public function or method type hints on all parameters and on the return value, "
                "and a docstring.",
        "check": "inspect.signature has annotations and inspect.getdoc is not empty",
    },
    "registry": {
        "title": "new exporters join the registry",
        "rule": "Register every new exporter in the package's exporter registry with its `@register(<format>)` "
                "decorator, so the generic export function finds it by format name.",
        "check": "EXPORTERS[format] is the new function",
    },
    "decimal": {
        "title": "money is Decimal, never float",
        "rule": "Handle money as Decimal end to end (parse amounts with the package's own parser, quantize to "
                "cents); never convert amounts to float.",
        "check": "results are Decimal instances",
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
