"""The order `make test`'s two workers take the suite's work in: the longest first, so that no long chain starts late
and runs on alone while the other worker idles (the suite's wall time is its critical path, not its sum).

`--dist loadgroup` hands out work units (an xdist group's tests together, any other test alone) in a queue; left to
itself xdist orders that queue by the number of tests in a unit, which put the quickstart's chain (its run, its
rerun, then 03 on it: minutes, six tests) behind every larger group, so it started minutes in and ended last. Here
the queue goes: the groups named in FIRST (longest first), the other groups as xdist would (most tests first), then
the tests marked `slow` (a notebook, a real agent CLI, Phoenix), then the rest, each in collection order.
A module whose tests share a module-scoped fixture (one expensive run its tests all ask questions of) is a group
of its own unless it names one: spread over two workers, each worker would pay for that run (pytest's module
scope is per process), which cost the suite a 23-second run twice and a 10-second one twice.
Loaded by tests/conftest.py (`pytest_plugins`)."""

import pytest

FIRST = ("quickstart",)  # the quickstart fixture, its rerun and 03 on it: one worker, one after another, the longest


def group_of(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    return (mark.args[0] if mark.args else mark.kwargs.get("name")) if mark else None


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # xdist's own order by size would undo ours
        config.option.loadscopereorder = False


def shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return bool(info) and any(defs[-1].scope == "module" for defs in info.name2fixturedefs.values() if defs)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the marks into the work units
def pytest_collection_modifyitems(items):
    for item in items:
        if group_of(item) is None and shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(f"module {item.nodeid.split('::')[0]}"))
    sizes: dict[str, int] = {}
    for item in items:
        group = group_of(item)
        if group:
            sizes[group] = sizes.get(group, 0) + 1

    def rank(item: pytest.Item) -> tuple[int, int]:
        group = group_of(item)
        if group in FIRST:
            return (0, FIRST.index(group))
        if group:
            return (1, -sizes[group])
        return (2, 0) if item.get_closest_marker("slow") else (3, 0)

    items.sort(key=rank)  # stable: collection order within a rank
