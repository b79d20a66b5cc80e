"""git's binary patch form read back, and a delta hunk rewritten as the literal of the same file."""

import hashlib

import pytest

from helpers.families.coding.binary_patches import UNREADABLE_DELTA, apply_delta, as_literal, new_side
from helpers.families.coding.git import git
from helpers.families.coding.patches import patch_files

OLD = "# -*- coding: latin-1 -*-\n# caf\xe9\n".encode("latin-1") + b"".join(
    f"def f{i}(x):\n    return x + {i}\n".encode() for i in range(200))


def binary_section(tmp_path, old: bytes, new: bytes) -> str:
    """git's own `diff --binary` of one file from `old` to `new`, the file marked binary."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "--quiet", cwd=repo)
    (repo / ".git" / "info" / "attributes").write_text("* -diff -text\n")
    (repo / "m.py").write_bytes(old)
    git("add", "-A", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "base", cwd=repo)
    (repo / "m.py").write_bytes(new)
    return git("diff", "--binary", "HEAD", cwd=repo).stdout


NOISE = OLD + b"".join(hashlib.sha256(b"%d" % i).digest() for i in range(4000))  # 128 KiB that do not compress


@pytest.mark.parametrize("old, new", [
    (OLD, OLD + b"x = 1\n"),
    (OLD, OLD[:3000] + b"import _pytest\n" + OLD[3000:]),
    (NOISE, NOISE[:70000] + b"import _pytest\n" + NOISE[70000:]),  # copies past 64 KiB, of 64 KiB and more
], ids=["appended", "inserted", "large"])
def test_a_delta_is_rewritten_as_the_literal_of_the_same_file_and_git_applies_it(tmp_path, old, new):
    section = binary_section(tmp_path, old, new)
    assert new_side(section) == UNREADABLE_DELTA  # git chose a delta: the new text cannot be read from it
    literal = as_literal(section, old)
    assert new_side(literal) == new
    repo = tmp_path / "repo"
    git("checkout", "--quiet", "--", "m.py", cwd=repo)
    git("apply", "-", cwd=repo, input=literal)
    assert (repo / "m.py").read_bytes() == new
    assert [paths for paths, _ in patch_files(literal)] == [["m.py"]]


def test_a_delta_against_other_bytes_or_cut_short_is_refused_not_guessed(tmp_path):
    section = binary_section(tmp_path, OLD, OLD + b"x = 1\n")
    with pytest.raises(ValueError):
        as_literal(section, OLD + b"another base")
    with pytest.raises(ValueError):
        apply_delta(b"abc", b"\x03\x05\x91\x00\x09")  # a copy past the old file's end
    with pytest.raises(ValueError):
        apply_delta(b"abc", b"\x03")  # no target size
    with pytest.raises(ValueError):
        apply_delta(b"abc", b"\x03\x03\x91")  # a copy whose offset is cut short
    with pytest.raises(ValueError):
        apply_delta(b"abc", b"\x03\xff\xff\xff\x7f" + b"\xb0\xff\xff" * 10)  # a result too large to read
    assert apply_delta(b"abc", b"\x03\x04\x91\x01\x02\x02xy") == b"bcxy"  # copy 2 from offset 1, insert "xy"


def test_text_and_literal_sections_come_back_unchanged(tmp_path):
    literal = binary_section(tmp_path, b"", "caf\xe9\n".encode("latin-1"))
    assert new_side(literal) == "caf\xe9\n".encode("latin-1") and as_literal(literal, b"") == literal
    text = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert new_side(text) is None and as_literal(text, b"a\n") == text
