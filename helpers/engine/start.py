"""What an experiment starts from, as the notebooks' parameters give it: its first rules (START_RULES) and the
judge's and the optimizer's instructions (JUDGE_PROMPT / JUDGE_PROMPT_FILE, OPTIMIZER_PROMPT / OPTIMIZER_PROMPT_FILE).

    initial = start_rules(START_RULES)                     # "" (no rules), a rules file's text, or the text given
    judge = instructions_from(JUDGE_PROMPT, JUDGE_PROMPT_FILE, "JUDGE_PROMPT")

A value that names a file is read from it; a relative path is looked for from the working directory (a
notebook's: notebooks/), then from the repository's root (where `make notebook` is typed). A value that
looks like a path and names no file is one clear error, never taken as rules text. One place resolves
START_RULES, so other starts (the agent's own /init file, a team's file) are one branch here.
"""

from __future__ import annotations

import os
from typing import Any
from pathlib import Path

from helpers.core.config import REPO_ROOT

TEXT_SUFFIXES = (".md", ".txt", ".clinerules", ".mdc", ".rules")  # a one-word value ending so is a file's name


def start_rules(
    start: str | os.PathLike[str] | None,
    *,
    train: Any = None,
    agent: Any = None,
    experiment: str | None = None,
    gateway: Any = None,
    team_file: str | os.PathLike[str] | None = None,
) -> str:
    """The ruleset version 0 holds: None (or blank) -> "" (no rules); "init" -> the agent's own init file, "team"
    -> the team's (helpers.engine.baselines.baseline_start_rules: both need the training tasks `train`, the
    `agent` and the `experiment`; an init that fails or no team file is one ValueError); a path to a rules file
    -> its rules; any other text -> its rules (one rule a bullet or paragraph, given ids R1, R2, ... as the
    optimizer edits them; a team's file with a fenced learned section keeps its text around them). Raises FileNotFoundError for a value that looks like a path and names no file, and
    ValueError when the rules cannot be read as a ruleset."""
    from helpers.rules.rules_file import RulesFile

    if start is None or (isinstance(start, str) and not start.strip()):
        return ""
    if isinstance(start, str) and start.strip() in ("init", "team"):
        if train is None or agent is None or experiment is None:
            raise ValueError(
                f"START_RULES={start.strip()!r} needs the training tasks, the agent and the experiment: "
                "start_rules(START_RULES, train=..., agent=..., experiment=...)."
            )
        from helpers.engine.baselines import baseline_start_rules

        return baseline_start_rules(
            start.strip(),
            train,
            agent,
            experiment=experiment,
            team_file=None if team_file is None else Path(team_file),
            gateway=gateway,
        )
    text = read_named_file(start, "START_RULES") if looks_like_path(start) else str(start)
    rules = RulesFile.parse(text)  # one clear error now, not in the middle of a loop
    return rules.with_rules(rules.rules).text if rules.rules.rules or rules.team else ""


def instructions_from(text: str | None, file: str | os.PathLike[str] | None, name: str) -> str | None:
    """A role's instructions: `text` (the NAME parameter), or the contents of `file` (NAME_FILE), or None (the
    default). Giving both is one error, as is an empty file."""
    if text is not None and file is not None:
        raise ValueError(f"Give {name} or {name}_FILE, not both.")
    if file is None:
        return text
    read = read_named_file(file, f"{name}_FILE")
    if not read.strip():
        raise ValueError(f"{name}_FILE={str(file)!r} is empty: give the instructions' text, or None for the default.")
    return read


def looks_like_path(value: str | os.PathLike[str]) -> bool:
    """A Path, or one line without spaces that names an existing file, holds a '/', or ends like a text file."""
    if isinstance(value, os.PathLike):
        return True
    text = str(value).strip()
    if "\n" in text:
        return False
    return find_file(text) is not None or (" " not in text and ("/" in text or text.endswith(TEXT_SUFFIXES)))


def find_file(value: str | os.PathLike[str]) -> Path | None:
    """`value` as a file: as given (absolute, or from the working directory), else from the repository's root."""
    path = Path(str(value).strip()).expanduser()
    for candidate in (path, REPO_ROOT / path):
        if candidate.is_file():
            return candidate
    return None


def read_named_file(value: str | os.PathLike[str], name: str) -> str:
    found = find_file(value)
    if found is None:
        raise FileNotFoundError(
            f"{name}={str(value)!r}: no such file (looked in {Path.cwd()} and {REPO_ROOT}). "
            f"Give a path to a text file, or the text itself."
        )
    return found.read_text(encoding="utf-8")


__all__ = ["start_rules", "instructions_from"]  # the public API, documented in CODE_APPENDIX.md
