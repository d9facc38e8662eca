"""What the OpenAPI document (``/openapi.json``) says beyond the route signatures: the
request bodies, which the routes read themselves (``body.py``), the path's workflow id,
and the problem documents of the error answers.

The routes take the raw request (to bound the body before parsing it), so FastAPI cannot
see their bodies; each route passes ``openapi_extra`` and ``responses`` from here. The
schemas describe the shape only: ``headwater.core.spec.parse_spec`` stays the authority
on a spec (references, cycles, routes), and ``jsoncheck`` on the values PostgreSQL and
Kafka can hold. OpenAPI 3.1 schemas are JSON Schema 2020-12 (OpenAPI 3.1.0, "Schema
Object").
"""

from __future__ import annotations

from typing import Any

from headwater.core.ids import QUEUE_PATTERN
from headwater.core.retry import MAX_ATTEMPTS_LIMIT, MAX_SECONDS
from headwater.topics import WORKFLOW_ID_PATTERN
from services.gateway.problems import PROBLEM_JSON

NODE_ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$"
"""Node ids (``headwater.core.spec``)."""
_SECONDS: dict[str, Any] = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS}


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or ``null``: a spec field whose ``null`` means absent (the default)."""
    return {"anyOf": [schema, {"type": "null"}]}



RETRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "max_attempts": {"type": "integer", "minimum": 1, "maximum": MAX_ATTEMPTS_LIMIT},
        "backoff_base": {"type": "number", "minimum": 0, "maximum": MAX_SECONDS},
        "backoff_max": {"type": "number", "minimum": 0, "maximum": MAX_SECONDS},
        "multiplier": {"type": "number", "minimum": 0, "maximum": 1000},
        "jitter": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
"""A retry policy (``headwater.core.retry``; seconds)."""

NODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "task"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": NODE_ID_PATTERN},
        "kind": {"enum": ["task", "map"], "default": "task"},
        "task": {"type": "string", "minLength": 1},
        "queue": {"type": "string", "pattern": QUEUE_PATTERN.pattern, "default": "cpu"},
        "needs": {"type": "array", "items": {"type": "string"}},
        "input": {"description": "a JSON template; a string that is exactly ${...} is "
                                 "replaced by the value it names"},
        "over": _or_null({"type": "string", "description": "a map's list, e.g. "
                                                          "${input.items}"}),
        "max_concurrency": _or_null({"type": "integer", "minimum": 1}),
        "retry": _or_null(RETRY_SCHEMA),
        "timeout": _or_null(_SECONDS),
        "heartbeat_timeout": _or_null({**_SECONDS, "minimum": 1}),
        "on_error": _or_null({"type": "string"}),
        "continue_on_error": _or_null({"type": "boolean"}),
    },
}
"""One node of a spec (the README's "Workflow specs")."""

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "nodes"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "retry": _or_null(RETRY_SCHEMA),
        "timeout": _or_null(_SECONDS),
        "heartbeat_timeout": _or_null({**_SECONDS, "minimum": 1}),
        "continue_on_error": _or_null({"type": "boolean"}),
        "nodes": {"type": "array", "minItems": 1, "items": NODE_SCHEMA},
        "output": {"description": "a JSON template of the workflow's output"},
    },
}
"""A workflow spec as a JSON object."""

SUBMIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["workflow"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": ["string", "null"], "pattern": WORKFLOW_ID_PATTERN,
               "description": "idempotency key: the same id and body give the same run; "
                              "none or null: the gateway makes one"},
        "workflow": SPEC_SCHEMA,
        "input": {"description": "the workflow's input, any JSON value"},
        "tenant": {"type": ["string", "null"], "maxLength": 200},
    },
}
"""``POST /v1/workflows`` (``models.SubmitRequest``; ``definition`` is refused)."""

CANCEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"reason": {"type": "string", "maxLength": 1000}},
}
"""``POST /v1/workflows/{id}/cancel`` (``models.CancelRequest``); the body is optional."""

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "title", "status"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
        "errors": {"type": "array", "items": {"type": "string"}},
    },
}
"""An RFC 9457 problem document (``problems.problem_response``)."""

_MEANINGS = {
    400: "a malformed header, cursor or query",
    404: "no such workflow",
    409: "the id is taken by another body, or the workflow already finished",
    413: "the body is too large",
    422: "an invalid body or query, naming every fault",
    503: "Kafka or PostgreSQL unavailable, still connecting, or shutting down "
         "(with Retry-After)",
}

WORKFLOW_ID_DOC: dict[str, Any] = {"pattern": WORKFLOW_ID_PATTERN,
                                   "description": "a workflow id (any other is 404)"}
"""The schema extras of the ``{workflow_id}`` path parameter (documented, not enforced:
an id of another form names no workflow)."""


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` entries of error answers, for a route decorator.

    Args:
        statuses: HTTP status codes, each in ``_MEANINGS``.

    Returns:
        ``{status: {"description", "content": {problem+json: schema}}}``.
    """
    return {s: {"description": _MEANINGS[s],
                "content": {PROBLEM_JSON: {"schema": PROBLEM_SCHEMA}}} for s in statuses}


def json_body(schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    """The ``openapi_extra`` of a route whose JSON body is read by the route itself.

    Args:
        schema: the body's JSON Schema.
        required: whether a body must be sent.
    """
    return {"requestBody": {"required": required,
                            "content": {"application/json": {"schema": schema}}}}
