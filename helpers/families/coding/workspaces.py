"""Workspaces: a task's repository at its base commit, as a clean git tree an agent may edit, and the one room
that decides what the host does with a workspace after an agent ran in it.

A task row names its source repository in `repo_path` (a local git repository or mirror: the house
suite sets it; for SWE-bench, a folder of mirrors, see `swebench_repo_path`). `prepare_workspace`
builds `<root>/<instance_id>` with a repository of its own that holds the base commit and its ancestors
only: no later commit, branch, tag, remote, reflog, stash or unreachable object (a clone of a mirror or of
a team's repository would hold the fix: SWE-bench issue #465), checked after it is made. It is
self-contained: no `objects/info/alternates` pointing back into the cache (whose tasks.json holds hidden
tests and gold patches) and no hardlinks through which an agent could rewrite the cached objects.

Everything in the workspace is the agent's output afterwards, its `.git` included: git obeys a
repository's config (core.fsmonitor, hooks, filter, diff and textconv drivers) and would run the agent's
commands on the host. So the host never runs git with the workspace's repository: it keeps a git
directory of its own beside the workspace, outside the sandbox (`host_git_dir`: its config, index and
hooks are ours; its objects are the source's, read through alternates), and `workspace_patch` diffs the
work tree against the base through it. A work tree's `.gitattributes` can then only name drivers that the
host's configuration defines, and it defines none.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Sequence, cast

from helpers.core import config
from helpers.core.names import check_inside, check_name
from helpers.core.protocols import Task
from helpers.isolation.sandbox import host_program
from helpers.isolation.trees import remove_tree, say, walk_tree
from helpers.isolation.untrusted import refused
from helpers.families.coding.binary_patches import INDEX, UNREADABLE_DELTA, as_literal, new_side
from helpers.families.coding.git import WorkspaceError, git, git_environment


def swebench_repo_path(repo: str, mirrors_dir: Path | str) -> Path:
    """Where a SWE-bench repository's mirror is expected: <mirrors_dir>/<owner>__<name>."""
    return Path(mirrors_dir) / repo.replace("/", "__")


def prepare_workspace(task: Task, root: Path | str) -> Path:
    """A fresh repository of the task's at `base_commit` under `root` (its base and ancestors only), and the
    host's git directory for it (host_git_dir); returns the workspace's path.

    The repository is the task's `repo_path` (the house suite's, a mined task's, or a mirror in MIRRORS_DIR);
    a SWE-bench task without one gets a mirror cloned once into the cache (helpers.families.coding.mirrors).
    Raises WorkspaceError with what to do when the repository or commit is not available, and
    ValueError, touching nothing, when the instance id is not a safe folder name.
    """
    instance_id = check_name(task["instance_id"], "instance_id")
    source = _source_repository(task, instance_id)
    dest = Path(root) / instance_id
    remove_workspace(dest, root)
    dest.parent.mkdir(parents=True, exist_ok=True)
    base = _base_commit(source, str(task["base_commit"]), instance_id)
    _history_until(base, source, dest, instance_id)
    check_no_future(dest, base)
    _host_side(dest, base, objects=_git_dir(source) / "objects")
    return dest


def _source_repository(task: Task, instance_id: str) -> Path:
    source = task.get("repo_path")
    if _is_repository(source):
        return Path(str(source))
    if task.get("suite") != "swebench" or not task.get("repo"):
        raise WorkspaceError(
            f"{instance_id}: no local repository for {task.get('repo')!r} (repo_path={source!r}). "
            "House tasks get one from load_house_suite(); SWE-bench tasks get a mirror cloned on first use, "
            "or from MIRRORS_DIR (a folder of `git clone --mirror` copies named owner__name)."
        )
    from helpers.families.coding.mirrors import ensure_mirror

    return ensure_mirror(str(task["repo"]), str(task["base_commit"]))


