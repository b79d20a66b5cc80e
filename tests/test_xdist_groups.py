"""`make test` runs the suite on 2 workers with `--dist loadgroup`. Tests that share something machine-wide (the Ray
cluster, an agent CLI's check that none of its processes is left anywhere) carry one `xdist_group` mark so they run
on one worker, one after another. pytest 9.2 broke that without a word (pytest-xdist issue #1386: the group no
longer reaches the scheduler, so every test goes its own way), which is why pytest is pinned at 9.1.1; this test
fails on the next such break instead of leaving it to flaky tests."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path


def test_the_tests_of_one_xdist_group_run_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.xdist_group("one")
        @pytest.mark.parametrize("i", range(6))
        def test_grouped(i):
            pass

        @pytest.mark.parametrize("i", range(6))
        def test_free(i):
            pass
    """))
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider",
                          "test_grouped.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:]
    grouped = re.findall(r"\[(gw\d+)\].*PASSED test_grouped\.py::test_grouped", run.stdout)
    free = re.findall(r"\[(gw\d+)\].*PASSED test_grouped\.py::test_free", run.stdout)
    assert len(grouped) == 6 and len(set(grouped)) == 1, run.stdout  # one worker for the whole group
    assert len(free) == 6  # (the rest may go anywhere)



def test_the_workers_take_the_quickstarts_chain_first_then_the_groups_then_slow_tests_before_quick_ones(tmp_path):
    """tests/longest_first.py: the quickstart's group (the suite's longest chain) is the first work handed out, ahead of
    a group with more tests that xdist alone would hand out first; then the other groups; slow tests before quick ones.
    One worker shows the queue's order as it is handed out."""
    (tmp_path / "test_order.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.parametrize("i", range(2))
        def test_quick(i):
            pass

        @pytest.mark.slow
        def test_slow():
            pass

        @pytest.mark.xdist_group("big")
        @pytest.mark.parametrize("i", range(5))
        def test_big(i):
            pass

        @pytest.mark.xdist_group("quickstart")
        @pytest.mark.parametrize("i", range(3))
        def test_chain(i):
            pass
    """))
    tests = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "1", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider",
                          "-p", "longest_first", "-W", "ignore::pytest.PytestUnknownMarkWarning", "test_order.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout[-2000:]
    ran = re.findall(r"\[gw0\].*PASSED test_order\.py::(test_\w+)", run.stdout)
    assert ran == ["test_chain"] * 3 + ["test_big"] * 5 + ["test_slow"] + ["test_quick"] * 2, run.stdout[-2000:]


def test_a_modules_tests_that_share_a_module_scoped_fixture_run_on_one_worker_so_it_is_made_once(tmp_path):
    """tests/longest_first.py groups them (unless they name a group of their own); a module-scoped fixture is per
    worker, so spread over two workers the one expensive run would be made twice. A module with only cheaper
    scopes stays free to spread."""
    (tmp_path / "test_shared.py").write_text(textwrap.dedent("""
        import os
        import pytest

        @pytest.fixture(scope="module")
        def shared_run(tmp_path_factory):
            (tmp_path_factory.getbasetemp().parent / f"made-{os.getpid()}").write_text("")
            return os.getpid()

        @pytest.mark.parametrize("i", range(8))
        def test_asks(shared_run, i):
            assert shared_run == os.getpid()
    """))
    (tmp_path / "test_plain.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.fixture
        def each():
            return 1

        @pytest.mark.parametrize("i", range(8))
        def test_free(each, i):
            pass
    """))
    tests = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider",
                          "-p", "longest_first", f"--basetemp={tmp_path / 'base'}", "test_shared.py", "test_plain.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout[-2000:]
    shared = re.findall(r"\[(gw\d+)\].*PASSED test_shared\.py::test_asks", run.stdout)
    assert len(shared) == 8 and len(set(shared)) == 1, run.stdout  # one worker asks all eight
    assert len(list((tmp_path / "base").glob("made-*"))) == 1  # and the run was made once
    assert len(re.findall(r"PASSED test_plain\.py::test_free", run.stdout)) == 8
