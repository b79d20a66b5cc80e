"""A patch as one section per file, and the part of an agent's patch that grading sets aside.

    kept, aside = grading_patch(patch, task["test_patch"])   # aside: ["conftest.py", "tests/test_x.py"]
    set_aside_note(aside)        # "the patch's conftest.py and tests/test_x.py were not used in grading ..."

The hidden tests decide a task, so the agent's changes to what decides it are not applied before them (as
SWE-bench resets the test patch's files, and beyond): test files (test_*.py, *_test.py, anything under a
test/, tests/ or testing/ folder), every path the task's test patch adds or changes, test configuration
(conftest.py, pytest.ini, tox.ini, setup.cfg, pyproject.toml, each set aside whole: a diff's context does
not show reliably which table of a pyproject.toml a line is in, and a bug fix rarely needs these files)
and files Python runs at start-up (sitecustomize.py, usercustomize.py, *.pth). The rest of the patch is
graded, so a fix that also brings its own new test still passes: its test is set aside, the hidden tests
decide. A section naming several paths (a rename) is set aside when any of them is.

Sections are cut the way `git apply` reads a patch: at each `diff --git` header, and at each traditional
`--- `/`+++ ` pair outside a hunk; hunks are consumed by their line counts, so a removed line that reads
`-- x` is never taken for a header.
"""

from __future__ import annotations

import codecs
import re
from pathlib import PurePosixPath

from helpers.families.coding.repo_tests import TEST_DIRS, is_test_file

TEST_CONFIGURATION = ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
STARTUP_FILES = ("sitecustomize.py", "usercustomize.py")  # and *.pth: Python runs them before any test
HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
NAMED = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")


def patch_files(patch: str) -> list[tuple[list[str], str]]:
    """The patch cut into sections, one per file: (the paths the section names, its text), in order. Text
    before the first section is a section naming no path; joining the texts gives the patch back."""
    lines = re.findall(r"[^\n]*\n|[^\n]+$", patch)
    sections: list[tuple[list[str], list[str]]] = [([], [])]
    paths, text = sections[0]
    seen_names = True  # whether the current section already had its ---/+++ pair or a hunk
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            paths, text = _header_paths(line[len("diff --git "):].rstrip("\n")), [line]
            sections.append((paths, text))
            seen_names = False
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            if seen_names:  # a traditional diff of its own
                paths, text = [], []
                sections.append((paths, text))
            paths += [p for p in (_diff_name(line[4:]), _diff_name(lines[i + 1][4:])) if p]
            text += [line, lines[i + 1]]
            seen_names = True
            i += 2
            continue
        elif HUNK.match(line):
            taken = _hunk_length(lines, i)
            text += lines[i:i + taken]
            seen_names = True
            i += taken
            continue
        else:
            named = NAMED.match(line.rstrip("\n"))
            if named:
                paths.append(_unquote(named.group(1)))
            text.append(line)
        i += 1
    return [(list(dict.fromkeys(paths)), "".join(text)) for paths, text in sections if paths or text]


def patch_paths(patch: str) -> set[str]:
    """Every path a patch names."""
    return {path for paths, _ in patch_files(patch) for path in paths}


def is_set_aside(path: str, test_paths: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether grading sets aside an agent's change to `path` (see the module docstring); `test_paths` are the
    paths the task's test patch names."""
    parts = PurePosixPath(path).parts
    name = parts[-1].lower() if parts else ""
    return (path in test_paths or name in TEST_CONFIGURATION or name in STARTUP_FILES or name.endswith(".pth")
            or is_test_file(path) or any(part.lower() in TEST_DIRS for part in parts[:-1]))


def grading_patch(patch: str, test_patch: str = "") -> tuple[str, list[str]]:
    """(the part of `patch` that is graded, the paths set aside from it, sorted)."""
    test_paths = patch_paths(test_patch or "")
    kept, aside = [], set()
    for paths, text in patch_files(patch or ""):
        hidden = [p for p in paths if is_set_aside(p, test_paths)]
        if hidden:
            aside.update(paths)
        else:
            kept.append(text)
    return "".join(kept), sorted(aside)


def set_aside_note(paths: list[str]) -> str:
    """One sentence saying what grading set aside ("" when nothing was): the patch's conftest.py ..."""
    if not paths:
        return ""
    names = paths[0] if len(paths) == 1 else ", ".join(paths[:-1]) + " and " + paths[-1]
    return (f"the patch's {names} {'was' if len(paths) == 1 else 'were'} not used in grading (tests and test "
            "configuration are the task's own)")


def _hunk_length(lines: list[str], start: int) -> int:
    """How many lines the hunk starting at `start` spans, its header and any "\\ No newline" markers included."""
    match = HUNK.match(lines[start])
    old = int(match.group(1) if match.group(1) is not None else 1)
    new = int(match.group(2) if match.group(2) is not None else 1)
    i = start + 1
    while i < len(lines) and (old > 0 or new > 0 or lines[i].startswith("\\")):
        tag = lines[i][:1]
        if tag == "\\":
            pass
        elif tag == "-":
            old -= 1
        elif tag == "+":
            new -= 1
        elif tag in (" ", "\n", "\r"):  # context (some tools strip a blank context line's space)
            old, new = old - 1, new - 1
        else:
            break  # a short hunk: what follows is not its
        i += 1
    return i - start


def _header_paths(names: str) -> list[str]:
    """The paths in a `diff --git a/X b/Y` header (both when they differ; every reading when it is ambiguous)."""
    if names.startswith('"'):
        first, rest = _split_quoted(names)
        return [p for p in (_strip_prefix(first), _strip_prefix(_unquote(rest.strip()))) if p]
    halves = [(names[:i], names[i + 1:]) for i, char in enumerate(names) if char == " "]
    same = [a for a, b in halves if _strip_prefix(a) == _strip_prefix(b)]
    if same:
        return [_strip_prefix(same[0])]
    return sorted({_strip_prefix(p) for half in halves for p in half} - {""})


def _diff_name(field: str) -> str:
    """The path of a `--- a/x` or `+++ b/x` line ("" for /dev/null); a tab ends it (a timestamp may follow)."""
    name = _unquote(field.rstrip("\n").rstrip("\r").split("\t", 1)[0])
    return "" if name == "/dev/null" else _strip_prefix(name)


def _strip_prefix(path: str) -> str:
    """`a/x/y.py` -> `x/y.py`: git apply drops the first component of each name (its -p1)."""
    return path.split("/", 1)[1] if "/" in path else path


def _split_quoted(text: str) -> tuple[str, str]:
    """('the first C-quoted name, unquoted', 'what follows it')."""
    i = 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return _unquote(text[:i + 1]), text[i + 1:]


def _unquote(name: str) -> str:
    """A path as git writes it, C-quoted when it holds unusual characters ("t\\303\\251st.py"), unquoted."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    raw = codecs.escape_decode(name[1:-1].encode("utf-8"))[0]
    return raw.decode("utf-8", errors="replace")


__all__ = ["patch_files", "patch_paths", "is_set_aside", "grading_patch", "set_aside_note",
           "TEST_CONFIGURATION", "STARTUP_FILES"]  # documented in CODE_APPENDIX.md
