"""Tripwires: tests made for one grading, planted among the task's hidden tests, that must fail (and ones that
must pass), so that a grade forged from inside pytest's process shows as forged.

    wires = plant_tripwires(repo, names)        # written into the hidden test files of the scratch clone
    order = wires.command_order(names)          # the task's tests and the wires, shuffled: run them all
    forged_reason(wires, run.tests, run.exit_status, names)      # "" | why the grade is forged

Code under test runs inside pytest's process: from there it can rewrite the report, exit with any status, run
pytest again on other files or flip every outcome pytest records. What it cannot do is tell these tests from the
task's own without reading and judging each test's source: each grading makes new ones, named from the words
of the task's own test names (the same first and last word, the same class shape), written into the same files
between their tests at random, and run in one shuffled command line with them. An honest run therefore always has a failed test and exits 1; a run whose
must-fail test passed, that exited 0, or whose task tests all passed while a tripwire did not come out as it
must, was forged (helpers.stats.outcomes counts it apart: never resolved). See docs/security.md for what this
leaves out of reach.
"""

from __future__ import annotations

import ast
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Sequence

from helpers.isolation.untrusted import RefusedOutput, read_untrusted, untrusted_kind, write_untrusted

MUST_FAIL, MUST_PASS = 2, 1  # tripwires planted per grading
MAX_TEST_FILE_BYTES = 8 * 2**20  # a hidden test file larger than this hosts no tripwire
# Ordinary words of test names, mixed with the task's own so that a name never repeats across gradings.
WORDS = (
    "value",
    "values",
    "empty",
    "keeps",
    "returns",
    "order",
    "raises",
    "name",
    "names",
    "list",
    "none",
    "default",
    "missing",
    "twice",
    "first",
    "last",
    "total",
    "update",
    "result",
    "input",
    "rejects",
    "accepts",
    "blank",
    "zero",
    "negative",
    "large",
    "small",
    "unchanged",
    "same",
    "new",
    "old",
    "items",
    "count",
    "reads",
    "writes",
    "after",
    "before",
    "without",
    "with",
    "when",
    "is",
    "are",
    "the",
    "a",
    "an",
)
SECTION = re.compile(r"^_{3,} (.+?) _{3,}$")  # a test's section in pytest's failures and passes
COUNTS = re.compile(r"(^|, |=+ )(\d+) (failed|passed|errors?)\b")  # pytest's last line: "2 failed, 5 passed in 0.2s"
PROGRESS = re.compile(r"^[.FEsxX]+\s*(?:\[\s*\d+%\])?\s*$")


@dataclass
class Tripwires:
    """The tests one grading planted: node ids that must fail and ones that must pass (both empty when no
    hidden test file could host them)."""

    must_fail: list[str] = field(default_factory=list)
    must_pass: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [*self.must_fail, *self.must_pass]

    def command_order(self, names: Sequence[str]) -> list[str]:
        """The task's `names` and the tripwires in one random order (a new one each grading)."""
        everything = [*names, *self.ids]
        return secrets.SystemRandom().sample(everything, len(everything))


def plant_tripwires(
    repo: Path | str, names: Sequence[str], *, must_fail: int = MUST_FAIL, must_pass: int = MUST_PASS
) -> Tripwires:
    """Write `must_fail` tests that fail and `must_pass` tests that pass into the files of the hidden tests
    `names` (pytest node ids) in `repo`, the grading's scratch clone, and return their node ids. Each is shaped
    like a named test of its file (that test's first and last word, module-level or in a class as it is), named
    from the words of the task's own test names, and placed before one of the file's definitions or after them,
    at random; the files are read and written without following a link. A Tripwires with no ids when no named
    test's file is a regular file here (of at most MAX_TEST_FILE_BYTES)."""
    rng = secrets.SystemRandom()
    models, texts = _models(Path(repo), names), {}
    for path in dict.fromkeys(path for path, _ in models):
        try:
            texts[path] = read_untrusted(Path(repo) / path, repo, MAX_TEST_FILE_BYTES)
        except (RefusedOutput, OSError):
            continue  # over the cap: it hosts none
    models = [(path, node) for path, node in models if path in texts]
    if not models:
        return Tripwires()
    vocabulary = sorted({w for n in names for w in _words(_function(n))} | set(WORDS))
    taken = {_function(n) for n in names}
    wires, changed = Tripwires(), set()
    for fails in [True] * must_fail + [False] * must_pass:
        path, model = rng.choice(models)
        node, code = _wire(model, vocabulary, taken | _defined(texts[path]), fails, rng)
        texts[path] = _inserted(texts[path], code, rng)
        changed.add(path)
        taken.update(node.split("::"))
        (wires.must_fail if fails else wires.must_pass).append(f"{path}::{node}")
    for path in changed:
        write_untrusted(Path(repo) / path, repo, texts[path])
    return wires


