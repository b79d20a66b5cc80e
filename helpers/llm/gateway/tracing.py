"""Traces: each gateway call as an OpenInference LLM span, exported to Phoenix over OTLP/HTTP with the
OpenTelemetry SDK's own exporter (a TracerProvider of the gateway's own, never the global one)."""

from __future__ import annotations

import json
import warnings
from typing import Any

RECORD_FIELDS = (
    "id",
    "client",
    "upstream",
    "method",
    "path",
    "model",
    "stream",
    "status",
    "input_tokens",
    "cached_tokens",
    "output_tokens",
    "cost_usd",
    "latency_s",
    "retries",
    "waited_s",
    "started_at",
    "error",
    "changed",
)


class PhoenixTracer:
    """A Gateway `trace`: each call becomes an OpenInference LLM span in one Phoenix project, sent in batches
    from a background thread. Phoenix down: spans are dropped with one warning, calls go on."""

    def __init__(self, endpoint: str, project: str, *, api_key: str | None = None, timeout_s: float = 5.0):
        from openinference.semconv.resource import ResourceAttributes
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.project = project
        self._provider = TracerProvider(resource=Resource.create({ResourceAttributes.PROJECT_NAME: project}))
        self._provider.add_span_processor(BatchSpanProcessor(_exporter(endpoint, api_key, timeout_s)))
        self._tracer = self._provider.get_tracer("helpers.llm.gateway")

    def __repr__(self) -> str:
        return f"PhoenixTracer(project={self.project!r})"

    def __call__(self, payload: dict) -> None:
        from opentelemetry.trace import Status, StatusCode

        start = int(payload["started_at"] * 1e9)
        name = f"{payload.get('role') or 'llm'} {payload['method']} {payload['path'].split('?')[0]}"
        span = self._tracer.start_span(name, start_time=start, attributes=span_attributes(payload))
        if payload["status"] != 200:
            span.set_status(Status(StatusCode.ERROR, str(payload.get("error") or payload["status"])))
        span.end(end_time=start + int((payload["latency_s"] or 0) * 1e9))

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Send the spans waiting in the batch now; False if that did not finish in time."""
        return self._provider.force_flush(int(timeout_s * 1000))

    def close(self) -> None:
        self._provider.shutdown()


def phoenix_tracer(endpoint: str, project: str, *, api_key: str | None = None) -> PhoenixTracer:
    """A Gateway `trace` sending OpenInference LLM spans to the Phoenix at `endpoint` (its base URL, e.g.
    http://127.0.0.1:6006, or the full .../v1/traces) into project `project`."""
    return PhoenixTracer(endpoint, project, api_key=api_key)


def span_attributes(payload: dict) -> dict[str, Any]:
    """OpenInference attributes of one call: kind LLM, model, token counts, input messages, output
    (text and tool calls), and the token's attributes both as span attributes and as metadata."""
    from openinference.semconv.trace import MessageAttributes as M
    from openinference.semconv.trace import SpanAttributes as S
    from openinference.semconv.trace import ToolCallAttributes as T

    attributes: dict[str, Any] = {
        S.OPENINFERENCE_SPAN_KIND: "LLM",
        S.INPUT_VALUE: payload["request_body"],
        S.INPUT_MIME_TYPE: "application/json",
        S.OUTPUT_VALUE: payload["output_text"] or payload["response_body"],
        S.SESSION_ID: payload["client"],
    }
    if payload.get("model"):
        attributes[S.LLM_MODEL_NAME] = payload["model"]
    counts: dict[str, int | None] = {
        S.LLM_TOKEN_COUNT_PROMPT: payload.get("input_tokens"),
        S.LLM_TOKEN_COUNT_COMPLETION: payload.get("output_tokens"),
    }
    known = [n for n in counts.values() if n is not None]
    if len(known) == len(counts):
        counts[S.LLM_TOKEN_COUNT_TOTAL] = sum(known)
    counts[S.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ] = payload.get("cached_tokens")
    attributes.update({k: v for k, v in counts.items() if v is not None})
    output = {"role": "assistant", "content": payload["output_text"], "tool_calls": payload["output_tool_calls"]}
    for prefix, messages in (
        (S.LLM_INPUT_MESSAGES, payload.get("input_messages") or []),
        (S.LLM_OUTPUT_MESSAGES, [output]),
    ):
        for i, message in enumerate(messages):
            attributes[f"{prefix}.{i}.{M.MESSAGE_ROLE}"] = message["role"]
            attributes[f"{prefix}.{i}.{M.MESSAGE_CONTENT}"] = message["content"]
            for j, call in enumerate(message["tool_calls"]):
                base = f"{prefix}.{i}.{M.MESSAGE_TOOL_CALLS}.{j}."
                attributes[base + T.TOOL_CALL_FUNCTION_NAME] = call.get("name") or ""
                attributes[base + T.TOOL_CALL_FUNCTION_ARGUMENTS_JSON] = call.get("arguments") or ""
    metadata = {
        k: v
        for k, v in payload.items()
        if k not in ("request_body", "response_body", "output_text", "output_tool_calls", "input_messages")
    }
    attributes[S.METADATA] = json.dumps(metadata, default=str)
    for key in set(metadata) - set(RECORD_FIELDS):  # the token's attributes: task, split, loop, role, ...
        value = metadata[key]
        if value is not None:
            attributes[key] = value if isinstance(value, (str, bool, int, float)) else str(value)
    return attributes


def _exporter(endpoint: str, api_key: str | None, timeout_s: float) -> Any:
    """The SDK's OTLP/HTTP span exporter for Phoenix's /v1/traces, warning once when Phoenix does not take
    spans (they are dropped; model calls never wait on it: export runs in the batch processor's thread)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    endpoint = endpoint.rstrip("/")
    url = endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"

    class WarnOnceExporter(OTLPSpanExporter):
        warned = False

        def export(self, spans: Any) -> Any:
            result = super().export(spans)
            if result is not SpanExportResult.SUCCESS and not self.warned:
                self.warned = True
                warnings.warn(
                    f"Phoenix at {url} did not take the gateway's spans; spans are dropped until it "
                    "does. Model calls are not affected.",
                    RuntimeWarning,
                    stacklevel=1,
                )
            return result

    return WarnOnceExporter(
        endpoint=url, headers={"Authorization": f"Bearer {api_key}"} if api_key else None, timeout=timeout_s
    )
