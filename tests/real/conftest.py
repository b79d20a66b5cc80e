"""The real-model tier (`make test-real`): a real model server on loopback, built and served offline."""

import pytest

from helpers.testing.local_model import LocalModelServer


@pytest.fixture(scope="session")
def local_model():
    """llama-server with SmolLM2-135M-Instruct (built on first use into .cache/llama/), stopped at the end."""
    with LocalModelServer() as server:
        yield server
