"""The sandbox's new construction (issue 51's start: an idmapped lower layer, prlimit then setpriv, the run's network
made by the host with the relay listening in it, namespaces made one ahead) attacked from inside a run, through the
public entry point every agent run and grading uses (helpers.isolation.processes.run_cli with sandbox="required").

Each attack is a bare `bash -c` or `python3 -c` as the run's own uid (no agent CLI): the cheap probes share one run
(the `probed` fixture). A plain test is an attack that HOLDS; the one that got through (a folder above a read-only
one moved aside) is closed in helpers/isolation/sandbox.py (_pinned) and its test shows it."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from helpers.core import config
from helpers.isolation.confinement import Limits
from helpers.isolation.netns import host_makes_network
from helpers.isolation.processes import remove_scratch, run_cli, scratch_dir
from helpers.isolation.sandbox import unavailable_reason
from helpers.isolation.scratch import scratch_root

pytestmark = [
    pytest.mark.xdist_group("sandbox-construction"),  # one worker: the probe run is made once
    pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the construction attacked (own uid, idmap, setpriv, host netns) is root's"),
]
ROOT = Path(__file__).resolve().parents[2]


def sandboxed(args, *, reach=None, read_only=(), prepare=None, limits=None):
    """(stdout, stderr) of `args` run in the sandbox in a fresh workspace and home (`prepare(workspace, home)` first),
    then removed (nothing may be left)."""
    scratch = scratch_dir("run")
    workspace, home = scratch / "ws", scratch / "home"
    workspace.mkdir(), home.mkdir()
    try:
        if prepare:
            prepare(workspace, home)
        out, err, timed_out, *_ = run_cli(list(args), workspace, {"PATH": "/usr/bin:/bin", "HOME": str(home)}, "", 120,
                                         set(), threading.Lock(), home=home, sandbox="required", reach=reach,
                                         read_only=[workspace / p for p in read_only], limits=limits or Limits())
        assert not timed_out, err
        return out, err
    finally:
        assert remove_scratch(scratch) == []


def verdicts(out: str) -> dict[str, str]:
    """{probe: "OK ..." or "REFUSED ..."} from the probe script's lines."""
    return dict(line.split(" ", 1) for line in out.splitlines() if line.startswith("probe:"))


