"""Fixtures the model layer's tests share."""

import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call


@pytest.fixture
def server():
    """The scripted model server on a script both wires are tested with (test_scripted_server, OpenAI's chat API;
    test_scripted_gemini, Gemini's): rules seen in the system prompt, a tool call then "Done.", a default answer.
    A test module with a `server` of its own uses its own."""
    script = Script([
        Rule(system_contains="ALWAYS-WRITE-CHANGELOG", reply=Reply("rules seen")),
        Rule(user_contains="use a tool", reply=[
            Reply("Editing now.", tool_calls=[tool_call("editor", path="a.py", old_text="x = 1", new_text="x = 2")]),
            Reply("Done."),
        ]),
    ], default=Reply("default answer"))
    with ScriptedModelServer(script) as s:
        yield s


@contextmanager
def recorded_upstream(events, first_after_s=0.0):
    """A loopback server that answers every POST with `events` (bytes, each written as it stands) as an SSE stream,
    for what the scripted server does not send (a recorded answer, chunks after the finishing one, an error event
    mid-stream): its headers at once, the events after `first_after_s`; the close ends the answer (HTTP/1.0).
    Yields its origin, http://127.0.0.1:<port>."""
    class Recorded(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.flush()
            time.sleep(first_after_s)
            for event in events:
                self.wfile.write(event)

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Recorded)
    # shutdown() waits for the next poll: 0.05 s, not the default 0.5 s, per server stopped
    threading.Thread(target=upstream.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{upstream.server_address[1]}"
    finally:
        upstream.shutdown()
        upstream.server_close()
