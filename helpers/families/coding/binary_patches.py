"""git's binary patch form (`GIT binary patch`), read and written: how a file that is not UTF-8 text travels.

    new_side(section)                # the new file's bytes from a `literal` hunk; a reason (str) when unreadable
    as_literal(section, old_bytes)   # the section with a `delta` hunk rewritten as `literal`, checked by hash

A file's section in binary form holds a forward hunk (old -> new) then a reverse one, each `literal <size>` (the
whole file) or `delta <size>` (copy and insert instructions against the other side), as lines of base85 (git's
alphabet, Python's b85) each led by its byte count (A-Z = 1-26, a-z = 27-52), of zlib data. git writes a delta when
it is smaller and has no flag to forbid it; a delta cannot be read without the old file, so the host (which has
the base commit's blobs) rewrites each as literal before the patch leaves it, and the suspect check
(patches.suspect_lines) reads every graded file's new text.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zlib

BINARY_HUNK = re.compile(r"^(literal|delta) (\d+)$")
INDEX = re.compile(r"^index ([0-9a-f]{40})\.\.([0-9a-f]{40})", re.MULTILINE)  # --binary writes full hashes
MAX_BINARY_BYTES = 16 * 2**20  # a file in binary form larger than this decoded is not read
UNREADABLE_DELTA = "graded code in git's binary delta form, which the check cannot read"


def new_side(section: str) -> bytes | str | None:
    """The new file's bytes of a section in binary form whose forward hunk is `literal`; the reason it cannot be
    read (a `delta` hunk needs the old file; a hunk that does not decode) as a str; None for a text section."""
    hunk = _forward_hunk(section)
    if hunk is None:
        return None
    kind, size, data = hunk
    if kind == "delta":
        return UNREADABLE_DELTA
    return data if isinstance(data, bytes) else f"graded code in git's binary form that {data}"


def as_literal(section: str, old: bytes) -> str:
    """`section` with its forward hunk, when a `delta`, rewritten as the `literal` hunk of the same new file:
    the delta applied to `old` (the preimage's bytes) and checked against the section's postimage hash. A section
    in text form, or already literal, comes back unchanged; a delta that does not decode or check is a ValueError."""
    hunk = _forward_hunk(section)
    if hunk is None or hunk[0] == "literal":
        return section
    delta = hunk[2]
    if not isinstance(delta, bytes):
        raise ValueError(f"a binary delta that {delta}")
    new = apply_delta(old, delta)
    index = INDEX.search(section)
    if not index or _blob_hash(new) != index.group(2):
        raise ValueError("a binary delta whose result does not match the patch's postimage")
    lines = section.split("\n")
    start = lines.index("GIT binary patch") + 1
    end = lines.index("", start + 1)
    return "\n".join([*lines[:start], *literal_hunk(new), *lines[end:]])


def literal_hunk(data: bytes) -> list[str]:
    """The lines of a `literal` hunk holding `data`, as git writes them."""
    packed = zlib.compress(data, 9)
    chunks = [packed[i : i + 52] for i in range(0, len(packed), 52)]
    return [
        f"literal {len(data)}",
        *(
            chr(ord("A") + len(c) - 1 if len(c) <= 26 else ord("a") + len(c) - 27)
            + base64.b85encode(c, pad=True).decode()
            for c in chunks
        ),
    ]


def apply_delta(old: bytes, delta: bytes) -> bytes:
    """git's delta (its pack format: the two sizes as varints, then copy-from-old and insert instructions)
    applied to `old`; a ValueError when it does not fit `old`."""
    i, sizes = 0, []
    for _ in range(2):
        value = shift = 0
        while True:
            if i >= len(delta):
                raise ValueError("a delta cut short")
            value |= (delta[i] & 0x7F) << shift
            shift += 7
            i += 1
            if not delta[i - 1] & 0x80:
                break
        sizes.append(value)
    if sizes[0] != len(old):
        raise ValueError("a delta made against another file")
    if sizes[1] > MAX_BINARY_BYTES:
        raise ValueError("a delta whose result is too large to read")
    try:
        out = _instructions(old, delta, i, sizes[1])
    except IndexError:
        raise ValueError("a delta cut short") from None
    if len(out) != sizes[1]:
        raise ValueError("a delta whose result is not its size")
    return bytes(out)


def _instructions(old: bytes, delta: bytes, i: int, size_limit: int) -> bytearray:
    """The result of a delta's instructions from `i` on (stopping past `size_limit` bytes)."""
    out = bytearray()
    while i < len(delta) and len(out) <= size_limit:
        command = delta[i]
        i += 1
        if command & 0x80:  # copy: offset in up to 4 bytes, size in up to 3 (0 meaning 0x10000)
            offset = size = 0
            for bit in range(4):
                if command & (1 << bit):
                    offset, i = offset | delta[i] << (8 * bit), i + 1
            for bit in range(3):
                if command & (0x10 << bit):
                    size, i = size | delta[i] << (8 * bit), i + 1
            size = size or 0x10000
            if offset + size > len(old):
                raise ValueError("a delta copying past the old file")
            out += old[offset : offset + size]
        elif command:  # insert the next `command` bytes
            out += delta[i : i + command]
            i += command
        else:
            raise ValueError("a delta with a reserved instruction")
    return out


def _forward_hunk(section: str) -> tuple[str, int, bytes | str] | None:
    """(kind, size, the inflated data or why it does not decode) of a section's forward binary hunk; None for a
    section in text form."""
    lines = section.split("\n")
    if "GIT binary patch" not in lines:
        return None
    start = lines.index("GIT binary patch") + 1
    hunk = BINARY_HUNK.match(lines[start].rstrip("\r")) if start < len(lines) else None
    if not hunk:
        return "literal", 0, "has no hunk the check can read"
    kind, size, packed = hunk.group(1), int(hunk.group(2)), bytearray()
    try:
        for line in lines[start + 1 :]:
            line = line.rstrip("\r")
            if not line:
                break
            count = ord(line[0]) - (ord("A") - 1 if "A" <= line[0] <= "Z" else ord("a") - 27)
            packed += base64.b85decode(line[1:])[:count]
        if size > MAX_BINARY_BYTES:
            return kind, size, "is too large to read"
        data = zlib.decompressobj().decompress(bytes(packed), MAX_BINARY_BYTES + 1)
    except (ValueError, zlib.error):
        return kind, size, "does not decode"
    if len(data) != size:  # a literal's size is the file's, a delta's its instructions'
        return kind, size, "does not decode to its size"
    return kind, size, data


def _blob_hash(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


__all__ = [
    "UNREADABLE_DELTA",
    "INDEX",
    "new_side",
    "as_literal",
    "literal_hunk",
    "apply_delta",
    "MAX_BINARY_BYTES",
]  # documented in CODE_APPENDIX.md
