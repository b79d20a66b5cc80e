"""The setup check reports what is here and how to fix what is missing, and never raises."""

from helpers.app.doctor import check_environment


def test_the_environment_check_finds_the_installed_parts_and_explains_the_rest(monkeypatch):
    monkeypatch.delenv("PHOENIX_COLLECTOR_ENDPOINT", raising=False)
    checks = check_environment().set_index("component")
    for part in ("Python", "Python packages", "Node.js", "agent: cline", "git"):
        assert checks.loc[part, "ok"], checks.loc[part, "detail"]
    assert "3.0.65" in checks.loc["agent: cline", "detail"]
    assert checks.loc[~checks.ok, "fix"].map(bool).all(), "every failing check says how to fix it"
    if not checks.loc["SWE-bench evaluation", "ok"]:
        assert "house" in checks.loc["SWE-bench evaluation", "fix"]


def test_an_unreachable_phoenix_is_reported_not_raised():
    checks = check_environment("http://127.0.0.1:9").set_index("component")
    assert not checks.loc["Phoenix", "ok"] and "unset it" in checks.loc["Phoenix", "fix"]
