"""The local model server is built portably and checked before use, without building it here.

The build's flags and folder are plain data; the start-up check runs for real against small stand-in
servers (a real process on a real port) that die of SIGILL or answer badly, as llama-server does on a CPU
that refuses an instruction it was built with."""

import signal
import stat
import sys
import textwrap

import pytest

from helpers.stand_ins import local_model as recipe

BEYOND_X86_64_V3 = ("AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AVX_VNNI", "AMX_TILE", "AMX_INT8",
                    "AMX_BF16")


def test_the_default_build_is_for_x86_64_v3_never_for_the_build_machine(monkeypatch):
    monkeypatch.delenv("PL_LLAMA_CPU", raising=False)
    options = recipe.cmake_options(recipe.cpu_target())
    assert recipe.cpu_target() == "x86-64-v3"
    assert "-DGGML_NATIVE=OFF" in options and not any("native" in o.lower() for o in options if o != "-DGGML_NATIVE=OFF")
    for instruction in ("AVX", "AVX2", "FMA", "F16C"):
        assert f"-DGGML_{instruction}=ON" in options
    for instruction in BEYOND_X86_64_V3:  # what the VM advertised and refused (AMX), and all else beyond the level
        assert f"-DGGML_{instruction}=OFF" in options
    assert not any(o.startswith("-DGGML_CPU_ALL_VARIANTS") or o.startswith("-DGGML_BACKEND_DL") for o in options)
    baseline = recipe.cmake_options("x86-64")
    assert "-DGGML_NATIVE=OFF" in baseline and not any(o.startswith("-DGGML_") and o.endswith("=ON") for o in baseline)
    assert "-DGGML_NATIVE=ON" in recipe.cmake_options("native")  # only when asked for by name


def test_an_unknown_cpu_level_is_one_clear_error_naming_the_choices(monkeypatch):
    monkeypatch.setenv("PL_LLAMA_CPU", "haswell")
    with pytest.raises(ValueError, match="PL_LLAMA_CPU='haswell'.*x86-64-v3, x86-64, native"):
        recipe.cpu_target()
    monkeypatch.setenv("PL_LLAMA_CPU", "native")
    assert recipe.cpu_target() == "native"


def test_the_build_folder_changes_with_every_flag_so_an_old_native_build_is_never_reused(monkeypatch, tmp_path):
    monkeypatch.setenv("PL_CACHE_DIR", str(tmp_path))
    folders = {target: recipe.build_dir(target) for target in recipe.CPU_TARGETS}
    assert len(set(folders.values())) == len(folders)
    assert recipe.build_dir("x86-64-v3") == folders["x86-64-v3"]  # stable for the same flags
    old_native = tmp_path / "llama" / f"build-{recipe.LLAMA_CPP_PYTHON}"  # where the native build used to go
    assert old_native not in folders.values()
    monkeypatch.setitem(recipe.CPU_TARGETS, "x86-64-v3", [*recipe.CPU_TARGETS["x86-64-v3"], "-DGGML_LTO=ON"])
    assert recipe.build_dir("x86-64-v3") != folders["x86-64-v3"]
    monkeypatch.setattr(recipe, "LLAMA_CPP_PYTHON", "9.9.9")
    assert recipe.build_dir("native") != folders["native"]


def test_a_binary_left_by_the_old_native_build_is_not_taken_and_the_new_one_is(monkeypatch, tmp_path):
    monkeypatch.setenv("PL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PL_LLAMA_CPU", raising=False)
    old = tmp_path / "llama" / f"build-{recipe.LLAMA_CPP_PYTHON}" / "bin" / "llama-server"
    old.parent.mkdir(parents=True)
    old.touch()
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # so the rebuild stops at its first step, named
    with pytest.raises(RuntimeError, match="Building llama-server needs cmake"):
        recipe.server_binary()
    built = recipe.build_dir("x86-64-v3") / "bin" / "llama-server"
    built.parent.mkdir(parents=True)
    built.touch()
    assert recipe.server_binary() == built


def test_an_illegal_instruction_is_named_with_the_build_that_avoids_it(monkeypatch, tmp_path):
    monkeypatch.delenv("PL_LLAMA_CPU", raising=False)
    log = tmp_path / "server.log"
    for code in (-signal.SIGILL, 128 + signal.SIGILL):  # killed by the signal; or a shell's report of it
        reason = recipe.exit_reason(code, log)
        assert "illegal instruction (SIGILL" in reason and "x86-64-v3" in reason and str(log) in reason
        assert "PL_LLAMA_CPU=x86-64 make local-model-build" in reason
    assert "SIGILL" not in recipe.exit_reason(1, log) and str(log) in recipe.exit_reason(1, log)
    assert "SIGILL" not in recipe.exit_reason(-signal.SIGKILL, log)
    monkeypatch.setenv("PL_LLAMA_CPU", "x86-64")  # already the baseline: no advice to rebuild as the same
    assert "PL_LLAMA_CPU=x86-64 make" not in recipe.exit_reason(-signal.SIGILL, log)


