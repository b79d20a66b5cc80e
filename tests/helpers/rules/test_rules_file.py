"""A rules file is parsed once and rendered once: its text comes back byte for byte, with and without a team's
fenced section, and a new version changes only the learned section."""

import random

import pytest

from helpers.rules.ruleset import FENCE_END, FENCE_START, Rule, Ruleset, parse_ruleset, render_ruleset, split_fenced
from helpers.rules.rules_file import RulesFile

WORDS = ["Run", "the", "tests", "CHANGELOG.md", "- [R9]", "# Heading", "`code`", "ünïcode", "  indented", "*", "1.",
         FENCE_START, FENCE_END, "<!-- prompt-learning ruleset: next id R4 -->", "\t", "\r", ""]


def random_rules(rng: random.Random) -> Ruleset:
    rules = [Rule(f"R{n}", "\n".join(" ".join(rng.choices(WORDS, k=rng.randint(1, 6))) for _ in range(rng.randint(1, 3))))
             for n in rng.sample(range(1, 40), rng.randint(0, 5))]
    kept = [rule for rule in rules if render_ruleset(Ruleset([rule], 1)).count("\n") > 1]  # a rule with text left
    return Ruleset(kept, rng.randint(1, 45))


def random_team_text(rng: random.Random) -> str:
    lines = ["# Team rules", "", "Keep functions short.", "- a team bullet", "```", "code", "```", "---",
             "title: x", "  indented prose", "ünïcode", "\t"]
    return "".join(rng.choice(lines) + rng.choice(["\n", "\r\n", ""]) for _ in range(rng.randint(0, 8)))


def random_rules_file(rng: random.Random, rules: Ruleset) -> str:
    learned = render_ruleset(rules)
    if rng.random() < 0.5:
        return learned
    before, after = random_team_text(rng), random_team_text(rng)
    before = before if not before or before.endswith("\n") else before + "\n"
    return f"{before}{FENCE_START}{rng.choice(['', '  '])}\n{learned}{FENCE_END}\n{after}"


@pytest.mark.parametrize("seed", range(300))
def test_a_rules_file_with_or_without_a_team_section_parses_to_its_rules_and_renders_back_byte_for_byte(seed):
    rng = random.Random(seed)
    rules = random_rules(rng)
    text = random_rules_file(rng, rules)
    parsed = RulesFile.parse(text)
    assert parsed.text == text and RulesFile.parse(parsed) is parsed
    assert render_ruleset(parsed.rules) == render_ruleset(rules)  # the learned rules, whatever their texts say
    fenced = split_fenced(text)
    assert parsed.team == (None if fenced is None else (fenced[0], fenced[2]))
    assert parsed.learned == (text if fenced is None else fenced[1])
    assert RulesFile.parse(parsed.with_rules(parsed.rules).text) == parsed.with_rules(parsed.rules)
    new = random_rules(rng)
    changed = parsed.with_rules(new)
    assert changed.rules == new and changed.team == parsed.team
    assert RulesFile.parse(changed.text).team == parsed.team  # the team's text kept byte for byte around the rules
    assert render_ruleset(RulesFile.parse(changed.text).rules) == render_ruleset(new)
    assert changed.learned == render_ruleset(new)


def test_a_hand_written_file_keeps_its_own_text_until_its_rules_change():
    text = "# Style\n* Use tabs\n\nWrite docstrings.\n"
    parsed = RulesFile.parse(text)
    assert parsed.text == text and parsed.team is None and parsed.rules == parse_ruleset(text)
    assert [rule.text for rule in parsed.rules.rules] == ["Style: Use tabs", "Style: Write docstrings."]
    assert parsed.stats()["rules"] == 2 and parsed.stats()["tokens"] > 0
    assert parsed.with_rules(parsed.rules).text == render_ruleset(parsed.rules)  # rendered once, when it changes


@pytest.mark.parametrize("text", [None, "", "  \n"])
def test_no_text_is_no_rules(text):
    parsed = RulesFile.parse(text)
    assert parsed.rules == Ruleset() and parsed.team is None and parsed.text == (text or "")


@pytest.mark.parametrize("text, says", [
    ("- [R1] a\nstray line\n", "line 2 belongs to no rule"),
    (f"{FENCE_START}\n- [R1] a\n", "exactly one line"),
    (f"x\n{FENCE_START}\n- [R1] a\n- [R1] b\n{FENCE_END}\n", "R1 appears more than once"),
])
def test_rules_that_cannot_be_read_are_one_clear_error_where_the_text_enters(text, says):
    with pytest.raises(ValueError, match=says):
        RulesFile.parse(text)
