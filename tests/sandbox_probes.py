"""The probes an attacker would run inside an agent run, and what must not come back from them.

The agent contract's probe run (tests/agent_runs.py) has the scripted model ask each real CLI to run PROBE_SCRIPT
through its shell tool, with the provider key SECRET in the test process's environment (as a notebook kernel
started with the key holds it) and the run going through the gateway (which alone holds the key).
"""

import json
import os
import subprocess
import sys
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

from helpers.core.config import REPO_ROOT

SECRET = "probe-secret-" + "4" * 24
# the survivor a probe run leaves if it can: its own per test process (a parallel worker's probe run may be alive now)
DAEMON = f"sleep 4243.{os.getpid()}"
PROBE_SCRIPT = " ; ".join([
    # every environment and command line it can read (the notebook kernel and the gateway hold the key)
    "for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; done > probe_proc.txt 2>/dev/null",
    "for f in /proc/[0-9]*/mem; do head -c 1000000 $f 2>/dev/null; done | grep -a -o 'probe-secret-[0-9]*' > probe_mem.txt",
    # the checkout's .env, through the working folders of other processes, VIRTUAL_ENV and the home folder
    "for f in /proc/[0-9]*/cwd; do ls -a $f/; done > probe_cwd.txt 2>&1; cat $VIRTUAL_ENV/../.env >> probe_cwd.txt 2>&1",
    f"ls -a $HOME ~ /root {REPO_ROOT} > probe_home.txt 2>&1",
    # the hidden tests and gold patches
    "cat .git/objects/info/alternates > probe_hidden.txt 2>&1; find / -name tasks.json >> probe_hidden.txt 2>/dev/null",
    f"(setsid {DAEMON} > /dev/null 2>&1 &)",
    "echo probes done",
])


def added(patch: str, name: str) -> str:
    """The lines a patch adds to the new file `name`."""
    section = patch.split(f"+++ b/{name}\n", 1)[1].split("diff --git", 1)[0] if f"+++ b/{name}" in patch else ""
    return "\n".join(line[1:] for line in section.splitlines() if line.startswith("+"))


def check_nothing_came_back(rows, results: Path, requests_auth: list[str]) -> None:
    """No key anywhere, no hidden tests, no outside files, no survivor; yet the provider got the key."""
    patch = rows["output"][0]
    assert rows["status"][0] == "completed" and "+++ b/probe_proc.txt" in patch, rows["error"][0]
    everything = patch + json.dumps(rows.to_dict("records"), default=str) + "".join(
        p.read_text(errors="replace") for p in results.rglob("*") if p.is_file())
    assert SECRET not in everything  # not in the patch, the rows, the run records or the trajectories
    assert requests_auth and all(SECRET in header for header in requests_auth)  # the gateway sent it upstream
    hidden = added(patch, "probe_hidden.txt")
    assert "No such file" in hidden and "tasks.json" not in hidden and ".cache" not in hidden, hidden
    home = added(patch, "probe_home.txt")
    assert "pyproject.toml" not in home and "act_results" not in home  # the checkout shows only what runs need
    cwd = added(patch, "probe_cwd.txt").splitlines()
    assert ".env" not in cwd and any(".env: No such file" in line for line in cwd)
    assert subprocess.run(["pgrep", "-f", DAEMON], capture_output=True, text=True).stdout.split() == []


# --- what an agent can plant for the host's git, and how to tell whether the host ran it ---------------------
GIT_VECTORS = ("fsmonitor", "clean", "smudge", "extdiff", "external", "textconv", "hook")
# Repositories inside the work tree, each with the same vectors in its own config: a folder with a .git folder
# (`nested`), a .git *file* pointing to a git directory elsewhere (`gitfile`), a submodule the agent added to
# its own repository (`gitlink`: its .git file points into .git/modules). Markers are "<vector>-<where>".
NESTED_REPOSITORIES = ("nested", "gitfile", "gitlink")


def plant_script(markers: Path) -> str:
    """A shell script an agent could run in its workspace: for each of GIT_VECTORS, something git would run
    (on whoever runs git in this workspace next) that touches `markers`/<vector>; plus an ordinary change
    (README.md edited, new.txt added). Inside the sandbox `markers` does not exist, so a marker appears only
    if the host runs what was planted."""
    touch = lambda name: f"touch {markers}/{name}"  # noqa: E731
    hooks = "post-index-change reference-transaction post-checkout pre-commit post-commit pre-auto-gc"
    return " ; ".join([
        f"git config core.fsmonitor '{touch('fsmonitor')}; false'",
        f"git config filter.pl.clean '{touch('clean')}; cat'",
        f"git config filter.pl.smudge '{touch('smudge')}; cat'",
        f"git config filter.pl.required false",
        f"git config diff.pl.command '{touch('extdiff')}; true'",
        f"git config diff.external '{touch('external')}; true'",
        f"git config diff.pl.textconv '{touch('textconv')}; cat'",
        "printf '* filter=pl diff=pl\\n' > .gitattributes",
        f"for h in {hooks}; do printf '#!/bin/sh\\n{touch('hook')}\\n' > .git/hooks/$h; chmod +x .git/hooks/$h; done",
        "git config core.hooksPath .git/hooks",
        "echo 'changed by the agent' >> README.md",
        "echo new > new.txt",
        "echo planted",
    ])