PROBES = r'''
import ctypes, os, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
HOST_PORT, GATEWAY_PORT, ABSTRACT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def probe(name, attempt):
    try:
        print(f"probe:{name} OK {attempt()!r}", flush=True)
    except Exception as error:
        print(f"probe:{name} REFUSED {error!r}", flush=True)

def call(name, *args):
    result = getattr(libc, name)(*args)
    if result < 0:
        raise OSError(ctypes.get_errno(), name)
    return result

def write(path, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        return os.write(fd, data)
    finally:
        os.close(fd)

def connect(address, family=socket.AF_INET):
    with socket.socket(family) as sock:
        sock.settimeout(3)
        sock.connect(address)
    return "connected"

def bind(address, family=socket.AF_INET, reuse=False):
    sock = socket.socket(family)
    if reuse:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    sock.listen()
    return "bound"

status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
print("status", *(f"{k}={status[k].strip()}" for k in ("CapInh", "CapPrm", "CapEff", "CapAmb", "NoNewPrivs", "Seccomp")))
print("fds", sorted(int(fd) for fd in os.listdir("/proc/self/fd")))
print("uid", os.getuid(), os.getgid(), os.getgroups())
# regaining a uid or a capability after setpriv
probe("setuid-root", lambda: os.setuid(0))
probe("setgid-root", lambda: os.setgid(0))
probe("setgroups-root", lambda: os.setgroups([0]))
probe("uid_map", lambda: write("/proc/self/uid_map", b"0 0 1\n"))
probe("gid_map", lambda: write("/proc/self/gid_map", b"0 0 1\n"))
probe("setgroups-file", lambda: write("/proc/self/setgroups", b"allow"))
probe("ambient-raise", lambda: call("prctl", 47, 2, 21, 0, 0))  # PR_CAP_AMBIENT_RAISE CAP_SYS_ADMIN
probe("no-new-privs-off", lambda: call("prctl", 38, 0, 0, 0, 0))
probe("unshare-user", lambda: call("unshare", 0x10000000))
probe("unshare-net", lambda: call("unshare", 0x40000000))
probe("unshare-mount", lambda: call("unshare", 0x00020000))
probe("clone3", lambda: call("syscall", 435, 0, 0))
probe("setns-init-net", lambda: call("setns", os.open("/proc/1/ns/net", os.O_RDONLY), 0))
probe("setns-init-user", lambda: call("setns", os.open("/proc/1/ns/user", os.O_RDONLY), 0))
probe("mount-tmpfs", lambda: call("mount", b"none", b"/tmp", b"tmpfs", 0, None))
probe("open_tree", lambda: call("syscall", 428, -100, b"/etc", 1))
probe("fsopen", lambda: call("syscall", 430, b"tmpfs", 0))
probe("cgroup-files", lambda: os.listdir("/sys/fs/cgroup"))
probe("kernel-setting", lambda: write("/proc/sys/kernel/hostname", b"x"))
probe("sysrq", lambda: write("/proc/sysrq-trigger", b"h"))
# no mount inside honours a set-uid bit or a file capability (the bounding set stays full: NoNewPrivs and this hold)
print("set-uid mounts", [line.split()[4] for line in open("/proc/self/mountinfo") if "nosuid" not in line.split()[5]])
# the kernel's keyrings: the session keyring is the run's own uid's, not the driver's (a key added stays with the uid)
buffer = ctypes.create_string_buffer(256)
libc.syscall(250, 6, libc.syscall(250, 0, -3, 0), buffer, 256)  # keyctl DESCRIBE of KEY_SPEC_SESSION_KEYRING
print("session keyring", buffer.value.decode().split(";")[-1])
# the sandbox's init (bwrap, root's) and what it holds
probe("ptrace-init", lambda: call("ptrace", 16, 1, 0, 0))  # PTRACE_ATTACH
probe("init-memory", lambda: open("/proc/1/mem", "rb").read(1))
probe("init-environ", lambda: open("/proc/1/environ", "rb").read(1))
probe("init-signal", lambda: os.kill(1, 0))
probe("init-pidfd_getfd", lambda: call("syscall", 438, call("syscall", 434, 1, 0), 0, 0))
# the idmapped lower layer: its files are the run's there, nothing of them may become root's, a device or a capability
probe("chown-lower-to-root", lambda: os.chown("lowerfile", 0, 0))
probe("file-capability", lambda: os.setxattr("lowerfile", "security.capability",
                                             bytes.fromhex("0100000201000000000000000000000000000000")))
probe("overlay-redirect", lambda: os.setxattr("sub", "trusted.overlay.redirect", b"/etc"))
probe("overlay-metacopy", lambda: os.setxattr("lowerfile", "trusted.overlay.metacopy", b""))
probe("device-node", lambda: os.mknod("mem", 0o600 | 0o020000, os.makedev(1, 1)))
probe("hard-link-host-file", lambda: os.link("/etc/passwd", "passwd"))
probe("hard-link-interpreter", lambda: os.link(os.path.realpath(sys.executable), "python"))
open(os.environ["HOME"] + "/mine", "w").close()
probe("hard-link-home-to-workspace", lambda: os.link(os.environ["HOME"] + "/mine", "mine"))
os.chmod("lowerfile", 0o6755)  # the run's own file, set-uid and set-gid: inert, the host checks
# the network: only the gateway's address and port, nothing of the host's
probe("host-abstract-socket", lambda: connect("\0" + ABSTRACT, socket.AF_UNIX))
probe("host-loopback-port", lambda: connect(("127.0.0.1", HOST_PORT)))
probe("gateway-ipv6", lambda: connect(("::1", GATEWAY_PORT), socket.AF_INET6))
probe("raw-socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
probe("packet-socket", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))
probe("relay-port-taken-again", lambda: bind(("127.0.0.1", GATEWAY_PORT), reuse=True))
probe("relay-port-on-any", lambda: bind(("0.0.0.0", GATEWAY_PORT), reuse=True))
probe("interfaces", lambda: sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else
      [line.split(":")[0].strip() for line in open("/proc/net/dev").read().splitlines()[2:]])
print("gateway", connect(("127.0.0.1", GATEWAY_PORT)))
# a flood of half-open connections (a request line, never finished) to the relay
held = []
try:
    for _ in range(200):  # past the listener's backlog (128) and the cap (32): the relay must drain them
        sock = socket.socket()
        sock.settimeout(3)
        sock.connect(("127.0.0.1", GATEWAY_PORT))
        sock.send(b"POST /v1/chat/completions HTTP/1.1\r\n")
        held.append(sock)
except OSError as error:
    print("flood ended", error)
print("flood", len(held))
time.sleep(0.5)
'''


