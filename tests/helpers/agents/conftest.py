"""Fixtures the agents layer's tests share."""

import pytest


@pytest.fixture
def keys(monkeypatch, tmp_path):
    """A key for each provider in the environment, no base URL, and no .env to find."""
    for name in ("OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-key")
    monkeypatch.setenv("GEMINI_API_KEY", "google-key")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("helpers.core.config.REPO_ROOT", tmp_path)  # no .env to find