def forged_reason(wires: Tripwires, outcomes: dict[str, str], exit_status: int | None, names: Sequence[str]) -> str:
    """Why a test run's grade is forged, in one line, or "" when the tripwires came out as an honest run's do:
    a must-fail test passed; the run exited 0 though a must-fail test was in it (pytest exits 1 when a test
    fails); or the task's tests `names` all passed while a tripwire (in the same files, so imported with them)
    is missing, skipped or came out the wrong way: a report made up, not run. `outcomes` are the run's by node
    id (its report), `exit_status` the process's."""
    if not wires.must_fail:
        return ""
    passed = [w for w in wires.must_fail if outcomes.get(w) == "PASSED"]
    if passed:
        return f"forged: a test made to fail in this grading passed ({passed[0]})"
    if exit_status == 0:
        return "forged: the test run exited 0, though a test made to fail in this grading was among its tests"
    expected = {**{w: "FAILED" for w in wires.must_fail}, **{w: "PASSED" for w in wires.must_pass}}
    off = [w for w, outcome in expected.items() if outcomes.get(w, "MISSING") != outcome]
    if off and names and all(outcomes.get(name) == "PASSED" for name in names):
        return (
            f"forged: the task's tests passed, but a test made for this grading came out "
            f"{outcomes.get(off[0], 'MISSING')} where it must come out {expected[off[0]]} ({off[0]})"
        )
    return ""


def without_tripwires(log: str, wires: Tripwires, outcomes: dict[str, str]) -> str:
    """The test output with the tripwires' own lines and sections taken out, and pytest's last count line
    ("4 failed, 5 passed in 0.20s") counting the task's tests only: what the judge and a person read is the
    task's tests' output. `outcomes` are the run's, by node id."""
    if not wires.ids:
        return log
    shown = {node.split("::", 1)[1].replace("::", ".") for node in wires.ids}
    kept, skipping = [], False
    for line in log.splitlines(keepends=True):
        section = SECTION.match(line.rstrip("\n"))
        if section:
            skipping = section.group(1) in shown
        elif line.startswith("===="):
            skipping = False
        if not skipping and not any(node in line for node in wires.ids):
            kept.append(line)
    counts = {
        word: sum(outcomes.get(node) == outcome for node in wires.ids)
        for word, outcome in (("failed", "FAILED"), ("passed", "PASSED"), ("error", "ERROR"))
    }
    for i in range(len(kept) - 1, -1, -1):
        if COUNTS.search(kept[i]):
            kept[i] = _recount(kept[i], counts)
            break
    # the progress line (one mark per test, the tripwires' among them) and a section left empty go too
    kept = [line for line in kept if not PROGRESS.match(line)]
    return "".join(
        line
        for i, line in enumerate(kept)
        if not (
            line.startswith("====")
            and (i + 1 == len(kept) or kept[i + 1].startswith("===="))
            and "short test summary" not in line
            and not COUNTS.search(line)
        )
    )


def _recount(line: str, counts: dict[str, int]) -> str:
    """pytest's count line with the tripwires' outcomes taken off, a count left at 0 dropped."""

    def less(match: re.Match) -> str:
        left = max(0, int(match.group(2)) - counts[match.group(3).rstrip("s")])
        return f"{match.group(1)}{left} {match.group(3)}" if left else "" if match.group(1) == ", " else match.group(1)

    return re.sub(r"(^|=+ ), ", r"\1", COUNTS.sub(less, line))


