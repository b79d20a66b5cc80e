"""A time budget per test for `make test`: a test that grows past it fails, named, before it doubles the suite.

Each phase of a test (its setup, its call, its teardown) is measured as pytest measures it for `--durations`;
a phase that passed but took longer than `--time-budget` seconds (BUDGET_S unless given; 0 turns it off) is
turned into a failure of that test, saying how long it took and what the budget is. It runs where the test ran
(an xdist worker too), so the failure reaches the controller like any other. A session fixture is charged to
the first test that uses it, as `--durations` shows it: a shared setup that grows past the budget is named
too. Tests marked `real` (the real-model tier, a real model at a few tokens a second) are not budgeted.
On a machine busier than its cores (other work beside the suite's own workers), the budget stretches by
the load per core at the end of the phase, so a loaded machine slows a test without failing it; on a
quiet one the budget is as given. This budgets the suite's own tests, not the product: no product
behaviour is timed here.
Loaded by tests/conftest.py (`pytest_plugins`)."""

import os

import pytest

BUDGET_S = 180.0  # generous: a test this long is over a third of a worker's share of the 8-minute suite


def pytest_addoption(parser):
    parser.addoption("--time-budget", type=float, default=BUDGET_S, metavar="SECONDS",
                     help=f"fail a test whose setup, call or teardown takes longer (default {BUDGET_S:.0f}; 0: off)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    budget = item.config.getoption("time_budget")
    if budget and report.passed and report.duration > budget and not item.get_closest_marker("real"):
        allowed = budget * load_per_core()
        if report.duration > allowed:
            report.outcome = "failed"
            report.longrepr = (f"{item.nodeid}: its {report.when} took {report.duration:.1f} s, over the suite's "
                               f"time budget of {budget:g} s per test phase ({allowed:.3g} s at this machine's load; "
                               "tests/time_budget.py): make it share a run with other tests or ask less of it, "
                               "rather than raise the budget")
    return report


def load_per_core() -> float:
    """The last minute's load average per core, at least 1: how much a busy machine stretches the budget."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
