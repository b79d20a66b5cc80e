"""The rules in a workspace: the learned rules put where an agent reads them before its run, and taken out
again after it, so the patch holds only the agent's work.

Separate from helpers.families.coding.workspaces (the workspace's repository and the host's git directory
that takes the patch): writing the rules touches one file through helpers.isolation.untrusted and never runs git.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Callable, overload

from helpers.core import config
from helpers.core.protocols import RulesText
from helpers.rules.rules_file import RulesFile
from helpers.rules.ruleset import insert_section, remove_section, split_fenced
from helpers.rules.file_formats import learned_path, with_front_matter
from helpers.isolation.untrusted import (
    REFUSED,
    RefusedOutput,
    read_untrusted,
    refused,
    remove_untrusted,
    untrusted_kind,
    write_untrusted,
)
from helpers.families.coding.git import WorkspaceError


def write_rules(workspace: Path | str, rules_file: str, ruleset: str | RulesText) -> Callable[[], None]:
    """Put `ruleset` where the agent reads its rules; returns the function that takes it out again.

    `ruleset`: the rules parsed once (helpers.rules.rules_file.RulesFile), or their text (parsed here).

    `rules_file` is any format of helpers.rules.file_formats. A missing file is created with the ruleset as it
    is (an imported team file with its fence, or plain rules: what the agent reads is the rules alone), after
    the front matter its format needs (with_front_matter). A file already there (the team's own)
    keeps its text: the learned rules (a fenced ruleset's region) replace its fenced section, or are added
    as one. A folder gets a file of its own (helpers.rules.file_formats.learned_path). The undo
    restores the team's text byte for byte (keeping any edit the agent made to it) and deletes what we
    created, so the patch holds only the agent's work. An empty ruleset writes nothing.

    Every read, write and delete goes through helpers.isolation.untrusted: no link is followed on any component
    of the path (the agent may have swapped the rules folder for a link to a host folder), no special file
    opened. A link or special file found there before the run (the task's repository holds it) is a
    WorkspaceError naming it; one the undo finds (the agent made it) is a RefusedOutput naming it, a
    rule-induced error. Nothing outside the workspace is touched either way.
    """
    workspace = Path(workspace)
    rules = RulesFile.parse(ruleset) if isinstance(ruleset, str) else ruleset
    if not rules.text.strip():
        return lambda: None
    try:  # before the run: what is there is the task's repository's, not the agent's
        return _put_rules(workspace, rules_file, rules)
    except RefusedOutput as error:
        raise WorkspaceError(
            f"{workspace.name}: the rules cannot be written to {rules_file}: "
            f"{str(error).removeprefix(REFUSED + ': ')}. The task's repository has it so; give the "
            "file a link points to as the rules file (e.g. CLAUDE.md for AGENTS.md -> CLAUDE.md)."
        ) from None


def _put_rules(workspace: Path, rules_file: str, ruleset: RulesText) -> Callable[[], None]:
    """write_rules' work, every path reached through helpers.isolation.untrusted; returns the undo."""
    untrusted_kind(workspace / rules_file.rstrip("/"), workspace)  # no link on the way: learned_path looks there
    path = learned_path(workspace, rules_file)
    if untrusted_kind(path, workspace) == "missing":  # nothing of the team's here: the file is ours alone
        text = with_front_matter(path.relative_to(workspace).as_posix(), _with_newline(ruleset.text))
        _write_exact(path, workspace, text, make_folders=True)
        return lambda: remove_untrusted(path, workspace)
    learned = ruleset.learned
    if not learned.strip():  # an imported team file with nothing learned yet: the team's file says it all
        return lambda: None
    original = _read_exact(path, workspace)
    if parts := split_fenced(original):  # the team's file, as the task's repository has it: read here, once
        before, old, after = parts
        _write_exact(path, workspace, before + _with_newline(learned) + after)

        def swap_back() -> None:
            now = _read_exact(path, workspace, missing="")  # what the agent left: read once
            if now_parts := split_fenced(now):
                now_before, _, now_after = now_parts
                _write_exact(path, workspace, now_before + old + now_after)

        return swap_back
    _write_exact(path, workspace, insert_section(original, learned))

    def undo() -> None:
        now = _read_exact(path, workspace, missing=None)
        if now is not None:  # the agent deleted the file: nothing of ours is left in it
            _write_exact(path, workspace, remove_section(now))

    return undo


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


@overload
def _read_exact(path: Path, workspace: Path, missing: str = "") -> str: ...
@overload
def _read_exact(path: Path, workspace: Path, missing: None) -> str | None: ...
def _read_exact(path: Path, workspace: Path, missing: str | None = "") -> str | None:
    """The file's bytes as text, line endings and undecodable bytes kept as they are (read as hostile data);
    `missing` when there is no file."""
    try:
        data = read_untrusted(path, workspace, config.MAX_READBACK_BYTES)
    except FileNotFoundError:
        return missing
    return data.decode("utf-8", errors="surrogateescape")


def _write_exact(path: Path, workspace: Path, text: str, make_folders: bool = False) -> None:
    try:
        write_untrusted(path, workspace, text.encode("utf-8", errors="surrogateescape"), make_folders=make_folders)
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        # the run filled its capped disk (helpers.isolation.disks): the agent's doing, never an infrastructure error
        raise refused(
            path.relative_to(workspace).as_posix(), "could not be written back: the run filled its disk (its disk cap)"
        ) from None


__all__ = ["write_rules"]  # documented in CODE_APPENDIX.md