# A stand-in for llama-server: takes its arguments, answers /health, and then does what MODE says when asked
# for a completion. `die-at-start` is killed by SIGILL before it listens, as the AMX build was at load time.
STAND_IN = textwrap.dedent("""\
    #!{python}
    import json, os, signal, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    mode = os.environ["STAND_IN_MODE"]
    if mode == "die-at-start":
        os.kill(os.getpid(), signal.SIGILL)
    print("stand-in serving on port", sys.argv[sys.argv.index("--port") + 1], file=sys.stderr, flush=True)
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass
        def answer(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        def do_GET(self):
            self.answer({{"status": "ok"}})
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            if mode == "die-at-first-completion":
                os.kill(os.getpid(), signal.SIGILL)
            tokens = 0 if mode == "no-tokens" else 3
            self.answer({{"choices": [{{"message": {{"role": "assistant", "content": "Hi" * tokens}}}}],
                          "usage": {{"completion_tokens": tokens}}}})
    HTTPServer(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1])), Handler).serve_forever()
    """)


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    binary = tmp_path / "llama-server"
    binary.write_text(STAND_IN.format(python=sys.executable))
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(recipe, "server_binary", lambda: binary)
    monkeypatch.setattr(recipe, "model_path", lambda: tmp_path / "model.gguf")
    monkeypatch.delenv("PL_LLAMA_CPU", raising=False)
    monkeypatch.setenv("PL_STATE_DIR", str(tmp_path / "state"))  # the servers' logs: never the checkout's
    return tmp_path


@pytest.mark.parametrize("mode", ["die-at-start", "die-at-first-completion"])
def test_a_server_killed_by_an_illegal_instruction_fails_the_build_step_naming_it(stand_in, monkeypatch, capsys, mode):
    monkeypatch.setenv("STAND_IN_MODE", mode)
    server = recipe.LocalModelServer(log_path=stand_in / "server.log")
    with pytest.raises(RuntimeError, match=r"illegal instruction \(SIGILL, exit -4\).*PL_LLAMA_CPU=x86-64"):
        server.start()
    assert server.process.returncode == -signal.SIGILL
    assert recipe.main(["build"]) == 1  # `make local-model-build`: fails, with the reason as its last line
    assert "local model server: llama-server died of an illegal instruction" in capsys.readouterr().err


def test_a_server_that_starts_but_generates_nothing_fails_its_check_and_is_stopped(stand_in, monkeypatch):
    monkeypatch.setenv("STAND_IN_MODE", "no-tokens")
    server = recipe.LocalModelServer(log_path=stand_in / "server.log")
    with pytest.raises(RuntimeError, match="failed its check completion .*without generated tokens"):
        server.start()
    assert server.process.poll() is not None  # stopped, not left running


def test_each_running_server_writes_a_log_of_its_own_in_the_checkouts_state_folder(stand_in, monkeypatch, tmp_path):
    """Two servers at once (two checkouts sharing .cache/llama/ by a link, or two tests): neither truncates nor
    interleaves the other's log, and nothing is written into the shared build folder."""
    monkeypatch.setenv("STAND_IN_MODE", "answers")
    monkeypatch.setenv("PL_CACHE_DIR", str(tmp_path / "cache"))
    with recipe.LocalModelServer() as first, recipe.LocalModelServer() as second:
        logs = [first.log_path, second.log_path]
    assert logs[0] != logs[1] and all(log.parent == tmp_path / "state" / "llama" for log in logs)
    for server, log in zip((first, second), logs):
        assert log.read_text().splitlines() == [f"stand-in serving on port {server.port}"]
    assert not recipe.llama_dir().exists()


def test_a_server_that_answers_its_check_completion_is_ready(stand_in, monkeypatch, capsys):
    monkeypatch.setenv("STAND_IN_MODE", "answers")
    with recipe.LocalModelServer(log_path=stand_in / "server.log") as server:
        assert server.process.poll() is None
    assert server.process.poll() is not None
    assert recipe.main(["build"]) == 0
    assert "answered a short completion" in capsys.readouterr().out
