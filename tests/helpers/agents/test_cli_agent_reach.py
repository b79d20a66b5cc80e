"""A CLI agent's run reaches its base URL (the gateway) from inside the sandbox, even when the gateway is on
another machine (PL_GATEWAY_HOST): there, the agent is handed 127.0.0.1 on the same port."""

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from helpers.agents.base import CLIAgent, Invocation
from helpers.isolation.processes import safe_environment
from helpers.core.protocols import AgentResult
from helpers.isolation.sandbox import unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")


class FetchingAgent(CLIAgent):
    """Prints the base URL it was handed and what fetching it gave (a stand-in for a CLI's first model call)."""

    name, package_dir = "fetching-agent", Path(sys.prefix)

    def invoke(self, task, workspace, state):
        url = self.base_url
        script = f"import urllib.request as u; print({url!r}, u.urlopen({url!r}, timeout=30).read().decode())"
        return Invocation([sys.executable, "-I", "-c", script], safe_environment({"HOME": str(state)}))

    def result(self, task, out, err, timed_out, duration):
        return AgentResult(str(task["instance_id"]), "completed" if out else "error", error=err[-500:], final_text=out)


def test_a_gateway_named_by_a_host_that_is_not_a_loopback_address_is_reached_at_127_0_0_1(tmp_path):
    # The host here is a name (the machine has no other address to try); a driver's address works the same.
    class Page(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(f"gateway saw {self.path}".encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        agent = FetchingAgent("m", base_url=f"http://localhost:{server.server_port}/u/agent/v1", timeout_s=120)
        result = agent.run({"instance_id": "t1", "problem_statement": "x"}, tmp_path, "")
    finally:
        server.shutdown()
    port = server.server_port
    assert result.final_text.split() == [f"http://127.0.0.1:{port}/u/agent/v1", "gateway", "saw", "/u/agent/v1"], \
        result.error