def _git_dir(repository: Path) -> Path:
    """A repository's git directory: `<repo>/.git`, or the repository itself when it is bare (a mirror)."""
    return (repository / ".git") if (repository / ".git").is_dir() else repository


def _base_commit(source: Path, commit: str, instance_id: str) -> str:
    found = git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", cwd=source, check=False)
    if found.returncode != 0 or not commit.strip():
        raise WorkspaceError(f"{instance_id}: base commit {commit!r} not found in {source}.")
    return found.stdout.strip()


def _history_until(base: str, source: Path, dest: Path, instance_id: str) -> None:
    """`dest` as a repository holding `base` and its ancestors only, checked out at `base` (HEAD detached):
    a fetch of that one commit, so nothing later (commits, refs, tags, remotes, objects) is ever copied."""
    quiet = ("-c", "core.logAllRefUpdates=false")  # no reflog either
    made = git("init", "--quiet", str(dest), cwd=dest.parent, check=False)
    fetched = made.returncode == 0 and git(
        *quiet,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        str(Path(source).resolve()),
        base,
        cwd=dest,
        check=False,
    )
    if not fetched or fetched.returncode != 0:
        problem = (fetched or made).stderr.strip()
        raise WorkspaceError(f"{instance_id}: cannot copy {source} at {base[:12]}: {problem}")
    git(*quiet, "update-ref", "--no-deref", "HEAD", base, cwd=dest)
    git(*quiet, "reset", "--quiet", "--hard", base, cwd=dest)


def check_no_future(repository: Path | str, base_commit: str) -> None:
    """Raise WorkspaceError unless `repository` holds `base_commit` and its ancestors only: no other commit
    object (reachable or not), no ref, tag, remote, reflog or stash. Run on every workspace after it is made."""
    repository = Path(repository)
    ancestors = set(git("rev-list", base_commit, cwd=repository).stdout.split())
    objects = git(
        "cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectname)", cwd=repository
    ).stdout.split("\n")
    later = [line.split()[1] for line in objects if line.startswith("commit ") and line.split()[1] not in ancestors]
    refs = git("for-each-ref", "--format=%(refname)", cwd=repository).stdout.split()
    remotes = git("remote", cwd=repository).stdout.split()
    logs = (
        [p for p in (repository / ".git" / "logs").rglob("*") if p.is_file()]
        if (repository / ".git" / "logs").exists()
        else []
    )
    found = [
        f"{len(later)} commit(s) not in the base's history" if later else "",
        f"refs {refs[:3]}" if refs else "",
        f"remotes {remotes}" if remotes else "",
        "a reflog" if logs else "",
    ]
    if any(found):
        raise WorkspaceError(
            f"{repository.name}: the workspace holds more than the base commit's history: "
            f"{', '.join(f for f in found if f)}."
        )


def host_git_dir(workspace: Path | str) -> Path:
    """The host's own git directory for `workspace`: `<root>/.host/<name>.git`, beside the workspace and never
    inside it (the sandbox binds the workspace alone). Its config, hooks and index are the host's."""
    workspace = Path(workspace)
    return workspace.parent / ".host" / f"{workspace.name}.git"


def _host_side(workspace: Path, base: str, objects: Path) -> None:
    """The host's git directory for `workspace`: bare, objects read through alternates from `objects` (a
    repository the host owns: the task's source, never the workspace), HEAD and index at `base`."""
    host = host_git_dir(workspace)
    _remove_host(host)
    host.parent.mkdir(parents=True, exist_ok=True)
    git("init", "--quiet", "--bare", str(host), cwd=host.parent)
    (host / "objects" / "info" / "alternates").write_text(str(Path(objects).resolve()) + "\n")
    _host_git(workspace, "update-ref", "--no-deref", "HEAD", base)
    _host_git(workspace, "read-tree", base)


