"""What the gateway forwards is its own serialisation of what it checked: the same JSON the client sent, exactly,
whichever parser read it; a body no parser here can read is refused, never an error of the gateway's."""

import json

from helpers.llm.gateway import Upstream
from helpers.llm.gateway.checks import checked_call
from helpers.llm.gateway.policy import Refusal

UPSTREAM = Upstream("http://127.0.0.1:9/v1", "test-KEY-checks", "openai-compatible")
PATH = "/u/agent/v1/chat/completions"


def check(body: bytes):
    return checked_call("POST", PATH, PATH, "agent", UPSTREAM, body, cap=1000, models=None, budget_usd=None)


def test_an_integer_past_64_bits_goes_upstream_exactly_as_sent():
    """Red team, stop 56: orjson read it as a float, and the gateway forwarded 1.2345678901234568e+29."""
    for seed in (123456789012345678901234567890, 2**64, -(2**63) - 1, 9223372036854775807):
        body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": f"hi {seed}"}], "seed": seed}
        checked = check(json.dumps(body).encode())
        assert not isinstance(checked, Refusal), checked
        assert json.loads(checked[4])["seed"] == seed and isinstance(json.loads(checked[4])["seed"], int)


def test_a_body_nested_past_the_parsers_depth_is_refused_as_not_json():
    deep = b'{"model": "gpt-4.1", "metadata": ' + b"[" * 1100 + b"]" * 1100 + b"}"
    checked = check(deep)
    assert isinstance(checked, Refusal) and checked.status == 400, checked
