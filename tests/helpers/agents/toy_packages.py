"""Agent packages of their own, written for a test as a user would add one (no change in helpers/): the toy agent, a
CLIAgent subclass whose CLI is a shell script (no model), and the means to write and import such packages."""

import importlib
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

TOY_PACKAGE = '''
"""A toy agent: a shell command that copies its rules and writes a file (no model)."""
from pathlib import Path

from helpers.agents.base import CLIAgent, Invocation
from helpers.isolation.processes import safe_environment
from helpers.core.protocols import AgentResult


class ToyAgent(CLIAgent):
    name, rules_file, base_prompt = "toy-agent", "TOY.md", "The toy agent writes FIXED.txt."
    default_model, package_dir, binary_path = "toy-model", Path(__file__).parent, "bin/toy"

    def invoke(self, task, workspace, state):
        return Invocation([str(self.binary())], safe_environment({"HOME": str(state)}), stdin=task["instance_id"])

    def result(self, task, out, err, timed_out, duration):
        status = "timeout" if timed_out else "completed" if "wrote" in out else "error"
        return AgentResult(str(task["instance_id"]), status, error="" if status == "completed" else err[-500:],
                           duration_s=duration, model=self.model, final_text=out)


AGENT = ToyAgent
'''
TOY_BINARY = """#!/bin/sh
read id
cat TOY.md > rules_seen.txt 2>/dev/null
echo "$id was here" > FIXED.txt
echo wrote
"""


def write_package(packages: Path, module: str, source: str, binary: str) -> Path:
    """The agent package `module` under `packages`: `source` as its __init__.py, `binary` as its executable bin/toy."""
    package = packages / module
    (package / "bin").mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(source))
    (package / "bin" / "toy").write_text(binary)
    (package / "bin" / "toy").chmod(0o755)
    return package


@contextmanager
def importable(packages: Path, *modules: str) -> Iterator[None]:
    """The packages under `packages` importable while it lasts (as an installed one is), then `modules` forgotten."""
    sys.path.insert(0, str(packages))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(str(packages))
        for module in modules:
            sys.modules.pop(module, None)
