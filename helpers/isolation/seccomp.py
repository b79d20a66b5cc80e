"""The seccomp filter bwrap installs for a run's command: no new user namespace inside, so no "root" of the agent's
own can mount anything or make a device node.

Apart from confinement.py, which decides a run's privilege and caps and writes this filter into the run's home,
because it is a program of its own: classic BPF for this machine's architecture, as bwrap's --seccomp reads it.
"""

from __future__ import annotations

# A seccomp filter (cBPF, as bwrap --seccomp reads it): no new user namespace inside (unshare or clone with
# CLONE_NEWUSER fail with EPERM; clone3, whose flags a filter cannot read, fails with ENOSYS, so libc falls
# back to clone, as Docker's default profile does). Everything else is allowed.
SECCOMP_FILE = ".seccomp.bpf"  # in the run's home, written by the host before the run; bwrap reads it first
_ARCHES = {  # machine: (audit arch, unshare, clone, clone3), and the 32-bit ABI a 64-bit kernel also runs
    "x86_64": [(0xC000003E, 272, 56, 435), (0x40000003, 310, 120, 435)],
    "aarch64": [(0xC00000B7, 97, 220, 435), (0x40000028, 337, 120, 435)],
}
_CLONE_NEWUSER, _X32 = 0x10000000, 0x40000000
_EPERM, _ENOSYS = 1, 38


def seccomp_program() -> bytes | None:
    """The filter for this machine's architecture, or None (one it does not know: said once)."""
    import platform
    import struct

    arches = _ARCHES.get(platform.machine())
    if not arches:
        return None
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | _EPERM, 0x00050000 | _ENOSYS
    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JSET|K, BPF_RET|K
    program: list[tuple[int, int, int, int]] = []
    for index, (arch, unshare, clone, clone3) in enumerate(arches):
        block = [
            (ld, 0, 0, 0),  # the syscall's number
            *([(jset, 0, 1, _X32), (ret, 0, 0, eperm)] if index == 0 and arch == 0xC000003E else []),
            (jeq, 3, 0, unshare),
            (jeq, 2, 0, clone),
            (jeq, 0, 4, clone3),
            (ret, 0, 0, enosys),
            (ld, 0, 0, 16),  # the low word of its first argument: the flags
            (jset, 0, 1, _CLONE_NEWUSER),
            (ret, 0, 0, eperm),
            (ret, 0, 0, allow),
        ]
        # an architecture check in front of each block: the next block (or allow) when it is not this one
        program += [(ld, 0, 0, 4), (jeq, 0, len(block), arch), *block]
    program.append((ret, 0, 0, allow))
    return b"".join(struct.pack("<HBBI", *instruction) for instruction in program)


__all__ = ["seccomp_program", "SECCOMP_FILE"]  # documented in CODE_APPENDIX.md
