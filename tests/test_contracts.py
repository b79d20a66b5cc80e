"""The seams are typed as their contracts: the engine takes a RunContext, LoopSettings and a RulesetStore, never
`Any`, and every sandbox policy is the one SandboxPolicy type. Read from the source's annotations."""

import ast
from pathlib import Path

from helpers.app.session import Session
from helpers.core.config import REPO_ROOT
from helpers.core.protocols import RunContext

ENGINE = REPO_ROOT / "helpers" / "engine"
PYTHON_PACKAGES = ("helpers", "cline", "claude_code", "codex", "opencode", "gemini_cli", "mini_swe_agent")
CONTRACTS = {"session": {"RunContext", "RunContext | None"}, "settings": {"LoopSettings"},
             "store": {"RulesetStore"}}


def annotated_names(path: Path) -> list[tuple[str, str | None, int]]:
    """(name, annotation as written or None, line) of every parameter and annotated assignment in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.arg):
            found.append((node.arg, ast.unparse(node.annotation) if node.annotation else None, node.lineno))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append((node.target.id, ast.unparse(node.annotation), node.lineno))
    return found


def source_files() -> list[Path]:
    return [p for package in PYTHON_PACKAGES for p in (REPO_ROOT / package).rglob("*.py")
            if not {"node_modules", ".venv", "repos"} & set(p.parts)]


def test_the_engine_takes_a_session_settings_and_a_store_as_their_contracts_never_any():
    wrong = [f"{path.relative_to(REPO_ROOT)}:{line}: {name}: {annotation}"
             for path in sorted(ENGINE.rglob("*.py")) for name, annotation, line in annotated_names(path)
             if name in CONTRACTS and annotation not in CONTRACTS[name]]
    assert not wrong, "type these as their contracts:\n" + "\n".join(wrong)


def test_every_sandbox_policy_in_a_signature_is_the_one_sandbox_policy_type():
    wrong = [f"{path.relative_to(REPO_ROOT)}:{line}: sandbox: {annotation}"
             for path in source_files() for name, annotation, line in annotated_names(path)
             if name == "sandbox" and annotation is not None and annotation != "SandboxPolicy"]
    assert not wrong, "a sandbox policy is a helpers.isolation.sandbox.SandboxPolicy:\n" + "\n".join(wrong)


def test_the_session_is_the_run_context_the_engine_reads_and_a_partial_one_is_not():
    session = Session(dry_run=True, agent_model="a", judge_model="j", optimizer_model="o")
    assert isinstance(session, RunContext)
    members = [name for name in vars(RunContext) if not name.startswith("_")]
    assert {"dry_run", "label", "gateway", "agent_kwargs", "judge_kwargs", "optimizer_kwargs"} <= set(members)

    class Partial:
        dry_run, label, agent_model = True, "", "a"

    assert not isinstance(Partial(), RunContext)
