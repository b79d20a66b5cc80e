"""Reading one feedback source before any parser sees it: a file's bytes (capped, UTF-8, JSON where the kind
is JSON; `gh api --paginate`'s arrays back to back made one list) or the data as given, and BadFeedback naming
the file and the fault when it cannot be read.

Separate from helpers.continual.feedback (which turns the data into Feedback records): this part only reads,
and is the one place a feedback file's size and encoding are checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class BadFeedback(ValueError):
    """A feedback source that cannot be read: the message names the file (or "the data") and the fault."""


def load_source(path_or_data: Any, kind: str, max_bytes: int) -> tuple[Any, str]:
    """(the raw data, where it came from): a file's content (JSON, XML or text) or the data as given.
    BadFeedback, naming the file, when it is missing, empty, over `max_bytes`, not UTF-8 or not JSON."""
    is_file = isinstance(path_or_data, Path) or (
        isinstance(path_or_data, str) and kind != "note" and not path_or_data.lstrip().startswith(("<", "[", "{"))
    )
    origin = str(path_or_data) if is_file else "the data given"
    text: str | None
    if is_file:
        path = Path(path_or_data)
        if not path.is_file():
            raise BadFeedback(f"{path}: no such file (give the path of a {kind} export).")
        size = path.stat().st_size
        if size > max_bytes:
            raise BadFeedback(
                f"{path}: {size:,} bytes, over the {max_bytes:,}-byte cap for one feedback file "
                "(Inbox(max_file_bytes=...) raises it; split the export otherwise)."
            )
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            raise BadFeedback(f"{path}: not UTF-8 text ({error.reason} at byte {error.start}).") from None
    else:
        text = path_or_data if isinstance(path_or_data, str) else None
    if text is not None and not text.strip():
        raise BadFeedback(f"{origin}: empty; expected {EXPECTED[kind]}.")
    if text is None or kind in ("junit", "note"):
        return (text if text is not None else path_or_data), origin
    try:
        return _json_values(text), origin
    except ValueError as error:
        raise BadFeedback(f"{origin}: not JSON ({error}); expected {EXPECTED[kind]}.") from None


EXPECTED = {
    "github-review-comments": "a JSON list of review comments (gh api repos/O/R/pulls/N/comments)",
    "github-reviews": "a JSON list of reviews (gh api repos/O/R/pulls/N/reviews)",
    "junit": "a JUnit XML report",
    "phoenix": "Phoenix annotations (JSON)",
    "note": "a line of text",
}


def _json_values(text: str) -> Any:
    """JSON text; several top-level arrays back to back (`gh api --paginate`) become one list."""
    decoder, values, position = json.JSONDecoder(), [], 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        value, position = decoder.raw_decode(text, position)
        values.append(value)
    if len(values) == 1:
        return values[0]
    return [item for value in values for item in (value if isinstance(value, list) else [value])]


__all__ = ["BadFeedback", "load_source"]  # documented in CODE_APPENDIX.md
