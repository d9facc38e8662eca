"""Request bodies: read within a size limit, parse into a model, check the JSON values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, TypeAdapter, ValidationError

from services.gateway.edge.jsoncheck import first_fault
from services.gateway.edge.problems import Problem

ModelT = TypeVar("ModelT", bound=BaseModel)
_JSON: TypeAdapter[Any] = TypeAdapter(Any)


BODY_SETTING = "HEADWATER_MAX_BODY_BYTES"
"""The setting that bounds a body (``Settings.max_body_bytes``)."""
PAYLOAD_SETTING = "HEADWATER_MAX_PAYLOAD_BYTES"
"""The setting that bounds the body of a submission or a signal, whose large values go
by reference (``Settings.max_payload_bytes``)."""


async def read_limited(request: Request, limit: int, setting: str = BODY_SETTING) -> bytes:
    """Read the whole body.

    Args:
        request: the request.
        limit: largest accepted body, bytes.
        setting: the setting ``limit`` comes from, named in a 413.

    Returns:
        The body.

    Raises:
        Problem: 413 when the body (declared or actual) exceeds ``limit``.
    """
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit, setting)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit, setting)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int, setting: str) -> Problem:
    return Problem(413, "Request too large", f"the body exceeds {limit} bytes ({setting})",
                   setting=setting, max_body_bytes=limit)


def parse_body(model: type[ModelT], body: bytes) -> ModelT:
    """Parse a JSON body into ``model``.

    Raises:
        Problem: 422 listing every fault in ``errors`` (``"<field>: <message>"``).
    """
    try:
        return model.model_validate_json(body)
    except ValidationError as e:
        errors = [f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
                  for err in e.errors()]
        raise Problem(422, "Invalid request", "; ".join(errors), errors=errors) from e


def parse_json(body: bytes, what: str) -> Any:
    """Parse a JSON body into plain values, as ``parse_body`` parses a model's fields.

    Integers keep every digit (orjson would turn one beyond 64 bits into a float), so
    ``require_storable`` sees, and refuses, what the other bodies' checks refuse.

    Args:
        body: the body.
        what: what the body is, for the detail (e.g. ``"the body (the run's input)"``).

    Raises:
        Problem: 422 when the body is not JSON (``errors``: ``"body: <message>"``).
    """
    try:
        return _JSON.validate_json(body)
    except ValidationError as e:
        message = e.errors()[0]["msg"]
        raise Problem(422, "Invalid request", f"{what} must be JSON: {message}",
                      errors=[f"body: {message}"]) from e


def require_storable(values: Mapping[str, Any]) -> None:
    """Check JSON values before they reach PostgreSQL and Kafka (``jsoncheck``).

    Args:
        values: each value by the name its paths start with, e.g. ``{"input": ...}``.

    Raises:
        Problem: 422 naming the path of the first offending value, e.g.
            ``input.a.b[3]: contains U+0000``.
    """
    for name, value in values.items():
        fault = first_fault(value, name)
        if fault is not None:
            raise Problem(422, "Invalid request", fault, errors=[fault])
