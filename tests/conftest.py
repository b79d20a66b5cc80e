"""Shared fixtures: one real local Phoenix server for the whole test session, started only when asked for."""

import pytest

from helpers.tracking.phoenix_server import PhoenixServer

pytest_plugins = ["time_budget", "agent_runs", "longest_first"]  # a test over its time budget fails, named
# (tests/time_budget.py); the real agent runs the agent contract and the agents' own tests share (tests/agent_runs.py);
# the workers take the longest work first (tests/longest_first.py)


@pytest.fixture(scope="session")
def phoenix_server(tmp_path_factory):
    """A real Phoenix (SQLite in a temporary folder, loopback, free ports), stopped after the session."""
    server = PhoenixServer(working_dir=tmp_path_factory.mktemp("phoenix"), start_timeout_s=180).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def phoenix_url(phoenix_server):
    return phoenix_server.url
