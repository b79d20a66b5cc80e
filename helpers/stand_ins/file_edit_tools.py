"""How the scripted dry run edits files through the tools an agent offers its model.

The dry run knows each house task's patch; an agent knows its own tools. Each agent package declares,
on its Agent class, `dry_run_tools`: adapters built from the three kinds below with the agent's own tool
and argument names. For a request, the dry run uses the first adapter whose tool the request offers with
the arguments the adapter writes (two agents may name different tools alike: Codex's `apply_patch` takes
`input`, opencode's `patchText`), the running agent's own adapters first, so helpers/ never names an
agent's tools.

An adapter: `tool` (the tool's name in requests), `arguments` (the argument names its calls write) and
`calls(task, patch) -> list of tool calls` that turn the base commit into the base commit + `patch`.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from helpers.families.coding.git import git
from helpers.families.coding.workspaces import prepare_workspace
from helpers.llm.scripted_server import tool_call

PATCH_END = "PL_DRY_RUN_PATCH_END"  # the heredoc delimiter of a `git apply` command


@dataclass(frozen=True)
class ShellTool:
    """A tool that runs a shell command (argument `argument`; a list of commands when `listed`): the patch goes
    through `git apply`."""

    tool: str
    argument: str = "command"
    listed: bool = False

    @property
    def arguments(self) -> frozenset[str]:
        return frozenset({self.argument})

    def step(self, command: str) -> list[dict]:
        """The tool calls of one model turn that runs `command` (the tests script an agent's shell with it)."""
        return [tool_call(self.tool, **{self.argument: [command] if self.listed else command})]

    def calls(self, task: dict, patch: str) -> list[dict]:
        return self.step(f"git apply --whitespace=nowarn <<'{PATCH_END}'\n{patch.rstrip()}\n{PATCH_END}")


@dataclass(frozen=True)
class WholeFileEditor:
    """A file editor taking `path`, `old_text` and `new_text` (whole files); deletions go through
    `delete_tool` (a tool taking `commands`)."""

    tool: str
    delete_tool: str = "run_commands"

    @property
    def arguments(self) -> frozenset[str]:
        return frozenset({"path", "new_text"})

    def calls(self, task: dict, patch: str) -> list[dict]:
        calls = []
        for path, old_text, new_text in changed_files(task, patch):
            if new_text is None:
                calls.append(tool_call(self.delete_tool, commands=[f"rm -f {path}"]))
            elif not old_text:
                calls.append(tool_call(self.tool, path=path, new_text=new_text))
            else:
                calls.append(tool_call(self.tool, path=path, old_text=old_text, new_text=new_text))
        return calls


@dataclass(frozen=True)
class PatchTool:
    """A tool taking one patch in the `*** Begin Patch` grammar (argument `argument`): every old line out,
    every new line in."""

    tool: str
    argument: str = "input"

    @property
    def arguments(self) -> frozenset[str]:
        return frozenset({self.argument})

    def calls(self, task: dict, patch: str) -> list[dict]:
        sections = []
        for path, old_text, new_text in changed_files(task, patch):
            if new_text is None:
                sections.append(f"*** Delete File: {path}\n")
            elif not old_text:
                sections.append(f"*** Add File: {path}\n" + "".join(f"+{line}\n" for line in new_text.splitlines()))
            else:
                sections.append(
                    f"*** Update File: {path}\n@@\n"
                    + "".join(f"-{line}\n" for line in old_text.splitlines())
                    + "".join(f"+{line}\n" for line in new_text.splitlines())
                )
        return [tool_call(self.tool, **{self.argument: f"*** Begin Patch\n{''.join(sections)}*** End Patch"})]


def changed_files(task: dict, patch: str) -> list[tuple[str, str, str | None]]:
    """(path, old text ("" for a new file), new text (None for a deleted file)) of each file `patch` changes,
    by applying it in a scratch clone of the task's repository."""
    with tempfile.TemporaryDirectory(prefix="dry-run-") as scratch:
        workspace = prepare_workspace(task, scratch)
        applied = git("apply", "--whitespace=nowarn", "-", cwd=workspace, input=patch, check=False)
        if applied.returncode != 0:
            raise ValueError(f"{task['instance_id']}: the scripted patch does not apply: {applied.stderr}")
        git("add", "-A", cwd=workspace)
        changed = []
        for line in git("diff", "--cached", "--name-status", "HEAD", cwd=workspace).stdout.splitlines():
            status, path = line.split("\t")[0], line.split("\t")[-1]
            old = git("show", f"HEAD:{path}", cwd=workspace, check=False)
            old_text = old.stdout if old.returncode == 0 and not status.startswith("A") else ""
            changed.append((path, old_text, None if status.startswith("D") else (Path(workspace) / path).read_text()))
        return changed


def edit_tools_of_registered_agents(first: str | None = None) -> list[Any]:
    """Every registered agent's dry-run adapters, agent `first`'s own first, then in registration order
    (helpers.core.registry)."""
    from helpers.core.registry import agent_class, registered_agents

    # `first` even when it is found by its import name only (a package not installed as a distribution)
    names = ([first] if first else []) + [name for name in registered_agents() if name != first]
    tools: list[Any] = []
    for name in names:
        try:
            tools.extend(getattr(agent_class(name), "dry_run_tools"))  # a plain class: its member read by name
        except (ImportError, ValueError):  # an agent package that cannot load here plays no part
            continue
    return tools


def offered_tools(request: dict) -> dict[str, frozenset[str] | None]:
    """The tools a request offers, whatever the API's tool shape: name -> the argument names its JSON schema
    declares (None when it declares none, e.g. a free-form tool that takes raw text)."""
    offered: dict[str, frozenset[str] | None] = {}
    tools = []
    for tool in request.get("tools") or []:  # Gemini: one tool holding many functionDeclarations
        declared = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        tools += declared if isinstance(declared, list) else [tool]
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        function = found if isinstance(found := tool.get("function"), dict) else tool
        name = function.get("name") or tool.get("type")
        schema = (
            function.get("parameters") or function.get("parametersJsonSchema") or function.get("input_schema") or {}
        )
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if name:
            offered[str(name)] = frozenset(properties) if isinstance(properties, dict) else None
    return offered


def choose_adapter(adapters: Sequence[Any], offered: Mapping[str, frozenset[str] | None]) -> Any | None:
    """The first adapter whose tool is offered and takes the arguments the adapter writes (a tool without a
    schema takes any); None when no adapter fits."""
    return next(
        (a for a in adapters if a.tool in offered and (offered[a.tool] is None or a.arguments <= offered[a.tool])), None
    )


__all__ = [
    "ShellTool",
    "WholeFileEditor",
    "PatchTool",
    "changed_files",
    "edit_tools_of_registered_agents",
    "offered_tools",
    "choose_adapter",
]
