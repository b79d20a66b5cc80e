"""A patch cut per file the way git apply reads it, and what of an agent's patch grading sets aside."""

import pytest

from helpers.families.coding.git import git
from helpers.families.coding.patches import (grading_patch, is_set_aside, patch_files, patch_paths, set_aside_note,
                                           suspect_lines)


def section(path, old="a\n", new="b\n"):
    return (f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1 +1 @@\n-{old}+{new}")


FIX = section("ledger/accounts.py")
TEST_PATCH = ("diff --git a/tests/test_hidden.py b/tests/test_hidden.py\nnew file mode 100644\n--- /dev/null\n"
              "+++ b/tests/test_hidden.py\n@@ -0,0 +1 @@\n+def test_x(): pass\n")


def test_a_patch_is_cut_into_one_section_per_file_and_the_sections_join_back_into_it():
    patch = FIX + section("conftest.py") + TEST_PATCH
    files = patch_files(patch)
    assert [paths for paths, _ in files] == [["ledger/accounts.py"], ["conftest.py"], ["tests/test_hidden.py"]]
    assert "".join(text for _, text in files) == patch


@pytest.mark.parametrize("path", [
    "conftest.py", "src/pkg/conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "sitecustomize.py",
    "usercustomize.py", "src/evil.pth", "tests/helpers.py", "tests/data/expected.json", "pkg/testing/fake.py",
    "test_money.py", "pkg/money_test.py", "tests/test_hidden.py",
])
def test_tests_test_configuration_and_start_up_files_are_set_aside(path):
    assert is_set_aside(path, patch_paths(TEST_PATCH))


@pytest.mark.parametrize("path", ["ledger/accounts.py", "CHANGELOG.md", "README.md", "setup.py", "ledger/contest.py"])
def test_the_code_and_its_documents_are_graded(path):
    assert not is_set_aside(path, patch_paths(TEST_PATCH))


def test_any_path_the_test_patch_names_is_set_aside_wherever_it_is():
    test_patch = section("docs/expected_output.txt")
    assert is_set_aside("docs/expected_output.txt", patch_paths(test_patch))
    assert not is_set_aside("docs/expected_output.txt")


def test_grading_keeps_the_fix_and_lists_what_it_set_aside():
    kept, aside = grading_patch(FIX + section("conftest.py") + section("tests/test_hidden.py"), TEST_PATCH)
    assert kept == FIX and aside == ["conftest.py", "tests/test_hidden.py"]
    assert grading_patch(FIX, TEST_PATCH) == (FIX, [])
    assert grading_patch("", TEST_PATCH) == ("", [])


def test_the_note_says_in_a_sentence_what_was_not_used():
    assert set_aside_note([]) == ""
    assert set_aside_note(["conftest.py"]) == ("the patch's conftest.py was not used in grading (tests and test "
                                               "configuration are the task's own)")
    assert set_aside_note(["a.py", "b.py", "c.py"]).startswith("the patch's a.py, b.py and c.py were not used")


def test_a_traditional_diff_without_git_headers_is_cut_per_file_too():
    patch = ("--- a/ledger/money.py\t2024-01-01 00:00:00\n+++ b/ledger/money.py\t2024-01-01 00:00:01\n@@ -1 +1 @@\n-a\n+b\n"
             "--- a/conftest.py\n+++ b/conftest.py\n@@ -1 +1 @@\n-a\n+b\n")
    kept, aside = grading_patch(patch)
    assert aside == ["conftest.py"] and kept == patch.split("--- a/conftest.py")[0]


def test_a_removed_line_that_reads_like_a_header_stays_in_its_hunk():
    tricky = ("diff --git a/ledger/sql.py b/ledger/sql.py\n--- a/ledger/sql.py\n+++ b/ledger/sql.py\n"
              "@@ -1,2 +1,2 @@\n--- old comment\n+++ new comment\n-x\n+y\n")
    assert patch_files(tricky) == [(["ledger/sql.py"], tricky)]


def test_renames_quoted_names_and_binary_files_name_every_path(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "--quiet", cwd=repo)
    (repo / "tests").mkdir()
    (repo / "tests" / "old_helpers.py").write_text("x = 1\n" * 20)
    (repo / "data.bin").write_bytes(b"\0\1\2")
    (repo / "café.py").write_text("a = 1\n")
    git("add", "-A", cwd=repo)
    git("commit", "--quiet", "-m", "base", cwd=repo)
    git("mv", "tests/old_helpers.py", "ledger_helpers.py", cwd=repo)  # a rename out of the tests folder
    (repo / "data.bin").write_bytes(b"\0\1\3")
    (repo / "café.py").write_text("a = 2\n")
    (repo / "my conftest.py").write_text("")
    (repo / "sub dir").mkdir()
    (repo / "sub dir" / "conftest.py").write_text("x = 1\n")
    git("add", "-A", cwd=repo)
    patch = git("diff", "--cached", "-M", "--binary", "HEAD", cwd=repo).stdout
    paths = [sorted(p) for p, _ in patch_files(patch)]
    assert ["ledger_helpers.py", "tests/old_helpers.py"] in paths
    assert ["data.bin"] in paths and ["café.py"] in paths and ["sub dir/conftest.py"] in paths
    kept, aside = grading_patch(patch)
    assert aside == ["ledger_helpers.py", "sub dir/conftest.py", "tests/old_helpers.py"]
    git("reset", "--quiet", "--hard", "HEAD", cwd=repo)
    assert git("apply", "--check", "-", cwd=repo, input=kept, check=False).returncode == 0  # the rest still applies


# --- patches that reach into the test machinery are named (suspect_lines) --------------------------------------
def added(path, code):
    """A patch adding `path` with `code` (as git diff writes a new file)."""
    lines = code.splitlines()
    body = "".join("+" + line + "\n" for line in lines)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}")


