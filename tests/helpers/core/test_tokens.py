"""Token counting works offline with the real cl100k tokenizer, and cuts are visible."""

from helpers.core.tokens import count_message_tokens, count_tokens, truncate_chars, truncate_tokens


def test_tokens_are_counted_with_the_real_cl100k_vocabulary():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2  # cl100k: "hello", " world"
    assert count_tokens("<|endoftext|>") > 1  # special strings counted as text, never rejected


def test_message_counts_include_per_message_overhead():
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello world"}]
    body = count_tokens("be brief") + count_tokens("hello world")
    assert count_message_tokens(messages) > body


def test_truncation_keeps_head_and_tail_and_says_how_much_was_cut():
    text = "HEAD " + "filler words " * 2000 + " TAIL"
    cut = truncate_tokens(text, 200)
    assert count_tokens(cut) <= 200
    assert cut.startswith("HEAD") and cut.endswith("TAIL")
    assert "tokens cut here" in cut


def test_short_text_is_left_alone():
    assert truncate_tokens("short text", 100) == "short text"
    assert truncate_chars("short", 10) == "short"


def test_character_truncation_is_marked():
    cut = truncate_chars("x" * 1000, 100)
    assert "characters cut here" in cut and len(cut) < 200
