"""One training row as the optimizer reads it: the task, the agent's output, then every feedback column.

    render_example(row, "output", ["correctness", "explanation"], max_tokens=20_000)

Every text the host did not write is fenced as data (helpers.core.fences), and the hidden tests' outcome is the
host's own line. Separate from helpers.learn.optimizer because the loop's steps and the quickstart's journey
show the same example to a reader without asking the optimizer anything.
"""

from __future__ import annotations

from typing import Any, Sequence

from helpers.core.fences import fence, fence_token, inline
from helpers.core.tokens import count_tokens, truncate_tokens


def render_example(
    row: dict[str, Any], output_column: str, feedback_columns: Sequence[str], max_tokens: int | None = None
) -> str:
    """One example as the optimizer reads it: task, the agent's output, then every feedback column. Every text
    the host did not write (the task, the output, a feedback value that is not a plain word or number) is fenced
    as data (helpers.core.fences); the hidden tests' outcome is the host's own line. `max_tokens`: cut the
    output first, then the task, then the feedback (each inside its fence, with a visible marker) to fit."""
    fields = {
        "task": str(row.get("problem_statement") or row.get("input") or "").strip(),
        "output": str(row.get(output_column) or "").strip(),
        **{f"feedback {column}": _text(row.get(column, "")) for column in feedback_columns},
    }
    text = _render_fields(row, output_column, feedback_columns, fields)
    for name in ["output", "task", *(f"feedback {c}" for c in feedback_columns)]:
        excess = count_tokens(text) - max_tokens if max_tokens else 0
        if excess <= 0:
            break
        fields[name] = truncate_tokens(fields[name], max(0, count_tokens(fields[name]) - excess - 24))
        text = _render_fields(row, output_column, feedback_columns, fields)
    return text


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def _render_fields(
    row: dict[str, Any], output_column: str, feedback_columns: Sequence[str], fields: dict[str, str]
) -> str:
    token = fence_token(*fields.values())
    feedback = []
    if "pass_or_fail" in row and "pass_or_fail" not in feedback_columns:
        feedback.append(f"- hidden tests (the host's grade): {inline(row['pass_or_fail'])}")
    for column in feedback_columns:
        value = fields[f"feedback {column}"]
        plain = len(value) <= 40 and inline(value) == value
        feedback.append(f"- {column}: " + (value if plain else "\n" + fence(token, f"feedback: {column}", value)))
    task = fields["task"]
    output = (
        fence(token, f"the agent's output ({output_column})", fields["output"])
        if fields["output"]
        else "(empty: the agent produced nothing)"
    )
    return (
        f"### Example {inline(row.get('instance_id', ''))}\n"
        + (f"Task:\n{fence(token, 'the task, as its author wrote it', task)}\n\n" if task else "")
        + f"Output ({output_column}):\n{output}\n\nFeedback:\n"
        + "\n".join(feedback)
    )


__all__ = ["render_example"]  # the public API, documented in CODE_APPENDIX.md