@pytest.mark.parametrize("code", [
    "from _pytest.reports import TestReport",
    "import pytest",
    "    from pytest import hookimpl",
    "@pytest.hookimpl(hookwrapper=True)",
    "def pytest_runtest_makereport(item, call):",
    "    report.outcome = 'passed'",
    "import pluggy",
    "sys.modules['calc'] = fake",
    "sys.meta_path.insert(0, Finder())",
    "os._exit(0)",
    "    os.kill(os.getppid(), 9)",
    "atexit.register(rewrite)",
    "sys.exit(0)",
    "raise SystemExit(0)",
    "import builtins; builtins.print = quiet",
    "frame = sys._getframe(3).f_locals",
    "for obj in gc.get_objects():",
    "open(sys.argv[-1].split('--junitxml=')[1], 'w')",
    "exec(base64.b64decode(blob))",
    "m = __import__('sy' + 's')",
    "importlib.import_module('_py' + 'test')",
    "getattr(sys, 'mod' + 'ules')",
    "s = '#'; sys.modules.clear()",
    "table = sys . modules",
    "t = getattr(m, 'mod' + 'ules')",
    "runpy.run_path(os.path.join(here, 'ROUNDING.txt'))",
    "os.execv(sys.executable, sys.orig_argv)",
    "if os.fork() == 0:",
    "os.environ['PYTEST_ADDOPTS'] = '-p mine'",
    "reports = table['_py' + 'test.reports']",
], ids=lambda code: code.strip()[:30])
def test_an_added_line_that_reaches_into_the_test_machinery_is_named_with_its_place(code):
    patch = FIX + added("ledger/report.py", "import os\n\n" + code + "\n")
    assert suspect_lines(patch) == [f"ledger/report.py:3: +{code}"]


