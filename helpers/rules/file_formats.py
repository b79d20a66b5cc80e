"""Where each agent reads its rules: the one table of rules-file formats (FORMATS), and the names that become paths.

A format is a path pattern in a project: AGENTS.md, CLAUDE.md, GEMINI.md, .clinerules (a file or a folder),
a Cursor rule, GitHub Copilot's and Windsurf's files, a Claude Code skill. Most are a plain Markdown file the
agent reads whole; Cursor's `.mdc` rules and Claude Code's skills need front matter first, and hold a
`<name>` the user picks, which becomes a path and is checked before anything is written.

How the learned rules go into a file is the same for every format (helpers.rules.ruleset: a marked section
appended after the team's text, so a team's front matter stays first and byte for byte). What differs is
only here: the front matter a new file gets, and the file a folder of rules gets (its own, beside the
team's files). Any other path inside the project is a plain file (or folder) too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from helpers.core.names import check_name

LEARNED_NAME = "learned-rules"  # the `<name>` (or file stem) of the file of our own in a folder of rules
LEARNED_FILE = f"{LEARNED_NAME}.md"  # inside a plain rules folder (e.g. a `.clinerules/` directory)

# Cursor's documented .mdc front matter: `description` (a string), `globs` (comma-separated patterns, empty
# here), `alwaysApply` (a boolean): always applied, like every other agent's rules file.
CURSOR_FRONT_MATTER = (
    "---\ndescription: Rules learned with prompt learning for this repository\nglobs:\nalwaysApply: true\n---\n"
)
# Anthropic's documented SKILL.md front matter: `name` (the skill's folder name) and `description` (what it
# is for and when to use it, at most 1024 characters).
SKILL_FRONT_MATTER = (
    "---\nname: {name}\ndescription: Rules learned with prompt learning for this repository; "
    "use them whenever you change its code.\n---\n"
)
# A skill's name (Anthropic's rules for `name`): lowercase letters, digits and single hyphens, at most 64
# characters, no reserved word.
SKILL_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SKILL_RESERVED = ("anthropic", "claude")


@dataclass(frozen=True)
class RulesFormat:
    """One agent's rules file: its path pattern, who reads it, the front matter a new file gets (`{name}`
    filled with the file's `<name>`; "" when the format has none), and whether its `<name>` must also be a
    valid skill name (SKILL_NAME)."""

    pattern: str
    readers: str
    front_matter: str = ""
    skill: bool = False

    @property
    def folder(self) -> str | None:
        """The folder that holds one file per `<name>` (".cursor/rules"), or None for a single file."""
        return self.pattern.split("/<name>")[0] if "<name>" in self.pattern else None

    def path(self, name: str) -> str:
        return self.pattern.replace("<name>", name)


FORMATS = (  # the one table: every rules file the cookbook writes and reads
    RulesFormat("AGENTS.md", "Codex, opencode, mini-swe-agent and other agents reading AGENTS.md"),
    RulesFormat("CLAUDE.md", "Claude Code"),
    RulesFormat("GEMINI.md", "Gemini CLI"),
    RulesFormat(".clinerules", "Cline (a file, or a folder of files)"),
    RulesFormat(".cursor/rules/<name>.mdc", "Cursor", CURSOR_FRONT_MATTER),
    RulesFormat(".github/copilot-instructions.md", "GitHub Copilot"),
    RulesFormat(".windsurfrules", "Windsurf"),
    RulesFormat(".claude/skills/<name>/SKILL.md", "Claude Code (a skill)", SKILL_FRONT_MATTER, skill=True),
)
PLAIN = RulesFormat("<any other path>", "any agent told to read it")


def _named_pattern(fmt: RulesFormat) -> re.Pattern[str]:
    """Any path under the format's folder with the format's ending: its `<name>` is what lies between."""
    before, after = fmt.pattern.split("<name>")
    return re.compile(re.escape(before) + "(.*)" + re.escape(after))


def rules_format(rules_file: str) -> tuple[RulesFormat, str]:
    """(format, `<name>`) of a rules file inside a project ("" when the format has no name; PLAIN for any
    other path). A `<name>` that is not a safe single path component (helpers.core.names.check_name), or for a
    skill not a valid skill name, is a ValueError naming the format, the name and the fix: nothing is written.
    The folder of a named format (".cursor/rules", ".claude/skills") names its file of our own, LEARNED_NAME."""
    path = rules_file.strip().replace("\\", "/").rstrip("/")
    for fmt in FORMATS:
        if fmt.folder is None:
            if path == fmt.pattern:
                return fmt, ""
            continue
        if path == fmt.folder:
            return fmt, LEARNED_NAME
        found = _named_pattern(fmt).fullmatch(path)
        if found:
            return fmt, _checked_name(found.group(1), fmt)
    return PLAIN, ""


def _checked_name(name: str, fmt: RulesFormat) -> str:
    check_name(name, f"<name> in {fmt.pattern}")
    if fmt.skill and not (
        SKILL_NAME.fullmatch(name) and len(name) <= 64 and not any(word in name for word in SKILL_RESERVED)
    ):
        raise ValueError(
            f"Invalid <name> in {fmt.pattern} {name!r}: a skill's name is its folder's name and must be "
            "1-64 lowercase letters, digits or single hyphens, without 'anthropic' or 'claude' (e.g. "
            f"{LEARNED_NAME!r})."
        )
    return name


def learned_path(root: Path | str, rules_file: str) -> Path:
    """The file under `root` (a project or a workspace) that gets the learned rules for `rules_file`: the file
    itself, or in a folder of rules (one that exists, or named with a final "/": ".clinerules/") a file of our
    own (file_in_folder; a named format's folder need not exist yet). Checks the `<name>` first
    (rules_format): raises before anything is written."""
    fmt, name = rules_format(rules_file)
    if fmt.folder is not None:
        return Path(root) / fmt.path(name)
    path = Path(root) / rules_file
    return file_in_folder(path) if path.is_dir() or rules_file.endswith("/") else path


def file_in_folder(folder: Path | str) -> Path:
    """Our own file in a folder of rule files, beside the team's: `<folder>/learned-rules.mdc` in `.cursor/rules`,
    `<folder>/learned-rules/SKILL.md` in `.claude/skills`, `<folder>/learned-rules.md` in any other."""
    folder = Path(folder)
    for fmt in FORMATS:
        if fmt.folder is not None and f"/{folder.as_posix().rstrip('/')}".endswith(f"/{fmt.folder}"):
            return folder / fmt.path(LEARNED_NAME).removeprefix(f"{fmt.folder}/")
    return folder / LEARNED_FILE


def front_matter_for(rules_file: str) -> str:
    """The front matter a new file at `rules_file` gets ("" when its format needs none)."""
    fmt, name = rules_format(rules_file)
    return fmt.front_matter.format(name=name)


def with_front_matter(rules_file: str, text: str) -> str:
    """`text` opened by the front matter its format needs at `rules_file`, unless it opens with its own."""
    return text if has_front_matter(text) else front_matter_for(rules_file) + text


def has_front_matter(text: str) -> bool:
    """Whether `text` opens with a front matter line ("---" alone on the first line)."""
    return text.split("\n", 1)[0].rstrip("\r") == "---"


__all__ = [
    "RulesFormat",
    "FORMATS",
    "PLAIN",
    "rules_format",
    "learned_path",
    "file_in_folder",  # CODE_APPENDIX.md
    "front_matter_for",
    "with_front_matter",
    "has_front_matter",
    "LEARNED_NAME",
    "LEARNED_FILE",
]