@pytest.fixture(scope="module")
def probed():
    """One run of PROBES, with a host listener on an abstract socket and on a loopback port, and a gateway (a listener
    that accepts and holds every connection); the host's descriptors and threads sampled while it runs."""
    abstract = socket.socket(socket.AF_UNIX)
    name = f"pl-redteam-host-{os.getpid()}"
    abstract.bind("\0" + name)
    abstract.listen()
    host = socket.create_server(("127.0.0.1", 0))
    gateway = socket.create_server(("127.0.0.1", 0), backlog=4096)
    accepted: list[socket.socket] = []
    stop = threading.Event()
    peak = {"fds": 0, "threads": 0, "at once": 0}

    def accept():
        gateway.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(gateway.accept()[0])
            except OSError:
                pass

    def sample():
        while not stop.wait(0.05):
            peak["fds"] = max(peak["fds"], len(os.listdir("/proc/self/fd")))
            peak["threads"] = max(peak["threads"], len(os.listdir("/proc/self/task")))
            open_ones = sum(1 for sock in list(accepted) if _open(sock))
            peak["at once"] = max(peak["at once"], open_ones)

    before = {"fds": len(os.listdir("/proc/self/fd")), "threads": len(os.listdir("/proc/self/task"))}
    helpers = [threading.Thread(target=accept, daemon=True), threading.Thread(target=sample, daemon=True)]
    for thread in helpers:
        thread.start()

    def prepare(workspace, home):
        (workspace / "lowerfile").write_text("the host's file\n")
        (workspace / "sub").mkdir()

    try:
        out, err = sandboxed(["python3", "-c", PROBES, str(host.getsockname()[1]), str(gateway.getsockname()[1]), name],
                             reach=f"http://127.0.0.1:{gateway.getsockname()[1]}", prepare=prepare)
    finally:
        stop.set()
        for thread in helpers:
            thread.join()
        for sock in [abstract, host, gateway, *accepted]:
            sock.close()
    return {"out": out, "err": err, "verdicts": verdicts(out), "before": before, "peak": peak}