@pytest.mark.parametrize("patch", [
    FIX,
    added("tests/test_money.py", "import pytest\n\n\n@pytest.fixture\ndef money():\n    return 1\n"),
    added("conftest.py", "def pytest_runtest_makereport(item, call):\n    pass\n"),  # set aside: never graded
    added("ledger/cli.py", "import sys\n\n\ndef main():\n    sys.exit(run(sys.argv))\n\n\nif __name__ == '__main__':\n"
                           "    sys.exit(main())\n"),  # a command's exit is not an exit at import
    added("ledger/outcomes.py", "def settle(bet):\n    bet.outcome = won(bet)\n    return bet.outcome == 'passed'\n"),
    added("ledger/money.py", "# We never touch sys.modules or builtins here.\nVALUE = 1\n"),
    added("docs/testing.md", "Run the tests before a release; see CONTRIBUTING.\n"),
    added("ledger/config.py", "SETTINGS = {'modules': ['ledger'], 'plugins': []}\n"),
    section("ledger/x.py", old="import _pytest\n", new="x = 1\n"),  # a removed line is the repository's own
], ids=["a plain fix", "a new test using pytest", "a conftest", "a command-line exit", "a domain 'outcome'",
        "a comment", "prose", "ordinary keys", "a removed line"])
def test_ordinary_code_tests_and_prose_are_not_suspect(patch):
    assert suspect_lines(patch) == []


@pytest.mark.parametrize("path", ["ledger/ROUNDING.txt", "docs/forger.md", "ledger/data.json", "Makefile"])
def test_a_file_of_any_name_is_read_for_code_that_runs_when_loaded(path):
    code = "import _pytest.reports"  # runpy.run_path, exec(open(...).read()) run a file whatever its name
    assert suspect_lines(added(path, code + "\n")) == [f"{path}:1: +{code}"]


def test_a_renamed_file_is_read_under_its_new_path():
    patch = ("diff --git a/README.md b/ledger/_notes.py\nsimilarity index 60%\nrename from README.md\n"
             "rename to ledger/_notes.py\nindex 1111111..2222222 100644\n--- a/README.md\n+++ b/ledger/_notes.py\n"
             "@@ -1,2 +1,3 @@\n-# ledger\n+import _pytest.reports\n A small account ledger.\n+_pytest.reports.x = 1\n")
    assert suspect_lines(patch) == ["ledger/_notes.py:1: +import _pytest.reports",
                                    "ledger/_notes.py:3: +_pytest.reports.x = 1"]


def test_line_numbers_follow_the_new_file_across_hunks():
    patch = ("diff --git a/ledger/a.py b/ledger/a.py\n--- a/ledger/a.py\n+++ b/ledger/a.py\n"
             "@@ -10,3 +10,3 @@\n x\n-y\n+import atexit\n z\n@@ -40,2 +40,3 @@\n a\n+b\n+os._exit(1)\n")
    assert suspect_lines(patch) == ["ledger/a.py:11: +import atexit", "ledger/a.py:42: +os._exit(1)"]
    assert suspect_lines(patch, test_patch=section("ledger/a.py")) == []  # the test patch's own file