def _models(repo: Path, names: Sequence[str]) -> list[tuple[str, str]]:
    """(file, the named test's id within it) for each named test whose file is a regular file in `repo`."""
    models = []
    for name in names:
        path, _, node = name.partition("::")
        parts = PurePosixPath(path).parts
        if not node or not parts or ".." in parts or PurePosixPath(path).is_absolute():
            continue
        try:
            if untrusted_kind(repo / path, repo) == "file":
                models.append((path, node))
        except (RefusedOutput, ValueError, OSError):
            continue
    return models


def _inserted(text: bytes, code: str, rng: secrets.SystemRandom) -> bytes:
    """`text` (a test file) with `code` (a test function or class) before one of its top-level definitions chosen
    at random, or at its end (always, when the file is not UTF-8 Python that parses)."""
    ending = b"" if text.endswith(b"\n") or not text else b"\n"
    try:
        source = text.decode("utf-8")
        starts = [
            min([node.lineno, *(d.lineno for d in node.decorator_list)])
            for node in ast.parse(source).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
    except (UnicodeDecodeError, SyntaxError, ValueError):
        starts = []
    start = rng.choice([*starts, None])
    if start is None:
        return text + ending + code.encode()
    lines = source.splitlines(keepends=True)
    return ("".join(lines[: start - 1]) + code.lstrip("\n") + "\n\n" + "".join(lines[start - 1 :])).encode()


def _function(name: str) -> str:
    """The function's name in a node id ("tests/a.py::T::test_x[1]" -> "test_x")."""
    return name.rsplit("::", 1)[-1].split("[", 1)[0]


def _words(function: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Za-z][a-z0-9]*", function) if w.isascii()][1:]


def _defined(text: bytes) -> set[str]:
    return set(re.findall(r"(?m)^\s*(?:def|class)\s+(\w+)", text.decode("utf-8", errors="replace")))


def _wire(
    model: str, vocabulary: list[str], taken: set[str], fails: bool, rng: secrets.SystemRandom
) -> tuple[str, str]:
    """(the node id within its file, its code) of one tripwire shaped like `model` (a node id within a file): its
    function's first and last word kept (so a python_functions pattern that collects the task's collects it),
    in a class when the model is, named with the model class's first and last word."""
    parts = model.split("::")
    function = parts[-1].split("[", 1)[0]
    while True:
        name = _named(function, rng.sample(vocabulary, rng.randint(2, min(5, len(vocabulary)))))
        cls = _named(parts[-2], [w.title() for w in rng.sample(vocabulary, 2)]) if len(parts) > 1 else ""
        if name not in taken and cls not in taken:
            break
    token = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(5, 9)))
    wrong = rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ".replace(token.upper()[-1], ""))
    expected = token.upper() if not fails else token.upper()[:-1] + wrong
    body = f'value = "{token}"\nassert value.upper() == "{expected}"\n'
    if cls:
        code = f"\n\nclass {cls}:\n    def {name}(self):\n" + "".join(f"        {line}\n" for line in body.splitlines())
        return f"{cls}::{name}", code
    return name, f"\n\ndef {name}():\n" + "".join(f"    {line}\n" for line in body.splitlines())


def _named(model: str, words: list[str]) -> str:
    """A name shaped like `model` ("test_opens_an_account", "TestAccounts") from `words`: the model's first and
    last word around them, joined as the model joins its words."""
    if "_" in model.strip("_"):
        first, *_, last = model.split("_")
        return "_".join([first, *words, last])
    pieces = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", model) or [model]
    middle = "".join(w.title() for w in words)
    return pieces[0] + middle + (pieces[-1] if len(pieces) > 1 else "")


__all__ = [
    "plant_tripwires",
    "forged_reason",
    "without_tripwires",
    "Tripwires",
    "MUST_FAIL",
    "MUST_PASS",
]  # documented in CODE_APPENDIX.md
