"""The real-model tier (`make test-real`): a real model server on loopback, built and served offline.

The server is built and its model fetched once the tests are collected and before the first one starts
(`make test-real` does it even earlier, as a step of its own): on a fresh clone the build takes about six
minutes, which inside the first test would count against that test's timeout and cut it short."""

import time

import pytest

from helpers.stand_ins import local_model as recipe


def needs_local_model(items) -> bool:
    """Whether any test about to run uses the model server."""
    return any("local_model" in getattr(item, "fixturenames", ()) for item in items)


def pytest_collection_finish(session):
    """Build llama-server and fetch the model before any test starts, outside every test's timeout."""
    if needs_local_model(session.items) and not session.config.option.collectonly:
        started = time.monotonic()
        binary, model = recipe.server_binary(), recipe.model_path()
        print(f"\nllama-server ready ({time.monotonic() - started:.0f} s): {binary.name}, model {model.name}", flush=True)


@pytest.fixture(scope="session")
def local_model():
    """llama-server with SmolLM2-135M-Instruct (built before the first test, into .cache/llama/), stopped at the end."""
    with recipe.LocalModelServer() as server:
        yield server
