"""The rules a run uses, parsed once where their text enters and rendered once where it is written.

A RulesFile is the exact text (a bare ruleset, or a team's whole rules file with the learned rules in its
fenced section: helpers.rules.ruleset.split_fenced), the learned rules parsed from it, and the team's text
around them. Its text is kept as given, byte for byte, so what is written and the records' ruleset hash
(helpers.store.records.ruleset_sha) stay what they were; a new version is made by `with_rules`, which renders
the new rules into the same team's text. Entry points (the store's load, the start rules, the optimizer's
public call, an imported file) parse with `RulesFile.parse`; the engine, learn and family layers pass the value.
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers.rules.ruleset import Ruleset, parse_ruleset, render_ruleset, split_fenced


@dataclass(frozen=True)
class RulesFile:
    """text: the rules file as given; rules: its learned rules (the fenced section's when it has one);
    team: (the team's text up to and including the start fence line, the team's text from the end fence line
    on) when a team's file wraps the rules, else None. Build it with `parse`, not by hand."""

    text: str
    rules: Ruleset
    team: tuple[str, str] | None = None

    @classmethod
    def parse(cls, text: str | RulesFile | None) -> RulesFile:
        """The rules file of `text` (a RulesFile comes back as it is). Raises ValueError, naming the line, for
        rules that cannot be read (helpers.rules.ruleset.parse_ruleset) or a half or repeated fence."""
        if isinstance(text, RulesFile):
            return text
        text = text or ""
        fenced = split_fenced(text)
        if fenced is None:
            return cls(text, parse_ruleset(text))
        before, learned, after = fenced
        return cls(text, parse_ruleset(learned), (before, after))

    @property
    def learned(self) -> str:
        """The learned rules' text as written: the fenced section's content, or the whole text."""
        if self.team is None:
            return self.text
        before, after = self.team
        return self.text[len(before) : len(self.text) - len(after)]

    def with_rules(self, rules: Ruleset) -> RulesFile:
        """These rules, rendered, in place of the learned ones; the team's text kept byte for byte."""
        rendered = render_ruleset(rules)
        text = rendered if self.team is None else f"{self.team[0]}{rendered}{self.team[1]}"
        return RulesFile(text, rules, self.team)

    def stats(self) -> dict[str, int]:
        """{"rules": number of learned rules, "tokens": tokens of the whole text}."""
        from helpers.core.tokens import count_tokens

        return {"rules": len(self.rules.rules), "tokens": count_tokens(self.text)}


__all__ = ["RulesFile"]