def adopt_workspace(workspace: Path | str, base_commit: str) -> Path:
    """Make the host's git directory for a workspace the caller prepared (not by prepare_workspace), BEFORE an
    agent runs in it: the base commit's history is copied out of the workspace's repository while it is still
    the caller's own. Returns host_git_dir(workspace); remove_workspace or forget_host_side removes it."""
    workspace = Path(workspace)
    host = host_git_dir(workspace)
    _remove_host(host)
    host.parent.mkdir(parents=True, exist_ok=True)
    git("init", "--quiet", "--bare", str(host), cwd=host.parent)
    fetched = git(
        "--git-dir",
        str(host),
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        str(workspace.resolve()),
        base_commit,
        cwd=host.parent,
        check=False,
    )
    if fetched.returncode != 0:
        forget_host_side(workspace)
        raise WorkspaceError(f"{workspace}: base commit {base_commit} not found: {fetched.stderr.strip()}")
    _host_git(workspace, "update-ref", "--no-deref", "HEAD", base_commit)
    _host_git(workspace, "read-tree", base_commit)
    return host


def _remove_host(host: Path) -> None:
    """Delete a host git directory: only ever a folder inside its `.host` folder (check_inside)."""
    if os.path.lexists(host):
        remove_tree(check_inside(host, host.parent), note=say)


def forget_host_side(workspace: Path | str) -> None:
    """Delete the host's git directory of `workspace` (missing is fine). The `.host` folder itself stays: the
    workspaces of one root share it, and one run's cleanup removing it while another run is creating its
    git directory there failed that run (FileNotFoundError, seen at load); the root's owner removes it."""
    _remove_host(host_git_dir(workspace))


# git, as the host runs it on a workspace: the host's git directory and configuration only. The -c settings
# repeat what the host's own config already says (nothing), in case a future git reads a work tree's file; the
# submodule ones keep git from ever looking into a repository inside the tree (it would run `git status` there,
# with that repository's config: its filters, fsmonitor and drivers), though none is there (_refuse_nested).
HOST_GIT_SETTINGS = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "diff.external=",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "protocol.allow=never",
    "-c",
    "diff.ignoreSubmodules=all",
    "-c",
    "submodule.recurse=false",
    "-c",
    "status.submoduleSummary=false",
    "-c",
    "fetch.recurseSubmodules=false",
    "-c",
    "core.attributesFile=/dev/null",
)


def _host_command(workspace: Path, *args: str) -> list[str]:
    host = host_git_dir(workspace)
    if not (host / "HEAD").exists():
        raise WorkspaceError(
            f"{workspace}: the host has no git directory for this workspace; make it with "
            "prepare_workspace (or adopt_workspace before the agent runs)."
        )
    return [*HOST_GIT_SETTINGS, "--git-dir", str(host), "--work-tree", str(workspace), *args]


def _host_git(workspace: Path, *args: str, check: bool = True):
    return git(
        *_host_command(workspace, *args),
        cwd=workspace,
        check=check,
        env={"GIT_INDEX_FILE": str(host_git_dir(workspace) / "index")},
    )


