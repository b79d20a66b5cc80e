"""Settings: keys read from the environment or `.env`, which is kept readable by its owner only."""

from helpers.core import config


def test_a_dot_env_holding_keys_is_made_readable_by_its_owner_only(tmp_path, monkeypatch):
    import stat

    env_file = tmp_path / ".env"
    env_file.write_text("SOME_TEST_SETTING=value\n")
    env_file.chmod(0o644)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SOME_TEST_SETTING", raising=False)
    assert config.read_env("SOME_TEST_SETTING") == "value"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
