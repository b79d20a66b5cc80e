"""An agent CLI that speaks only an OpenAI API gets OpenAI's server or OPENAI_BASE_URL's, and never another
provider's key: a Claude or Gemini id is one error saying what to set."""

import pytest

from helpers.agents.base import openai_provider, openai_upstream
from helpers.core import config

SPEAKS, ENDPOINT = "Toy speaks only the OpenAI Responses API", "/responses"


def test_an_openai_model_goes_to_openai_with_openais_key(keys):
    url, key = openai_provider("gpt-5", None, None, SPEAKS, ENDPOINT)
    assert (url, key) == (config.OPENAI_URL, "openai-key")
    assert openai_upstream(url, key) == (None, "openai-key", "openai")


@pytest.mark.parametrize("model, owner", [("claude-sonnet-5-5", "Claude model served by Anthropic"),
                                          ("gemini-3-flash-preview", "Gemini model served by Google")])
def test_a_claude_or_gemini_model_is_one_error_naming_what_to_set_and_no_key_is_handed_out(keys, model, owner):
    with pytest.raises(ValueError) as error:
        openai_provider(model, None, None, SPEAKS, ENDPOINT)
    assert str(error.value).startswith(f"{SPEAKS}, and {model!r} is a {owner}.")
    assert "OPENAI_BASE_URL" in str(error.value) and ENDPOINT in str(error.value)


def test_any_model_on_an_openai_base_url_goes_there_with_its_key(keys, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    url, key = openai_provider("gemini-3-flash-preview", None, None, SPEAKS, ENDPOINT)
    assert openai_upstream(url, key) == ("http://127.0.0.1:9/v1", "openai-key", "openai-compatible")
