"""How the scripted dry run picks the tool it edits with: by the tool's name and the arguments its schema
declares, the running agent's adapters first (two agents may name different tools alike)."""

from helpers.stand_ins.file_edit_tools import (PatchTool, ShellTool, WholeFileEditor, choose_adapter,
                                        edit_tools_of_registered_agents, offered_tools)

CODEX_PATCH, OPENCODE_PATCH = PatchTool("apply_patch", "input"), PatchTool("apply_patch", "patchText")


def chat_tool(name, *arguments):
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object",
                                                                         "properties": {a: {} for a in arguments}}}}


def test_the_offered_tools_and_their_arguments_are_read_from_every_apis_tool_shape():
    request = {"tools": [chat_tool("bash", "command"),
                         {"type": "function", "name": "apply_patch", "parameters": {"properties": {"input": {}}}},
                         {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {}}}},
                         {"type": "custom", "name": "freeform", "format": {"type": "grammar"}},
                         "not a tool"]}
    assert offered_tools(request) == {"bash": {"command"}, "apply_patch": {"input"}, "Bash": {"command"},
                                      "freeform": None}
    assert offered_tools({}) == {}


def test_a_tool_named_alike_is_used_only_with_the_arguments_it_declares():
    adapters = [CODEX_PATCH, OPENCODE_PATCH, ShellTool("bash")]
    assert choose_adapter(adapters, offered_tools({"tools": [chat_tool("apply_patch", "patchText")]})) is OPENCODE_PATCH
    assert choose_adapter(adapters, offered_tools({"tools": [chat_tool("apply_patch", "input")]})) is CODEX_PATCH
    # neither patch tool fits a third schema: the shell it also offers is used
    offered = offered_tools({"tools": [chat_tool("apply_patch", "diff"), chat_tool("bash", "command")]})
    assert choose_adapter(adapters, offered) == ShellTool("bash")
    assert choose_adapter([WholeFileEditor("editor")], offered_tools({"tools": [chat_tool("editor", "path")]})) is None
    # a tool without a schema takes raw text: its name decides
    assert choose_adapter(adapters, {"apply_patch": None}) is CODEX_PATCH
    assert choose_adapter(adapters, {"grep": {"pattern"}}) is None


def test_the_running_agents_adapters_come_first():
    from opencode.agent import OpencodeAgent

    first = edit_tools_of_registered_agents("opencode")
    assert first[:len(OpencodeAgent.dry_run_tools)] == list(OpencodeAgent.dry_run_tools)
    assert sorted(map(repr, first)) == sorted(map(repr, edit_tools_of_registered_agents()))  # the same, reordered
