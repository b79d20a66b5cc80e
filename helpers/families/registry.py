"""Which task family the engine, the loop and the judge use when they are given none: the one place that names it.

    family = default_family()        # the coding family (helpers.families.coding.family.CODING)

Those layers sit above `families` and take a WorkspaceFamily (helpers.core.protocols) as a value: a session, a
notebook or a test passes its own; this default keeps the calls of the cookbook's one family short.
"""

from __future__ import annotations

from helpers.core.protocols import WorkspaceFamily


def default_family() -> WorkspaceFamily:
    """The coding family, imported on first use (importing this module costs nothing)."""
    from helpers.families.coding.family import CODING

    return CODING


__all__ = ["default_family"]  # documented in CODE_APPENDIX.md