def _refuse_nested(workspace: Path) -> None:
    """RefusedOutput naming each `.git` (a folder, a file, a link) below the work tree's top level: a nested
    repository, a submodule's gitfile, a gitlink's repository. git would look into it (and run its config)
    when the host takes the patch. Walked by helpers.isolation.trees (no link followed, any depth, bounded: a tree
    past its limits, or a folder the agent made unreadable, is refused by name: git could not take it either);
    the top level's own `.git` is the agent's and never read (the host diffs with host_git_dir)."""
    found = []
    with os.scandir(workspace) as top:
        names = [entry.name for entry in top if entry.name != ".git"]
    for name in names:
        if name.lower() == ".git":
            found.append(name)
        elif os.path.isdir(workspace / name) and not os.path.islink(workspace / name):
            found += [f"{name}/{path}" for _, entry, _, path in walk_tree(workspace / name) if entry.lower() == ".git"]
    if found:
        shown = ", ".join(sorted(found)[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise refused(
            shown,
            "- a git repository inside the work tree (a nested repository, or a submodule's link "
            "to one): the host never looks into a repository the agent made, so no patch is taken",
        )


def _is_repository(path: object) -> bool:
    return bool(path) and (Path(str(path), ".git").exists() or Path(str(path), "HEAD").exists())


def remove_workspace(path: Path | str, root: Path | str | None = None) -> None:
    """Delete a workspace folder and the host's git directory for it (missing is fine); never `root` itself
    or anything outside it (default root: the workspace's parent folder, where prepare_workspace put it)."""
    target = check_inside(path, Path(path).parent if root is None else root)
    remove_tree(target, note=say)  # the agent's tree: no link followed, any depth; never raises (what is left is said)
    forget_host_side(target)


# Never part of a patch: what running code leaves behind.
PATCH_DEBRIS = ("**/__pycache__/**", "**/*.pyc", ".pytest_cache/**", "**/*.egg-info/**")


def workspace_patch(
    workspace: Path | str, base_commit: str, exclude: Sequence[str] = (), max_bytes: int | None = None
) -> str:
    """The change in `workspace` against `base_commit`, new files included, build debris and `exclude`
    (glob patterns) left out: the one place the host takes an agent's work, for every agent.

    Taken with the host's git directory (host_git_dir) and configuration: nothing the agent wrote in the
    workspace's `.git` or its attributes runs or changes what is taken. A `.git` anywhere below the top level
    (a nested repository, a submodule, a gitlink's repository) is a RefusedOutput naming it, before any git
    runs, and git is told never to look into submodules. Any bytes travel: a binary file, or a file that is not
    UTF-8 text (Latin-1, the bytes ED A0 80), is in git's binary form (base85, which `git apply` takes back), the
    rest as text, so the patch is always UTF-8 text and no run is refused for an encoding. A patch over
    `max_bytes` (config.MAX_PATCH_BYTES) is a RefusedOutput naming its size: read as a stream, never held whole.
    Both refusals are the agent's doing (rule-induced errors, helpers.stats.outcomes)."""
    workspace = Path(workspace)
    limit = config.MAX_PATCH_BYTES if max_bytes is None else max_bytes
    _refuse_nested(workspace)
    added = _host_git(workspace, "add", "--all", "--intent-to-add", check=False)
    if added.returncode:  # the agent's new files would drop out of the patch unseen: a failure, named, not a diff
        raise WorkspaceError(f"git could not list the new files in the workspace: {added.stderr.strip()[-500:]}")
    paths = ["--", ".", *(f":(exclude,glob){pattern}" for pattern in (*PATCH_DEBRIS, *exclude))]
    data = _capped_output(workspace, limit, *DIFF, base_commit, *paths)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:  # a file of other bytes (Latin-1, a lone surrogate's encoding): git's binary form
        return _with_binary_sections(workspace, limit, base_commit, paths)


# How the host diffs a work tree: binary files as git's binary patches (`git apply` takes them back), paths with
# other bytes than ASCII quoted (core.quotePath), no driver of any kind.
DIFF = (
    "-c",
    "core.quotePath=true",
    "diff",
    "--binary",
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--ignore-submodules=all",
)


def _with_binary_sections(workspace: Path, limit: int, base_commit: str, paths: list[str]) -> str:
    """The patch with every file whose section is not UTF-8 text in git's binary form (base85: ASCII), the rest as
    text: two diffs without rename pairing (a renamed file's halves may fall in different ones), the second under
    the host's own attributes (its git directory's info/attributes, above any the work tree holds), which mark
    every file binary."""
    no_renames = (*DIFF, "--no-renames", base_commit)
    names = _capped_output(workspace, limit, *DIFF, "--name-only", "-z", "--no-renames", base_commit, *paths)
    names_list = [name for name in names.split(b"\0") if name]
    sections = _sections(_capped_output(workspace, limit, *no_renames, *paths))
    if len(sections) == len(names_list):
        binary = [name for name, section in zip(names_list, sections) if not _is_utf8(section)]
    else:  # cannot pair them up (should not happen): every file in binary form
        binary = names_list
    literal = [name.decode("utf-8", "surrogateescape") for name in binary]
    text = _capped_output(workspace, limit, *no_renames, *paths, *(f":(exclude,literal){name}" for name in literal))
    attributes = host_git_dir(workspace) / "info" / "attributes"
    attributes.parent.mkdir(exist_ok=True)
    attributes.write_text("* -diff -text\n")
    try:
        binary_part = _capped_output(workspace, limit, *no_renames, "--", *(f":(literal){name}" for name in literal))
    finally:
        attributes.unlink()
    data = text + b"\n".join(_as_literal(workspace, limit, section) for section in _sections(binary_part))
    if len(data) > limit:
        raise refused(
            "the patch",
            f"is {len(data)} bytes, over the {limit} bytes a patch may hold (MAX_PATCH_BYTES); it is not recorded",
        )
    return data.decode("utf-8")  # every section is UTF-8 now: text, or base85 with quoted paths


def _as_literal(workspace: Path, limit: int, section: bytes) -> bytes:
    """A binary section whose new side git wrote as a delta (it has no flag against one), rewritten as literal
    from the base blob the host holds: a delta cannot be read without its base, so the suspect check could not
    read the file (binary_patches). One that does not decode or check stays as git wrote it (and is suspect)."""
    text = section.decode("utf-8")
    index = INDEX.search(text)
    if new_side(text) != UNREADABLE_DELTA or not index:
        return section
    try:
        return as_literal(text, _capped_output(workspace, limit, "cat-file", "blob", index.group(1))).encode()
    except ValueError:
        return section


def _sections(data: bytes) -> list[bytes]:
    """A patch cut at each `diff --git ` header (at a line's start: a hunk's lines start with ' ', '+' or '-')."""
    return [section for section in data.replace(b"\ndiff --git ", b"\n\0diff --git ").split(b"\n\0") if section]


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _capped_output(workspace: Path, limit: int, *args: str) -> bytes:
    """The output of the host's git `args` on `workspace`, at most `limit` bytes: more is a RefusedOutput naming
    how many bytes there were (counted as they pass, not kept). A failing git is a WorkspaceError."""
    command = [host_program("git"), *_host_command(workspace, *args)]  # by absolute path (host_program)
    env = git_environment({"GIT_INDEX_FILE": str(host_git_dir(workspace) / "index")})
    chunks, size = [], 0
    with (
        tempfile.TemporaryFile() as errors,
        subprocess.Popen(  # stderr in a file: a full pipe cannot stall git
            command, cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors
        ) as process,
    ):
        stdout = cast(IO[bytes], process.stdout)  # stdout=PIPE: a pipe, never None
        while chunk := stdout.read(2**20):
            size += len(chunk)
            if size <= limit:
                chunks.append(chunk)
            else:
                chunks = []  # counted on to name the size; nothing more is kept
        process.wait()
        errors.seek(0)
        problem = errors.read(4000).decode(errors="replace").strip()
    if process.returncode != 0:
        raise WorkspaceError(f"{workspace.name}: git {args[2] if args[0] == '-c' else args[0]} failed: {problem}")
    if size > limit:
        raise refused(
            "the patch",
            f"is {size} bytes, over the {limit} bytes a patch may hold (MAX_PATCH_BYTES); it is not recorded",
        )
    return b"".join(chunks)


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "prepare_workspace",
    "remove_workspace",
    "swebench_repo_path",
    "git",
    "WorkspaceError",
    "workspace_patch",
    "host_git_dir",
    "adopt_workspace",
    "forget_host_side",
    "check_no_future",
]
