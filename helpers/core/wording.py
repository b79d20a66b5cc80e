"""Counts as a person writes them: "1 task", "2 tasks", "1 repository", "3 repositories", "1,250 runs"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` with `noun` in the right number and a thousands separator; `plural` when it is not noun + "s"."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


__all__ = ["counted"]  # documented in CODE_APPENDIX.md
