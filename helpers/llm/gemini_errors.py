"""Google's error shape, as the Gemini API writes it and the google-genai SDK reads it: one table for the
gateway's own refusals and the scripted server's scripted failures alike."""

from __future__ import annotations

# Google's RPC status names by HTTP status (google.rpc.Code's mapping; 502, which it does not name, as the
# UNAVAILABLE a gateway in front of an unreachable upstream means)
GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def gemini_error(status: int, message: str) -> dict:
    """{"error": {"code", "message", "status"}}: an error body in Google's shape."""
    return {"error": {"code": status, "message": message, "status": GEMINI_STATUS.get(status, "UNKNOWN")}}


__all__ = ["GEMINI_STATUS", "gemini_error"]  # documented in CODE_APPENDIX.md
