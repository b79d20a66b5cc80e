"""The gateway's trace for a session with Phoenix: each model call goes to the Phoenix project of its experiment
("<experiment> model calls"), one tracer per project made on its first call, so that a run in Phoenix links to its
agent's whole conversation. Apart from the session (helpers.app.session), which hands it to the gateway it starts."""

from __future__ import annotations

from typing import Any


class ExperimentTracer:
    """A gateway `trace` that sends each call to the Phoenix project of its experiment
    ("<experiment> model calls"), so a run in Phoenix links to its agent's whole conversation."""

    def __init__(self, endpoint: str, api_key: str | None = None):
        self.endpoint, self._api_key = endpoint, api_key
        self._tracers: dict[str, Any] = {}

    def __call__(self, payload: dict) -> None:
        from helpers.llm.gateway import phoenix_tracer

        project = f"{payload.get('experiment') or 'prompt-learning'} model calls"
        if project not in self._tracers:
            self._tracers[project] = phoenix_tracer(self.endpoint, project, api_key=self._api_key)
        self._tracers[project](payload)

    def close(self) -> None:
        for tracer in self._tracers.values():
            tracer.flush()
            tracer.close()


__all__ = ["ExperimentTracer"]  # the public API, documented in CODE_APPENDIX.md
