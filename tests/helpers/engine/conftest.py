"""Fixtures the engine's tests share (a module with a `house` or `results` of its own uses its own)."""

import pytest


@pytest.fixture(scope="module")
def house():
    """The house suite's tasks (built once per machine and source, then read)."""
    from helpers.families.coding.tasks import load_house_suite

    return load_house_suite()


@pytest.fixture
def results(tmp_path):
    return tmp_path / "results"
