"""How an agent writes its own rules file (`/init`), headless: the route each agent package declares.

    route = CodexAgent.init_route        # an InitRoute: the prompt sent, how, the file it writes, provenance
    task = init_task(newest_training_task, route, "codex")   # run like any task; the patch holds the file

Every supported agent but two has a documented init: Codex's `/init` (a fixed prompt; `codex exec` runs no
slash commands, so the route sends the prompt's text), the Gemini CLI's `/init` (`gemini -p "/init"`),
opencode's `init` command (`opencode run --command init`), Claude Code's `/init` (`claude -p`, with the older,
headless init prompt: the newer one asks the user questions). Cline and mini-swe-agent have none: their
route is this project's own prompt (PROJECT_INIT_PROMPT), and its `kind` says so in every label.

An init run is an ordinary run of the engine (helpers.engine.runs.run_tasks: workspace, sandbox, gateway,
records, resume) on a task whose prompt is the route's, sent as it is (`exact_prompt`), with no rules and no
grading. Its patch, taken by the engine like any patch, holds the file the agent wrote: `written_file` reads
it out of the patch as data, never by running or following anything the agent left.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

OWN_INIT = "documented init"  # the agent's own, documented headless route
PROJECT_INIT = "the project's own init prompt"  # an agent without one: labeled so everywhere

# The project's own init prompt, for the agents without an init of their own (Cline, mini-swe-agent): what the
# documented ones ask for, in a few lines.
PROJECT_INIT_PROMPT = (
    "Write a file named {file} at the root of this repository: a short guide for a coding agent that will "
    "work on it. Read the repository first (its README, CONTRIBUTING and other docs, its layout and tests). "
    'Title it "Repository Guidelines" and keep it to 200-400 words under Markdown headings: project '
    "structure, how to build and test, coding style and naming conventions, testing guidelines, commit and "
    "pull request guidelines. Be specific to this repository and state its conventions as instructions. "
    "Change no other file."
)


@dataclass(frozen=True)
class InitRoute:
    """One agent's headless init: `kind` (OWN_INIT or PROJECT_INIT), `prompt` (the exact text sent: "/init"
    for a CLI that runs its own slash command), `command` (how it is sent, as a person would type it, for
    the record), `writes` (the file it writes, relative to the repository) and `source` (where the route and
    prompt come from). The CLI's version is the installed one's (the package's pin), recorded with each run."""

    kind: str
    prompt: str
    command: str
    writes: str
    source: str

    @property
    def prompt_sha(self) -> str:
        """The hash of the exact prompt sent (sha256, 16 hex digits), recorded with every init file."""
        return hashlib.sha256(self.prompt.encode("utf-8")).hexdigest()[:16]

    def label(self, agent: str) -> str:
        """How the init arm is named everywhere: "codex's /init" or "cline: the project's own init prompt
        (cline has no init)"."""
        if self.kind == OWN_INIT:
            return f"{agent}'s /init"
        return f"{agent}: {PROJECT_INIT} ({agent} has no init)"


def init_task(task: dict[str, Any], route: InitRoute, agent: str) -> dict[str, Any]:
    """The task an init run answers: `task`'s repository at its base commit (the newest training task's), the
    route's prompt sent as it is, no grading fields. Its instance id names the agent, repository and base
    commit, so a run id with the agent's version and the prompt's hash caches it once per all four."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", str(task.get("repo") or "repo")).strip("-.") or "repo"
    return {
        **{
            k: task[k]
            for k in ("repo", "base_commit", "repo_path", "suite", "environment_setup_commit", "version", "created_at")
            if k in task
        },
        "instance_id": f"init-{agent}-{slug}-{str(task['base_commit'])[:12]}"[:120],
        "problem_statement": route.prompt,
        "exact_prompt": True,
        "FAIL_TO_PASS": "[]",
        "PASS_TO_PASS": "[]",
        "patch": "",
        "test_patch": "",
    }


def written_file(patch: str, path: str) -> str | None:
    """The text of `path` as the patch adds it (a new file: every "+" line of its hunks), None when the patch
    does not create it. Reads the patch as data only."""
    text = patch or ""
    header = re.search(rf"(?m)^diff --git a/{re.escape(path)} b/{re.escape(path)}\n", text)
    if header is None:
        return None
    section = text[header.end() :]
    following = re.search(r"(?m)^diff --git ", section)
    section = section[: following.start()] if following else section
    if not re.search(r"(?m)^new file mode", section) or "@@" not in section:
        return None
    lines, in_hunk = [], False
    for line in section.split("\n"):
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            lines.append(line[1:])
        elif in_hunk and line.startswith("\\"):  # "\ No newline at end of file"
            lines[-1:] = [lines[-1] + "\0"] if lines else []
    joined = "\n".join(lines) + "\n"
    return joined.replace("\0\n", "") if joined.endswith("\0\n") else joined


__all__ = ["InitRoute", "init_task", "written_file", "PROJECT_INIT_PROMPT", "OWN_INIT", "PROJECT_INIT"]
