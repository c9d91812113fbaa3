"""Layer 4 (external_api): how a refusal is answered, by route family.

Every refusal is one line. LeanCopilot's routes and ``/retrieve`` answer ``{"detail": message}``
with the error's own status, and a body that does not validate is a 422 (what their clients
expect). The OpenAI-compatible routes (``/v1/...``) answer as OpenAI and vLLM do, so that the
``openai`` package raises ``BadRequestError`` for every bad request: status 400 for any request
the server refuses before a model sees it (a body that does not validate, a limit, a context
overflow), and the body ``{"error": {"message", "type", "param", "code"}}`` (plus ``detail``),
``param`` naming the field as OpenAI does (``messages[0].content``) and ``code`` OpenAI's
(``invalid_type``, ``invalid_value``, ``missing_required_parameter``, ``unsupported_parameter``,
``context_length_exceeded``, ``model_not_found``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import APIServerError, BadAPIRequestError, ServerOverloadedError, UnknownModelError

Refusal = tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]
"""An error answer: status, JSON body, extra headers."""


def is_openai(path: str) -> bool:
    """Whether ``path`` is one of the OpenAI-compatible routes (answered in OpenAI's shape)."""
    return path.startswith("/v1/")


def error_body(
    path: str, status: int, message: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """The body of an error answer on ``path``: OpenAI's shape on ``/v1/...`` (which its
    clients read), ``{"detail": message}`` elsewhere."""
    if is_openai(path):
        kind = "invalid_request_error" if status < 500 else "server_error"
        error = {"message": message, "type": kind, "param": param, "code": code}
        return {"error": error, "detail": message}
    return {"detail": message}


def api_error(path: str, exc: APIServerError) -> Refusal:
    """The answer to ``exc`` raised while serving ``path``."""
    headers: list[tuple[bytes, bytes]] = []
    if isinstance(exc, ServerOverloadedError):
        headers = [(b"retry-after", str(max(1, math.ceil(exc.retry_after))).encode())]
    status, code = exc.status, exc.code
    if is_openai(path):
        if isinstance(exc, UnknownModelError):
            code = code or "model_not_found"
        elif isinstance(exc, BadAPIRequestError):
            status = 400  # OpenAI's status for every request it refuses (413 and 422 too)
    return status, error_body(path, status, str(exc), code, exc.param), headers


def validation_error(path: str, errors: Sequence[Mapping[str, Any]]) -> Refusal:
    """The answer to a body that does not validate (pydantic's ``errors``, located as FastAPI
    locates them: ``("body", field, ...)``): a 422 naming the field, or on the OpenAI routes a
    400 with OpenAI's ``param`` and ``code``."""
    if not is_openai(path):
        return 422, error_body(path, 422, validation_message(errors)), []
    first = errors[0] if errors else {}
    param = openai_param(first.get("loc", ()))
    message = validation_message(errors, openai=True)
    code = _openai_code(first)
    return 400, error_body(path, 400, message, code, param), []


def in_body(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """pydantic's errors of a body validated by hand, located as FastAPI locates them."""
    return [{**e, "loc": ("body", *e.get("loc", ()))} for e in errors]


def openai_param(loc: Iterable[object]) -> str | None:
    """A field's location as OpenAI names it: ``("body", "messages", 0, "role")`` →
    ``messages[0].role``; None for the body itself."""
    out = ""
    for part in loc:
        if part == "body" and not out:
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or None


def validation_message(errors: Iterable[Mapping[str, Any]], *, openai: bool = False) -> str:
    """pydantic's errors as one line: ``k: Input should be ...; ...`` (the field as OpenAI
    names it with ``openai``, ``local_premises.0`` style otherwise)."""
    parts = []
    for err in list(errors)[:5]:
        raw = tuple(err.get("loc", ()))
        if openai:
            loc = openai_param(raw) or "body"
        else:
            loc = ".".join(str(x) for x in raw if x != "body") or "body"
        if err.get("type") == "json_invalid":
            why = (err.get("ctx") or {}).get("error", "")
            parts.append(f"the body is not valid JSON ({why})" if why else "the body is not JSON")
            continue
        if raw == ("body",) and str(err.get("type", "")).endswith("_type"):
            parts.append("the body must be a JSON object (sent as Content-Type: application/json)")
            continue
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _openai_code(err: Mapping[str, Any]) -> str | None:
    """OpenAI's ``error.code`` for one of pydantic's errors."""
    kind = str(err.get("type", ""))
    if kind == "json_invalid" or tuple(err.get("loc", ())) == ("body",):
        return None
    if kind == "missing":
        return "missing_required_parameter"
    if kind.endswith(("_type", "_parsing")) or kind in ("model_attributes_type", "none_required"):
        return "invalid_type"
    return "invalid_value"
