"""Lazy package attributes: a package's public names imported from their modules on first use, so that importing
the package (helpers, an agent package) starts nothing and imports nothing heavy."""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def lazy_exports(package: str, exports: dict[str, str], agent: str | None = None) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: each name in `exports` (name -> its module) imported on first use.
    `agent` ("module:Class") is what `AGENT` names: an agent package's Agent class, which helpers.core.registry
    finds by that name."""

    def __getattr__(name: str) -> Any:
        if name == "AGENT" and agent:
            module, _, attribute = agent.partition(":")
            return getattr(import_module(module), attribute)
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(exports[name]), name)

    return __getattr__


__all__ = ["lazy_exports"]  # documented in CODE_APPENDIX.md
