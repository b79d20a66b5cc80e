"""Who may steer the rules, and what in a proposal needs a person's eyes: the one trust policy of
continual mode.

Text from a pull request or a CI log is written by whoever opened the pull request, so it is data, never
instructions. The policy (documented in docs/continual.md):
- GitHub comments and reviews count when their author is a MEMBER, OWNER or COLLABORATOR of the
  repository (GitHub's own `author_association`), or on the allow-list of logins, or a CODEOWNER of the
  file they comment on; bots (GitHub's type "Bot", a "[bot]" login, or a bot-like name) count only
  when allow-listed. Everything else is kept in the inbox as untrusted, shown, and reaches the optimizer
  only when a reviewer promotes it (Inbox.promote).
- JUnit reports, notes and Phoenix annotations come through the team's own channels (its CI, the person
  running the inbox, its Phoenix) and count; their text is still quoted as data.
- Every proposal's edits are checked for what an injected instruction looks like (a command that fetches
  and runs code, a link, a secret sent, shown or copied into the repository, tests weakened, repository text
  obeyed, an order to ignore instructions: helpers.rules.planted, the same floor the batch optimizer refuses
  edits with) and, when the optimizer has a rule_check, by meaning: such an edit is flagged, and a flagged
  proposal is never auto-approved. Build the optimizer with planted="flag" so such edits reach the proposal, for a
  person to see; with the default it refuses them before they do.

    policy = TrustPolicy(logins=("release-bot",), bots=("release-bot",))
    policy = TrustPolicy.with_codeowners(".github/CODEOWNERS")
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from helpers.rules.planted import planted_reasons

TRUSTED_ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR")
TEAM_CHANNELS = ("junit", "note", "phoenix")  # sources with no outside author
# Bot-like logins GitHub does not mark as bots (a "User" account run by automation).
BOT_NAME = re.compile(
    r"\[bot\]$|[-_.]bot$|^bot[-_.]|^(dependabot|renovate|github-actions|codecov|sonarcloud|snyk|"
    r"mergify|greenkeeper|imgbot|allcontributors|netlify|vercel|coderabbit(ai)?|copilot)\b",
    re.I,
)


@dataclass(frozen=True)
class TrustPolicy:
    """Whose feedback steers the rules (see the module docstring). Logins compare case-insensitively.

    associations: GitHub author_association values that count. logins: authors who count whatever their
    association. bots: bot logins allowed to steer (a bot counts only when listed here). codeowners:
    (pattern, owners) pairs as a CODEOWNERS file has them (the last matching pattern decides).
    team_channels: sources whose feedback counts without an author check.
    """

    associations: tuple[str, ...] = TRUSTED_ASSOCIATIONS
    logins: tuple[str, ...] = ()
    bots: tuple[str, ...] = ()
    codeowners: tuple[tuple[str, tuple[str, ...]], ...] = ()
    team_channels: tuple[str, ...] = TEAM_CHANNELS

    @classmethod
    def with_codeowners(cls, path: Path | str, **settings: Any) -> "TrustPolicy":
        """A policy that also trusts the CODEOWNERS (users, not teams) of the file a comment is on."""
        return replace(cls(**settings), codeowners=parse_codeowners(Path(path).read_text(encoding="utf-8")))

    def decide(self, record: Any) -> tuple[bool, str]:
        """(trusted, why) for a Feedback record."""
        if record.source in self.team_channels:
            return True, f"{record.source}: the team's own channel"
        login = str(record.author or "").lower()
        if is_bot(record):
            if login in {b.lower() for b in self.bots}:
                return True, f"bot {record.author} is allow-listed"
            return False, f"{record.author or 'the author'} is a bot (not on the policy's bots list)"
        if login and login in {name.lower() for name in self.logins}:
            return True, f"{record.author} is on the policy's allow-list"
        association = str(getattr(record, "association", "") or "").upper()
        if association in self.associations:
            return True, f"{record.author} is a {association.lower()} of the repository"
        path = str(record.where or "").rsplit(":", 1)[0]
        if login and path and login in {o.lstrip("@").lower() for o in owners_of(path, self.codeowners)}:
            return True, f"{record.author} is a code owner of {path}"
        return False, (
            f"{record.author or 'the author'} is {association or 'of unknown association'} here: not a "
            f"member, owner or collaborator, not allow-listed, not a code owner of the file"
        )


def is_bot(record: Any) -> bool:
    """A bot by GitHub's account type, a "[bot]" login, or a bot-like name (renovate-bot, dependabot, ...)."""
    return str(getattr(record, "author_type", "") or "") == "Bot" or bool(BOT_NAME.search(str(record.author or "")))


def flags_of(text: str, edit: Mapping[str, Any] | None = None) -> list[str]:
    """What in `text` looks like an injected instruction: helpers.rules.planted.planted_reasons, the floor the
    batch optimizer refuses edits with, and the `meaning_flags` the optimizer's check by meaning put on `edit`
    (helpers.learn.rule_check: a rule found harmful, or not checked, in planted="flag" mode); [] when nothing."""
    return planted_reasons(text) + [str(flag) for flag in ((edit or {}).get("meaning_flags") or [])]


def parse_codeowners(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(pattern, owners) pairs of a CODEOWNERS file, in file order (comments and blank lines skipped)."""
    pairs = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) >= 2:
            pairs.append((words[0], tuple(words[1:])))
    return tuple(pairs)


def owners_of(path: str, codeowners: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[str, ...]:
    """The owners of `path`: the last matching CODEOWNERS pattern's (GitHub's rule)."""
    found: tuple[str, ...] = ()
    for pattern, owners in codeowners:
        anchored = pattern.lstrip("/")
        if (
            fnmatch.fnmatch(path, anchored)
            or fnmatch.fnmatch(path, anchored.rstrip("/") + "/*")
            or (not pattern.startswith("/") and fnmatch.fnmatch(path, "*/" + anchored))
            or pattern == "*"
        ):
            found = owners
    return found


__all__ = ["TrustPolicy", "is_bot", "flags_of", "parse_codeowners", "owners_of"]  # in CODE_APPENDIX.md