def plant_nested_script(markers: Path) -> str:
    """A shell script making NESTED_REPOSITORIES in its workspace, each with GIT_VECTORS in its own config (and
    attributes naming its filter and diff driver, and a changed file for them to act on), each touching
    `markers`/<vector>-<where> when run; plus an ordinary change (new.txt)."""
    def vectors(folder: str, where: str) -> str:
        touch = lambda name: f"touch {markers}/{name}-{where}"  # noqa: E731
        return " ; ".join([
            f"git -C {folder} config core.fsmonitor '{touch('fsmonitor')}; false'",
            f"git -C {folder} config filter.pl.clean '{touch('clean')}; cat'",
            f"git -C {folder} config filter.pl.smudge '{touch('smudge')}; cat'",
            f"git -C {folder} config diff.pl.command '{touch('extdiff')}; true'",
            f"git -C {folder} config diff.external '{touch('external')}; true'",
            f"git -C {folder} config diff.pl.textconv '{touch('textconv')}; cat'",
            f"mkdir -p $(git -C {folder} rev-parse --git-path hooks)",
            f"printf '#!/bin/sh\\n{touch('hook')}\\n' > $(git -C {folder} rev-parse --git-path hooks)/post-index-change",
            f"chmod +x $(git -C {folder} rev-parse --git-path hooks)/post-index-change",
            f"echo 'changed in {where}' >> {folder}/file.txt",
        ])
    commit = "-c user.name=a -c user.email=a@b -c core.hooksPath=/dev/null commit -qm first"
    repository = lambda folder, init: (f"{init} && printf '* filter=pl diff=pl\\n' > {folder}/.gitattributes && "  # noqa: E731
                                       f"echo first > {folder}/file.txt && git -C {folder} add -A && git -C {folder} {commit}")
    return " ; ".join([
        repository("sub", "git init -q sub"), vectors("sub", "nested"),
        repository("linked", "mkdir -p .store && git init -q --separate-git-dir .store/linked.git linked"),
        vectors("linked", "gitfile"),
        "git -c protocol.file.allow=always submodule add -q \"$PWD/sub\" mod", vectors("mod", "gitlink"),
        "echo new > new.txt",
        "echo planted",
    ])


def markers_found(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir()) if markers.exists() else []

# --- the network: an agent's command reaches the gateway and nothing else on loopback -----------------
LOOPBACK_SECRET = "loopback-secret-" + "5" * 24  # what a service on another loopback port (Phoenix, Ray) holds


@contextmanager
def loopback_service() -> Iterator[ThreadingHTTPServer]:
    """An HTTP server on another loopback port that answers LOOPBACK_SECRET; its `hits` lists its requests."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            server.hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(LOOPBACK_SECRET.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads, server.hits = True, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def fetch_script(port: int) -> str:
    """A shell command fetching the service on `port` into probe_net.txt (its page, or the error), then its exit."""
    fetch = f'import urllib.request as u; print(u.urlopen(\\"http://127.0.0.1:{port}/\\", timeout=20).read().decode())'
    return f'{sys.executable} -I -c "{fetch}" > probe_net.txt 2>&1; echo "exit=$?" >> probe_net.txt'


def check_only_the_gateway_was_reached(rows, requests: list[dict], service: ThreadingHTTPServer, turns: int = 2,
                                       streams: bool = True) -> None:
    """The fetch failed (refused: nothing listens on that port in the sandbox) and the service saw nothing,
    while the run completed: its model calls (`turns` of them with tools at least), before and after the command,
    went through the gateway, streamed where the agent `streams`."""
    patch = rows["output"][0]
    assert rows["status"][0] == "completed", rows["error"][0]
    fetched = added(patch, "probe_net.txt")
    assert "Connection refused" in fetched and fetched.endswith("exit=1"), fetched
    assert LOOPBACK_SECRET not in patch + json.dumps(rows.to_dict("records"), default=str)
    assert service.hits == []
    calls = [r for r in requests if r.get("api") in ("chat", "anthropic", "responses", "gemini") and r["body"].get("tools")]
    assert len(calls) >= turns
    if streams:  # Gemini says so in its path, not its body
        assert all(r["body"].get("stream") or ":streamGenerateContent" in r["path"] for r in calls)
