"""Fixtures the library's tests share."""

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
