"""The real-model tier builds its server before any test starts, so a fresh clone passes it the first time.

Checked without building anything: the Makefile's order of steps, and the collection hook with the build
replaced by a recorder. These are not marked `real`: they run with the ordinary tests."""

import importlib.util
import subprocess
from types import SimpleNamespace

from helpers.core.config import REPO_ROOT
from helpers.stand_ins import local_model as recipe


def load_conftest():
    spec = importlib.util.spec_from_file_location("real_conftest", REPO_ROOT / "tests/real/conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_test_real_builds_and_fetches_the_model_server_before_running_pytest():
    steps = subprocess.run(["make", "-n", "test-real"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    lines = steps.splitlines()
    build = next(i for i, line in enumerate(lines) if "-m helpers.stand_ins.local_model build" in line)
    tests = next(i for i, line in enumerate(lines) if "-m pytest -m real tests/real" in line)
    assert build < tests


def test_the_build_happens_once_the_tests_are_collected_before_the_first_starts_and_only_when_one_needs_it(
        monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(recipe, "server_binary", lambda: calls.append("server") or REPO_ROOT / "llama-server")
    monkeypatch.setattr(recipe, "model_path", lambda: calls.append("model") or REPO_ROOT / "model.gguf")
    conftest = load_conftest()
    real = SimpleNamespace(fixturenames=["local_model", "isolated"])
    other = SimpleNamespace(fixturenames=["tmp_path"])

    def collected(*items, collect_only=False):
        return SimpleNamespace(items=list(items), config=SimpleNamespace(option=SimpleNamespace(collectonly=collect_only)))

    conftest.pytest_collection_finish(collected(other))
    assert calls == []  # nothing needs the server (`make test` deselects the real tests): no build
    conftest.pytest_collection_finish(collected(other, real, collect_only=True))
    assert calls == []  # --collect-only runs nothing
    conftest.pytest_collection_finish(collected(other, real))
    assert calls == ["server", "model"] and "llama-server ready" in capsys.readouterr().out
