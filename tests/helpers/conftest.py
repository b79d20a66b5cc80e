"""Fixtures the library's tests share."""

import os
import subprocess
import tempfile

import pytest


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Results, rule sets and caches in this test's own folders (answers start from an empty cache), with the
    house suite's build shared: rebuilding it takes seconds, dry runs read it, and nothing a test does changes it."""
    from helpers.core import config
    from helpers.families.coding.house_suite import build_house_repos

    build_house_repos()  # the shared build, made once
    shared = config.cache_root() / "house_suite"
    for name, sub in (("PL_RESULTS_DIR", "results"), ("PL_RULESETS_DIR", "rulesets"), ("PL_CACHE_DIR", "cache")):
        monkeypatch.setenv(name, str(tmp_path / sub))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "house_suite").symlink_to(shared.resolve(), target_is_directory=True)
    return tmp_path


@pytest.fixture
def memory_scratch(monkeypatch):
    """Scratch folders on a memory file system where there is one: 1,100 folders cost a disk write each here."""
    if not os.access("/dev/shm", os.W_OK):
        yield
        return
    folder = tempfile.mkdtemp(prefix="pl-scratch-", dir="/dev/shm")
    monkeypatch.setattr(tempfile, "tempdir", folder)
    yield
    subprocess.run(["rm", "-rf", folder], check=False)


@pytest.fixture
def no_keys(monkeypatch, tmp_path):
    """No provider key or base URL in the environment, and no .env to find: a session opened now is the dry run
    unless the test sets its own."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GEMINI_API_KEY",
                 "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("helpers.core.config.REPO_ROOT", tmp_path)  # no .env to find
