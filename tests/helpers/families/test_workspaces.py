"""The learned section of a rules file: the team's text comes back byte for byte, whatever it holds."""

import pytest

from helpers.core.rules import SECTION_END, SECTION_START, insert_section, remove_section

TEAM_TEXTS = ["", "\n", "one line", "one line\n", "a\r\nb\r\n", "ends with blank lines\n\n\n", "ünïcödé\n",
              f"quotes our markers: {SECTION_START} and {SECTION_END} inline\n"]


@pytest.mark.parametrize("team", TEAM_TEXTS)
@pytest.mark.parametrize("rules", ["- [R1] One rule.", "- [R1] One.\n- [R2] Two.\n\n"])
def test_removing_the_learned_section_gives_the_teams_text_back_exactly(team, rules):
    combined = insert_section(team, rules)
    assert combined.startswith(team) and rules.rstrip("\n") in combined
    assert remove_section(combined) == team


def test_an_edit_after_the_section_is_kept():
    combined = insert_section("Team.\n", "- [R1] Rule.") + "Added by the agent.\n"
    assert remove_section(combined) == "Team.\nAdded by the agent.\n"