# --- graded code in git's binary form (a file that is not UTF-8 text travels as base85) is read all the same ----
def binary_patch(tmp_path, files: dict[str, tuple[bytes, bytes]]) -> str:
    """git's own `diff --binary` (every file marked binary) of each path from its old bytes to its new bytes (old
    b"" for a new file)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "--quiet", cwd=repo)
    (repo / ".git" / "info" / "attributes").write_text("* -diff -text\n")
    for path, (old, _) in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(old)
    git("add", "-A", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "--allow-empty", "-m", "base", cwd=repo)
    for path, (_, new) in files.items():
        (repo / path).write_bytes(new)
    git("add", "-A", cwd=repo)
    return git("diff", "--cached", "--binary", "HEAD", cwd=repo).stdout


LATIN1_FORGER = "# -*- coding: latin-1 -*-\n# caf\xe9\nx = 1\nimport _pytest.reports as r\n".encode("latin-1")


@pytest.mark.parametrize("path", ["ledger/_compat.py", "ledger/notes.txt"])
def test_a_new_graded_file_in_binary_literal_form_is_read_as_latin1_with_its_line_numbers(tmp_path, path):
    patch = binary_patch(tmp_path, {path: (b"", LATIN1_FORGER)})
    assert "GIT binary patch" in patch and "\nliteral " in patch
    assert suspect_lines(patch) == [f"{path}:4: +import _pytest.reports as r"]


def test_an_honest_latin1_file_in_binary_form_is_not_suspect_and_a_test_file_is_never_read(tmp_path):
    honest = "# -*- coding: latin-1 -*-\n# caf\xe9 na\xefve\ndef total(xs):\n    return sum(xs)\n".encode("latin-1")
    assert suspect_lines(binary_patch(tmp_path, {"ledger/money.py": (b"", honest),
                                                 "tests/test_money.py": (b"", LATIN1_FORGER)})) == []


def test_a_graded_file_in_binary_delta_form_is_named_since_it_cannot_be_read(tmp_path):
    old = "# -*- coding: latin-1 -*-\n# caf\xe9\n".encode("latin-1") + b"".join(
        f"def f{i}(x):\n    return x + {i}\n".encode() for i in range(200))
    patch = binary_patch(tmp_path, {"ledger/big.py": (old, old + b"import _pytest\n"),
                                    "tests/test_big.py": (old, old + b"x = 1\n")})
    assert "\ndelta " in patch
    assert suspect_lines(patch) == ["ledger/big.py:1: graded code in git's binary delta form, which the check "
                                    "cannot read"]


def test_a_binary_hunk_that_does_not_decode_is_named(tmp_path):
    patch = binary_patch(tmp_path, {"ledger/_compat.py": (b"", LATIN1_FORGER)})
    broken = patch.replace("\nliteral ", "\nliteral 9", 1)  # a size the data does not have
    assert len(suspect_lines(broken)) == 1 and "does not decode" in suspect_lines(broken)[0]


def test_a_carriage_return_inside_an_added_line_ends_a_line_as_python_reads_it():
    # Python's tokenizer ends a line at a lone CR: `# note\rimport _pytest` is a comment, then an import
    patch = ("diff --git a/ledger/a.py b/ledger/a.py\nnew file mode 100644\n--- /dev/null\n+++ b/ledger/a.py\n"
             "@@ -0,0 +1,2 @@\n+# note\rimport _pytest.reports\n+x = 1\n")
    assert suspect_lines(patch) == ["ledger/a.py:1: +# note\rimport _pytest.reports"]


@pytest.mark.parametrize("code", [
    "import _\uff50\uff59\uff54\uff45\uff53\uff54.reports as r",  # fullwidth letters: Python reads names NFKC
    "\uff53\uff59\uff53.\uff4d\uff4f\uff44\uff55\uff4c\uff45\uff53['x'] = None",
    "# -*- coding: utf-7 -*-",  # an encoding that reads ASCII as other text: `+AF8-pytest` is `_pytest`
    "# vim: set fileencoding=cp037 :",
])
def test_names_python_normalizes_and_encodings_that_reread_ascii_are_named(code):
    assert suspect_lines(added("ledger/a.py", code + "\n")) == [f"ledger/a.py:1: +{code}"]


@pytest.mark.parametrize("cookie", ["# -*- coding: latin-1 -*-", "# coding=utf-8", "# vim: set fileencoding=cp1252 :",
                                    "# -*- coding: shift_jis -*-"])
def test_coding_cookies_of_encodings_that_read_ascii_as_ascii_are_not_suspect(cookie):
    assert suspect_lines(added("ledger/a.py", cookie + "\nx = 'caf\u00e9'\n")) == []


def test_a_suspect_line_is_kept_bounded_however_long_the_file_line_is():
    code = "import _pytest.reports; x = '" + "a" * 100_000 + "'"
    (line,) = suspect_lines(added("ledger/a.py", code + "\n"))
    assert line.startswith("ledger/a.py:1: +import _pytest.reports") and len(line) < 2100
    assert line.endswith(f"[... {len(code) + 1 - 2000} more characters ...]")
