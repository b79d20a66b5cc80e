"""Inside the sandbox, first: sets the run's limits, gives up root (when the sandbox started as root), then
becomes COMMAND.

    python -I -S sandbox_drop.py USER PROCESSES FILE_BYTES FOLDER -- COMMAND...

USER: the unprivileged uid (and gid) COMMAND runs as, with no supplementary groups; "-" keeps the caller's.
Root hands it only CAP_SETUID and CAP_SETGID (bwrap --cap-drop ALL --cap-add ...): once every uid is USER,
the kernel clears those too (and the inheritable set is emptied), so COMMAND holds no capability (bwrap has
already set no_new_privs, and its binds are nosuid: no set-uid program gives one back).
PROCESSES: RLIMIT_NPROC ("-": none). The kernel counts it per real uid, so it caps this run only when USER is
this run's own uid. FILE_BYTES: RLIMIT_FSIZE, the largest file COMMAND may write ("-": none).
FOLDER: COMMAND's working directory, entered as USER (root without its capabilities could not enter a folder
that is USER's alone).

No import from this repository (the checkout is not visible inside); ctypes (for capset) only as root.
"""

import _signal
import os
import resource
import sys

TYPE_CHECKING = False  # the checkers' flag, without importing typing into the sandbox's start
if TYPE_CHECKING:
    from types import ModuleType


def _clear_inheritable(ctypes: "ModuleType") -> None:
    """Empty the inheritable capability set too (bwrap put the two it handed over there; with no_new_privs and
    nosuid binds they could give nothing back, but the run holds none, in any set)."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable (x2 words): all empty
    if ctypes.CDLL(None, use_errno=True).capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def main(argv: list[str]) -> int:
    user, processes, file_bytes, folder, separator, *command = argv
    if separator != "--" or not command:
        print("usage: sandbox_drop.py USER PROCESSES FILE_BYTES FOLDER -- COMMAND...", file=sys.stderr)
        return 2
    if processes != "-":
        resource.setrlimit(resource.RLIMIT_NPROC, (int(processes), int(processes)))
    if file_bytes != "-":
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(file_bytes), int(file_bytes)))
    if user != "-":
        import ctypes  # while still root: the interpreter's folder may be root's alone

        uid = int(user)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        _clear_inheritable(ctypes)
        if os.getuid() != uid or os.geteuid() != uid:  # never run COMMAND with more than asked
            print("sandbox: could not give up root", file=sys.stderr)
            return 126
    os.chdir(folder)
    os.environ["PWD"] = folder  # bwrap set it to its own working directory, "/"; tools trust it over getcwd
    # Python ignores SIGPIPE and SIGXFSZ for itself, and an ignored signal stays ignored across exec: the
    # command gets the defaults back (a write past FILE_BYTES then ends the writer, as in a shell).
    for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(sig, _signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        print(f"sandbox: cannot run {command[0]}: {error}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