def _open(sock: socket.socket) -> bool:
    """Whether the relay still holds the gateway's end of `sock` (no EOF waiting on it)."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def _line(out: str, key: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(key + " "))


REGAIN = ["setuid-root", "setgid-root", "setgroups-root", "uid_map", "gid_map", "setgroups-file", "ambient-raise",
          "no-new-privs-off", "unshare-user", "unshare-net", "unshare-mount", "clone3", "setns-init-net",
          "setns-init-user", "mount-tmpfs", "open_tree", "fsopen", "cgroup-files", "kernel-setting", "sysrq"]
INIT = ["ptrace-init", "init-memory", "init-environ", "init-signal", "init-pidfd_getfd"]
IDMAPPED = ["chown-lower-to-root", "file-capability", "overlay-redirect", "overlay-metacopy", "device-node",
            "hard-link-host-file", "hard-link-interpreter", "hard-link-home-to-workspace"]
NETWORK = ["host-abstract-socket", "host-loopback-port", "gateway-ipv6", "raw-socket", "packet-socket",
           "relay-port-taken-again", "relay-port-on-any"]


def test_held_after_setpriv_the_run_holds_no_capability_in_any_set_no_new_privs_and_no_descriptor_of_the_hosts(probed):
    out = probed["out"]
    assert _line(out, "status").split()[1:] == ["CapInh=0000000000000000", "CapPrm=0000000000000000",
                                                "CapEff=0000000000000000", "CapAmb=0000000000000000",
                                                "NoNewPrivs=1", "Seccomp=2"], probed["err"]
    uid, gid, groups = _line(out, "uid").split(" ", 1)[1].split(" ", 2)
    assert int(uid) >= 2**30 and uid == gid and groups == "[]"  # the run's own uid, no supplementary group
    assert _line(out, "fds") == "fds [0, 1, 2, 3]"  # stdin, stdout, stderr and listdir's own: nothing inherited
    assert _line(out, "set-uid mounts") == "set-uid mounts []"
    assert _line(out, "session keyring") == f"session keyring _uid_ses.{uid}"  # no keyring of the driver's


@pytest.mark.parametrize("attempt", REGAIN + INIT)
def test_held_no_uid_capability_map_or_namespace_is_regained_and_the_sandboxs_init_is_out_of_reach(probed, attempt):
    assert probed["verdicts"][f"probe:{attempt}"].startswith("REFUSED"), probed["verdicts"]


@pytest.mark.parametrize("attempt", IDMAPPED)
def test_held_through_the_idmapped_layer_no_file_becomes_roots_a_device_a_capability_or_a_link_to_the_host(
        probed, attempt):
    assert probed["verdicts"][f"probe:{attempt}"].startswith("REFUSED"), probed["verdicts"]


@pytest.mark.parametrize("attempt", NETWORK)
def test_held_the_network_holds_the_gateways_address_and_port_only(probed, attempt):
    assert probed["verdicts"][f"probe:{attempt}"].startswith("REFUSED"), probed["verdicts"]


def test_held_the_run_sees_only_lo_and_reaches_the_gateway(probed):
    assert probed["verdicts"]["probe:interfaces"] == "OK ['lo']"
    assert _line(probed["out"], "gateway") == "gateway connected"


def test_held_a_flood_of_half_open_connections_costs_the_driver_a_bounded_number_of_descriptors_and_threads(probed):
    assert int(_line(probed["out"], "flood").split()[1]) > config.RELAY_MAX_CONNECTIONS  # the flood was let in
    before, peak = probed["before"], probed["peak"]
    # the relay's listener queue holds the rest: each connection it carries costs two descriptors, no thread
    assert peak["at once"] <= config.RELAY_MAX_CONNECTIONS, peak
    assert peak["fds"] <= before["fds"] + 2 * config.RELAY_MAX_CONNECTIONS + 48, (before, peak)
    assert peak["threads"] <= before["threads"] + 8, (before, peak)


# --- the one that got through, closed: a folder above a read-only one moved aside -----------------------------------
MOVE_ASIDE = r'''
import os, shutil
def attempt(name, do):
    try:
        do()
        print(name, "DONE")
    except OSError as error:
        print(name, "REFUSED", error.errno)
attempt("rename-parent", lambda: os.rename("tests", "moved"))
attempt("rename-grandparent-in-home", lambda: os.rename(os.environ["HOME"] + "/cache", os.environ["HOME"] + "/moved"))
attempt("rename-middle", lambda: os.rename("tests/unit", "tests/moved"))
attempt("rename-read-only-itself", lambda: os.rename("tests/unit/hidden", "tests/unit/moved"))
attempt("remove-parent", lambda: shutil.rmtree("tests"))
attempt("write-read-only", lambda: open("tests/unit/hidden/test_x.py", "w").write("def test_x(): pass\n"))
attempt("plant", lambda: (os.makedirs("tests/unit/hidden", exist_ok=True),
                          open("tests/unit/hidden/test_new.py", "w").write("def test_x(): pass\n")))
attempt("write-beside", lambda: open("tests/unit/conftest.py", "w").write("# the run's own\n"))
print("hidden", open("tests/unit/hidden/test_x.py").read().strip())
print("home", open(os.environ["HOME"] + "/cache/deep/kept/value").read().strip())
'''


def test_a_folder_above_a_read_only_one_cannot_be_renamed_or_removed_to_put_another_in_its_place():
    # Before: `mv tests moved; mkdir -p tests/unit/hidden` put the run's own tests where the read-only ones were
    # (only the read-only folder itself was a mount point). Now each folder above it is one too (the kernel's EBUSY).
    def prepare(workspace, home):
        (workspace / "tests/unit/hidden").mkdir(parents=True)
        (workspace / "tests/unit/hidden/test_x.py").write_text("def test_x(): assert False\n")
        (workspace / "tests/other.py").write_text("x = 1\n")
        (home / "cache/deep/kept").mkdir(parents=True)
        (home / "cache/deep/kept/value").write_text("kept\n")

    out, err = _with_home_read_only(prepare)
    said = dict(line.split(" ", 1) for line in out.splitlines())
    for name in ("rename-parent", "rename-grandparent-in-home", "rename-middle", "rename-read-only-itself",
                 "remove-parent", "write-read-only", "plant"):
        assert said[name].startswith("REFUSED"), (name, out, err)
    assert said["write-beside"] == "DONE"  # the folders above stay the run's to write in
    assert said["hidden"] == "def test_x(): assert False" and said["home"] == "kept"


def _with_home_read_only(prepare):
    """MOVE_ASIDE run with tests/unit/hidden (in the workspace) and cache/deep/kept (in the home) read-only."""
    scratch = scratch_dir("run")
    workspace, home = scratch / "ws", scratch / "home"
    workspace.mkdir(), home.mkdir()
    try:
        prepare(workspace, home)
        out, err, timed_out, *_ = run_cli(["python3", "-c", MOVE_ASIDE], workspace,
                                         {"PATH": "/usr/bin:/bin", "HOME": str(home)}, "", 120, set(), threading.Lock(),
                                         home=home, sandbox="required", limits=Limits(),
                                         read_only=[workspace / "tests/unit/hidden", home / "cache/deep/kept"])
        assert not timed_out, err
        return out, err
    finally:
        assert remove_scratch(scratch) == []


# --- what is made ahead is handed out once; what a run leaves ends with it --------------------------------------------
WHO = ('echo "$(id -u) $(readlink /proc/self/ns/net)"; python3 -c "import socket,time; s=socket.create_server('
       "('127.0.0.1', 47123)); time.sleep(1.5)\" & sleep 0.5; python3 -c \"import socket; socket.create_connection("
       "('127.0.0.1', 47123), 2); print('reached its own')\"; wait")


def test_held_runs_at_once_and_after_each_other_never_share_a_uid_or_a_network_made_ahead():
    results: list[str] = []

    def one():
        results.append(sandboxed(["bash", "-c", WHO], reach="http://127.0.0.1:9")[0])

    threads = [threading.Thread(target=one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    one()  # the next run: the ones made ahead while the others ran
    assert len(results) == 4 and all("reached its own" in out for out in results), results
    uids = [out.split()[0] for out in results]
    networks = [out.split()[1] for out in results]
    assert len(set(uids)) == 4 and len(set(networks)) == 4, results  # each run binds 47123 in its own network
    if host_makes_network():
        here = os.readlink("/proc/self/ns/net")
        assert here not in networks


DRIVER = textwrap.dedent('''
    import sys, threading
    sys.path.insert(0, {root!r})
    from helpers.isolation.confinement import Limits
    from helpers.isolation.processes import run_cli, scratch_dir
    scratch = scratch_dir("run")
    workspace, home = scratch / "ws", scratch / "home"
    workspace.mkdir(), home.mkdir()
    run_cli(["bash", "-c", 'echo "$(id -u) $(readlink /proc/self/ns/net)" > $HOME/who; sleep 300'], workspace,
            {{"PATH": "/usr/bin:/bin", "HOME": str(home)}}, "", 600, set(), threading.Lock(), home=home,
            sandbox="required", reach="http://127.0.0.1:9", limits=Limits())
''')


def _started(pid: str) -> int:
    """A process's start, in clock ticks since boot (/proc/<pid>/stat, field 22)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def _now() -> int:
    return int(float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK")) + 1


def _processes(between: tuple[int, int], which: Callable[[str], bool]) -> list[int]:
    """The host's processes that started in `between` (ticks) and are `which` (a test of the pid; a process gone or
    unreadable meanwhile is not): a run's leftovers can only be among them. Other workers' runs started later may
    hold the same uid, or a namespace numbered alike, once this one has ended."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if between[0] <= _started(pid) <= between[1] and which(pid):
                found.append(int(pid))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _holders(network: str, between: tuple[int, int]) -> list[int]:
    """The host's processes in the network namespace `network` ("net:[inode]") or holding a descriptor of it."""
    return _processes(between, lambda pid: os.readlink(f"/proc/{pid}/ns/net") == network or any(
        os.readlink(f"/proc/{pid}/fd/{fd}") == network for fd in os.listdir(f"/proc/{pid}/fd")))


def _of_uid(uid: int, between: tuple[int, int]) -> list[int]:
    return _processes(between, lambda pid: os.stat(f"/proc/{pid}").st_uid == uid)


def _orphaned_helpers(between: tuple[int, int]) -> list[int]:
    """User-namespace helpers (`unshare --user cat`, which becomes `cat` in a user namespace of its own) whose driver
    is gone: reparented to init."""
    host = os.readlink("/proc/self/ns/user")

    def orphaned(pid: str) -> bool:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        return name in ("cat", "unshare") and parent == 1 and os.readlink(f"/proc/{pid}/ns/user") != host

    return _processes(between, orphaned)


def test_held_a_killed_driver_leaves_no_process_of_the_runs_uid_no_holder_of_its_network_and_no_helper():
    began = _now() - 1
    driver = subprocess.Popen([sys.executable, "-c", DRIVER.format(root=str(ROOT))], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        who = None
        while time.monotonic() < deadline and who is None:
            for found in scratch_root().glob(f"{driver.pid}-*/run-*/home/who"):
                text = found.read_text().split()
                who = text if len(text) == 2 else None
            time.sleep(0.1)
        assert who, "the run never started"
        uid, network = int(who[0]), who[1]
        assert _of_uid(uid, (began, _now())) and _holders(network, (began, _now()))  # what a kill must end
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
    run = (began, _now())  # the run's processes all started in here: later ones are other tests' runs
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (_of_uid(uid, run) or _holders(network, run)):
        time.sleep(0.1)
    assert _of_uid(uid, run) == [] and _holders(network, run) == [] and _orphaned_helpers(run) == []
    # its scratch folder (mounts and cgroup with it) is the next start's sweep's: helpers/isolation/test_confinement.py
    from helpers.isolation.processes import sweep_stale

    sweep_stale()
    assert not list(scratch_root().glob(f"{driver.pid}-*"))


# --- the host's own programs, found from the agent's folder (closed: helpers.isolation.sandbox.host_program) ---------
@pytest.mark.parametrize("path", [":/usr/bin:/bin", ".:/usr/bin:/bin", "node_modules/.bin:/usr/bin:/bin"])
def test_a_relative_path_entry_never_runs_the_agents_sh_bwrap_or_git_on_the_host(monkeypatch, path):
    # Before: with "" (or ".", or a relative folder) in PATH, Popen(cwd=workspace) found the workspace's `sh` and
    # the host ran it as root, outside the sandbox, before the sandbox started; git(cwd=workspace) likewise.
    from helpers.families.coding.git import git

    marker = scratch_dir("marker") / "ran"

    def prepare(workspace, home):
        for folder in (workspace, workspace / "node_modules/.bin"):
            folder.mkdir(parents=True, exist_ok=True)
            for name in ("sh", "bwrap", "nsenter", "git"):
                (folder / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
                (folder / name).chmod(0o755)
        assert git("init", "-q", cwd=workspace).returncode == 0  # the host's git, in the agent's folder

    monkeypatch.setenv("PATH", path)  # the driver's PATH, and the run's (safe_environment keeps PATH)
    scratch = scratch_dir("run")
    workspace, home = scratch / "ws", scratch / "home"
    workspace.mkdir(), home.mkdir()
    try:
        prepare(workspace, home)
        out, err, timed_out, *_ = run_cli(["/bin/sh", "-c", "echo inside"], workspace, {"PATH": path, "HOME": str(home)}, "",
                                         120, set(), threading.Lock(), home=home, sandbox="required", limits=Limits(),
                                         reach="http://127.0.0.1:9")
    finally:
        assert remove_scratch(scratch) == []
    assert not marker.exists(), marker.read_text()
    assert out == "inside\n", err  # the run started (inside, its PATH is its own business)
    remove_scratch(marker.parent)
