"""A small repository with a known history, for 07_your_repo when no repository is given (and its dry run).

Six commits of an `invoices` package: the first, four fixes that each come with the test that shows the
bug (tasks), and a change of the README alone (dropped: no tests touched). The history keeps a habit, as a
team's does: every fix adds a line naming the change under `## Unreleased` in CHANGELOG.md, and its test
checks that line (the house suite's "changelog" convention). An agent that fixes the bug without the entry
fails the task, so the loop has a habit to learn (demo_dry_run_tasks tells the scripted dry run so).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from helpers.isolation.processes import scratch_dir
from helpers.families.coding.git import git

START = {
    "README.md": "# invoices\n\nTotals, taxes and discounts for our invoices.\n",
    "CHANGELOG.md": "# Changelog\n\n## Unreleased\n\n## 0.1.0\n- First version: totals of invoice lines.\n",
    "src/invoices/__init__.py": (
        "from decimal import Decimal\n\n\n"
        "def total(lines):\n    return sum(Decimal(str(price)) * qty for price, qty in lines)\n\n\n"
        "def with_tax(amount, rate):\n    return amount * rate\n\n\n"
        "def discount(amount, percent):\n    return amount - percent\n\n\n"
        "def rounded(amount):\n    return amount\n"
    ),
    "tests/test_invoices.py": (
        "from decimal import Decimal\nfrom pathlib import Path\n\nfrom invoices import discount, rounded, total, with_tax\n\n"
        "ROOT = Path(__file__).resolve().parents[1]\n\n\n"
        "def changelog_names(name):\n"
        "    section = (ROOT / 'CHANGELOG.md').read_text().split('## Unreleased', 1)[1].split('\\n## ', 1)[0]\n"
        "    assert any(name in line for line in section.splitlines() if line.startswith('- ')), (\n"
        "        f'every change has a changelog entry: none names {name} under ## Unreleased in CHANGELOG.md')\n\n\n"
        "def test_total():\n    assert total([(1, 2), ('0.5', 2)]) == Decimal('3')\n"
    ),
}
HABIT = "changelog"  # the house convention the history keeps (helpers.families.coding.house_suite.CONVENTIONS)
# (message, old text, new text, test added, changelog entry): each fix changes one function, adds its test and
# a changelog line naming the function (which the test checks)
FIXES = [
    (
        "Tax is added to the amount, not multiplied into it",
        "    return amount * rate\n",
        "    return amount * (1 + rate)\n",
        "def test_with_tax():\n    assert with_tax(Decimal('100'), Decimal('0.2')) == Decimal('120.0')\n"
        "    changelog_names('with_tax')\n",
        "- `with_tax` adds the tax on top of the amount.",
    ),
    (
        "A discount is a percentage of the amount",
        "    return amount - percent\n",
        "    return amount * (100 - percent) / 100\n",
        "def test_discount():\n    assert discount(Decimal('200'), 10) == Decimal('180')\n"
        "    changelog_names('discount')\n",
        "- `discount` takes a percentage off.",
    ),
    (
        "Amounts are rounded to cents, half up",
        "def rounded(amount):\n    return amount\n",
        "def rounded(amount):\n    from decimal import ROUND_HALF_UP\n\n"
        "    return Decimal(amount).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)\n",
        "def test_rounded():\n    assert rounded(Decimal('2.345')) == Decimal('2.35')\n"
        "    changelog_names('rounded')\n",
        "- `rounded` gives cents, halves rounded up.",
    ),
    (
        "An empty invoice totals zero as a Decimal",
        "    return sum(Decimal(str(price)) * qty for price, qty in lines)\n",
        "    return sum((Decimal(str(price)) * qty for price, qty in lines), Decimal('0'))\n",
        "def test_empty_total():\n    assert isinstance(total([]), Decimal)\n    changelog_names('total')\n",
        "- `total` of no lines is a Decimal zero.",
    ),
]


DEMO_NAME = "invoices"  # the demo repository's folder: 07's experiment is named after it


def demo_history(dest: Path | str | None = None) -> Path:
    """A fresh git repository with the demo history (in a scratch folder unless `dest`); returns its path."""
    repo = Path(dest) if dest else scratch_dir("demo-history") / DEMO_NAME
    repo.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "main", cwd=repo)
    files = dict(START)
    _commit(repo, files, "Start the invoices package", 0)
    for n, (message, old, new, test, entry) in enumerate(FIXES, 1):
        code = files["src/invoices/__init__.py"]
        files["src/invoices/__init__.py"] = code.replace(old, new)
        files["CHANGELOG.md"] = files["CHANGELOG.md"].replace("## Unreleased\n", f"## Unreleased\n{entry}\n", 1)
        files["tests/test_invoices.py"] += "\n\n" + test
        _commit(repo, files, message, n)
        if n == 2:
            files["README.md"] += "\nSee the tests for examples.\n"
            _commit(repo, files, "Point the README at the tests", n + 0.5)
    return repo


def demo_dry_run_tasks(tasks: pd.DataFrame) -> pd.DataFrame:
    """The tasks mined from the demo history as the scripted dry run plays them: each checks the history's habit
    (HABIT: its test wants a changelog line naming the change), and the fix an agent makes without the rule is
    the commit's own fix without its CHANGELOG.md change (`naive_patch`). With the rule it writes the whole fix."""
    return tasks.assign(
        conventions=[[HABIT] for _ in range(len(tasks))],
        naive_patch=[without_file(patch, "CHANGELOG.md") for patch in tasks["patch"]],
    )


def without_file(patch: str, path: str) -> str:
    """`patch` (a git diff) without the part that changes `path`."""
    parts = re.split(r"(?m)^(?=diff --git )", patch)
    return "".join(part for part in parts if not part.startswith(f"diff --git a/{path} b/{path}"))


def _commit(repo: Path, files: dict[str, str], message: str, day: float) -> None:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    stamp = f"2026-01-{1 + int(day):02d}T{9 + int(day * 2) % 10:02d}:00:00+00:00"  # a fixed, increasing history
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo, env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})


__all__ = ["demo_history", "demo_dry_run_tasks", "without_file"]  # documented in CODE_APPENDIX.md
