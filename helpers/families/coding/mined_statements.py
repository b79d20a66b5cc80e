"""The problem statement of a task mined from a repository's history: the commit message plus the title and body
of each issue or pull request it names as #N (from an export file), and the check that refuses a statement
quoting a line the fix adds (the task would hand the agent its answer).

Separate from helpers.families.coding.mining (which runs each commit's tests at both ends and keeps the verdicts):
this part reads text only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers.families.coding.git import git

QUOTE_MIN_CHARS = 20  # an added line this long, found verbatim in the statement, is a leak
ISSUE_REF = re.compile(r"(?:^|[\s(])#(\d+)\b")


def problem_statement(repo: Path, sha: str, issues: dict[int, str]) -> str:
    """The commit's message, then the title and body of each issue or pull request it names as #N (in `issues`)."""
    message = git("log", "-1", "--format=%B", sha, cwd=repo).stdout.strip()
    linked = [issues[int(n)] for n in dict.fromkeys(ISSUE_REF.findall(message)) if int(n) in issues]
    return "\n\n".join([message, *linked])


def quoted_line(statement: str, patch: str) -> str:
    """An added line of `patch` (at least QUOTE_MIN_CHARS long) that `statement` quotes verbatim, or ''."""
    flat = " ".join(statement.split())
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            text = " ".join(line[1:].split())
            if len(text) >= QUOTE_MIN_CHARS and text in flat:
                return text
    return ""


def read_issues(path: Path | str) -> dict[int, str]:
    """number -> "title\\n\\nbody" of a JSON list of GitHub issues or pull requests (REST API shape)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"ISSUES_JSON {str(path)!r} cannot be read as JSON: {error}") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(i, dict) and "number" in i for i in data):
        raise ValueError(
            f"ISSUES_JSON {str(path)!r} must be a JSON list of issues or pull requests, each with a "
            "`number` (gh api repos/O/R/issues > issues.json)."
        )
    return {int(i["number"]): f"{i.get('title') or ''}\n\n{i.get('body') or ''}".strip() for i in data}


__all__ = ["problem_statement", "quoted_line", "read_issues"]  # documented in CODE_APPENDIX.md
