"""The team's repository: the learned rules committed into an agent's rules file on a branch, with git
plumbing (the working tree, the index and every other file stay as they were); and the bundled examples
the dry run uses (example feedback on the house suite, a scratch clone of its repository)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from helpers.rules.ruleset import SECTION_START, insert_section, new_rules_file, remove_section
from helpers.rules.file_formats import file_in_folder, front_matter_for, rules_format
from helpers.families.coding.git import GIT_IDENTITY, git
from helpers.isolation.sandbox import host_program


def commit_rules(repo: Path | str, branch: str, rules_file: str, ruleset: str, message: str) -> str | None:
    """Commit `ruleset` as the learned section of `rules_file` on `branch` (created from HEAD when
    missing); returns the commit, or None when the file already says it. The team's text in the file
    stays byte for byte; a file that would hold nothing but an empty section is removed. Built with
    plumbing (a temporary index), so the working tree, the index and other files are untouched.
    Refuses a branch that is checked out (its working tree would fall behind)."""
    repo = check_repository(repo)
    ref = f"refs/heads/{branch}"
    if git("check-ref-format", ref, cwd=repo, check=False).returncode:
        raise ValueError(f"Bad branch name {branch!r}.")
    if git("symbolic-ref", "-q", "HEAD", cwd=repo, check=False).stdout.strip() == ref:
        raise ValueError(f"{branch} is checked out in {repo}: apply to another branch (then review and merge it).")
    tip = git("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", cwd=repo, check=False).stdout.strip()
    parent = tip or git("rev-parse", "--verify", "HEAD^{commit}", cwd=repo).stdout.strip()
    path, mode, old = _blob_at(repo, parent, rules_file)
    if old is not None:
        try:
            old.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{path} on {branch if tip else 'HEAD'} in {repo} is not UTF-8 ({error.reason} at byte "
                f"{error.start}): the learned section cannot be added without changing the team's text. "
                f"Convert it (e.g. iconv -f latin1 -t utf-8), commit, and apply again."
            ) from None
    new = _with_section(old, ruleset, path)
    if new == old:
        return None
    with tempfile.TemporaryDirectory(prefix="pl-index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git("read-tree", parent, cwd=repo, env=env)
        if new is None:
            git("update-index", "--force-remove", "--", path, cwd=repo, env=env)
        else:
            blob = _git_bytes(["hash-object", "-w", "--stdin"], repo, new).decode().strip()
            git("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", cwd=repo, env=env)
        tree = git("write-tree", cwd=repo, env=env).stdout.strip()
    commit = git("commit-tree", tree, "-p", parent, "-F", "-", cwd=repo, input=message).stdout.strip()
    git("update-ref", ref, commit, tip or "0" * 40, cwd=repo)
    return commit


def check_repository(repo: Path | str) -> Path:
    """`repo` as a Path, or one clear ValueError when it is not a git repository with a commit."""
    repo = Path(repo)
    if not repo.is_dir():
        raise ValueError(f"{repo} is not a folder: pass the path of the team's git repository.")
    if git("rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=repo, check=False).returncode:
        inside = not git("rev-parse", "--git-dir", cwd=repo, check=False).returncode
        raise ValueError(
            f"{repo} {'has no commit yet' if inside else 'is not a git repository'}: the learned rules "
            "are committed on a branch of the team's repository (git init and a first commit, or the "
            "repository's own path)."
        )
    return repo


def branch_exists(repo: Path | str, branch: str) -> bool:
    """Whether refs/heads/`branch` exists in `repo` (a git repository: check_repository)."""
    return not git(
        "rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}", cwd=check_repository(repo), check=False
    ).returncode


def _blob_at(repo: Path, commit: str, rules_file: str) -> tuple[str, str, bytes | None]:
    """(path in the tree, file mode, content or None) of the rules file at `commit` (any format of
    helpers.rules.file_formats); a rules folder gets a file of its own inside it (file_in_folder)."""
    fmt, name = rules_format(rules_file)
    path = fmt.path(name) if fmt.folder is not None else rules_file.strip("/")
    entry = git("ls-tree", commit, "--", path, cwd=repo).stdout.split()
    if entry and entry[1] == "tree":
        path = file_in_folder(Path(path)).as_posix()
        entry = git("ls-tree", commit, "--", path, cwd=repo).stdout.split()
    if not entry:
        return path, "100644", None
    return path, entry[0], _git_bytes(["cat-file", "blob", entry[2]], repo)


def _with_section(old: bytes | None, ruleset: str, path: str) -> bytes | None:
    """The bytes of the file at `path` with `ruleset` as its learned section (None: no file). A new file is
    made as export makes one (new_rules_file: front matter first where its format needs it)."""
    old_text = old.decode("utf-8", "surrogateescape") if old is not None else None
    team = remove_section(old_text) if old_text is not None else None
    if not ruleset.strip():
        ours = ("", front_matter_for(path))  # what we wrote around an empty section: nothing of the team's
        if old_text is None or team is None or (team in ours and SECTION_START in old_text):
            return None
        return team.encode("utf-8", "surrogateescape")
    text = new_rules_file(path, ruleset) if team is None else insert_section(team, ruleset)
    return text.encode("utf-8", "surrogateescape")


def _git_bytes(args: list[str], repo: Path, data: bytes | None = None) -> bytes:
    env = {**os.environ, **GIT_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    # the host's git by absolute path: a relative PATH entry would run a `git` the repository holds (host_program)
    return subprocess.run(
        [host_program("git"), *args], cwd=repo, env=env, input=data, capture_output=True, check=True
    ).stdout


# --- the bundled examples (the dry run) -------------------------------------------------------------------
EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


def example_feedback() -> dict[str, Any]:
    """The bundled example feedback on the house suite (its manifest): {"agent_login": the agent's
    GitHub login in them, "items": [{path, kind, context}]}."""
    manifest = json.loads((EXAMPLES_DIR / "manifest.json").read_text(encoding="utf-8"))
    items = [{**item, "path": str(EXAMPLES_DIR / item["path"])} for item in manifest["items"]]
    return {"agent_login": manifest["agent_login"], "items": items}


def demo_repository(dest: Path | str | None = None) -> Path:
    """A scratch clone of the house suite's `ledger` repository to apply rules to (the dry run)."""
    from helpers.families.coding.house_suite import build_house_repos

    source = build_house_repos()["house/ledger"]
    dest = Path(dest or tempfile.mkdtemp(prefix="continual-demo-")) / "ledger"
    git("clone", "--quiet", str(source), str(dest), cwd=dest.parent)
    return dest


__all__ = [
    "commit_rules",
    "check_repository",
    "branch_exists",
    "example_feedback",
    "demo_repository",
]  # documented in CODE_APPENDIX.md
