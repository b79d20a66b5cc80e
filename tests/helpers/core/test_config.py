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


def default_model_ids() -> dict[str, str]:
    """Every default model id: the roles' (helpers/core/config.py) and each registered agent's."""
    from helpers.app.session import default_agent_model
    from helpers.core.registry import registered_agents

    ids = {"AGENT_MODEL": config.AGENT_MODEL, "JUDGE_MODEL": config.JUDGE_MODEL, "OPTIMIZER_MODEL": config.OPTIMIZER_MODEL}
    return {**ids, **{f"agent {name}": default_agent_model(name) for name in registered_agents()}}


def test_every_default_model_id_has_a_price_in_the_maintained_table():
    # genai-prices keeps the providers' current list prices: a default it drops (or never had) fails here
    from genai_prices import Usage, calc_price

    unpriced = []
    for where, model in default_model_ids().items():
        try:
            calc_price(Usage(input_tokens=1000, output_tokens=1000), model_ref=model)
        except LookupError:
            unpriced.append(f"{where}: {model!r}")
        assert model not in config.PRICE_OVERRIDES, f"{where}: {model!r} is priced by our override, not the table"
    assert not unpriced, f"Not in genai-prices' table (retired or misspelled?): {unpriced}"


def test_no_default_model_id_is_past_the_shutdown_its_provider_announced():
    from datetime import date

    shut = {where: model for where, model in default_model_ids().items()
            if model in config.ANNOUNCED_SHUTDOWNS and date.fromisoformat(config.ANNOUNCED_SHUTDOWNS[model]) <= date.today()}
    assert not shut, f"Shut down by their providers: {shut}; set current ids in helpers/core/config.py or the agent package"


def test_claude_code_no_longer_defaults_to_the_sonnet_anthropic_retires_on_2026_11_30():
    from helpers.app.session import default_agent_model

    assert config.ANNOUNCED_SHUTDOWNS["claude-sonnet-4-5"] == "2026-11-30"
    assert default_agent_model("claude-code") not in config.ANNOUNCED_SHUTDOWNS
