"""The sandbox policy is one type, checked once where it comes in: a bad one stops before any work."""

import pytest

from helpers.core.registry import make_agent
from helpers.families.coding.evaluation import LocalEvaluator
from helpers.isolation.sandbox import SANDBOX_POLICIES, sandbox_policy

BAD = ["Required", "", "none", "if_available", "true", True, 0, ["required"]]


def test_each_policy_comes_back_as_itself():
    assert SANDBOX_POLICIES == ("required", "if-available", None)
    for policy in SANDBOX_POLICIES:
        assert sandbox_policy(policy) is policy


@pytest.mark.parametrize("value", BAD)
def test_anything_else_is_one_error_naming_the_choices(value):
    with pytest.raises(ValueError, match="'required', 'if-available' or None"):
        sandbox_policy(value)


@pytest.mark.parametrize("value", ["Required", True])
def test_an_agent_and_an_evaluator_refuse_a_bad_policy_when_made(value):
    with pytest.raises(ValueError, match="sandbox must be"):
        make_agent("cline", sandbox=value)
    with pytest.raises(ValueError, match="sandbox must be"):
        LocalEvaluator(sandbox=value)
    assert make_agent("cline", sandbox="if-available").sandbox == "if-available"
