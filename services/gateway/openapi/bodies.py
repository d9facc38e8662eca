"""What the OpenAPI document (``/openapi.json``) says beyond the route signatures: the
request bodies, which the routes read themselves (``edge.body``), and the path's workflow
id. The definitions resource's bodies and answers are ``openapi.definitions``'s; the error
answers are ``openapi.problems``'s (``problems``); ``openapi.document``
completes the document with the answers' schemas and every example.

The routes take the raw request (to bound the body before parsing it), so FastAPI cannot
see their bodies; each route passes ``openapi_extra`` and ``responses`` from here. The
schemas describe the shape only: ``headwater.core.spec.parse_spec`` stays the authority
on a spec (references, cycles, routes), and ``edge.jsoncheck`` on the values PostgreSQL and
Kafka can hold. OpenAPI 3.1 schemas are JSON Schema 2020-12 (OpenAPI 3.1.0, "Schema
Object").
"""

from __future__ import annotations

from typing import Any

from headwater.core import labels
from headwater.core.calls import MAX_NUMBER
from headwater.core.ids import QUEUE_PATTERN
from headwater.core.kinds.loop.rules import MAX_LOOP_STEPS
from headwater.core.kinds.wait.records import SIGNAL_FIELD_TYPES
from headwater.core.retry import MAX_ATTEMPTS_LIMIT, MAX_SECONDS
from headwater.core.spec.kinds import NodeKind
from headwater.core.spec.restart import MAX_RESTARTS_LIMIT
from headwater.topics import WORKFLOW_ID_PATTERN
from services.gateway.control.models import MAX_INDEX
from services.gateway.openapi.scheduling import (
    CACHE_SCHEMA,
    CONCURRENCY_SCHEMA,
    PRIORITY_SCHEMA,
    RATE_LIMIT_SCHEMA,
    REQUIRES_SCHEMA,
)
from services.gateway.openapi.scheduling import or_null as _or_null

NODE_ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$"
"""Node ids (``headwater.core.spec``)."""
_SECONDS: dict[str, Any] = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS}


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

_SIGNAL_FIELD_TYPE: dict[str, Any] = {"enum": list(SIGNAL_FIELD_TYPES)}
SIGNAL_FIELDS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "a wait's signal fields: name -> type (required) or {type, required}",
    "additionalProperties": {"anyOf": [_SIGNAL_FIELD_TYPE, {
        "type": "object", "additionalProperties": False,
        "properties": {"type": _SIGNAL_FIELD_TYPE, "required": {"type": "boolean"}}}]},
}
"""A wait node's ``fields`` (``headwater.core.spec.kinds``)."""

TOOL_SCHEMA: dict[str, Any] = {"anyOf": [
    {"type": "string", "minLength": 1, "description": "a task of that name"},
    {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
        "name": {"type": "string", "minLength": 1},
        "task": {"type": "string", "minLength": 1},
        "queue": {"type": "string", "pattern": QUEUE_PATTERN.pattern},
        "retry": _or_null(RETRY_SCHEMA),
        "timeout": _or_null(_SECONDS),
        "heartbeat_timeout": _or_null({**_SECONDS, "minimum": 1}),
    }},
]}
"""One tool of a loop node: a task name, or a mapping (the loop's settings by default)."""


def _kind_needs(kinds: list[str], required: list[str]) -> dict[str, Any]:
    """``if`` a node is of one of ``kinds`` (``task``: also without a kind) ``then`` it
    has the fields ``required``."""
    of_kind = {"properties": {"kind": {"enum": kinds}}, "required": ["kind"]}
    condition = ({"anyOf": [of_kind, {"not": {"required": ["kind"]}}]} if "task" in kinds
                 else of_kind)
    return {"if": condition, "then": {"required": required}}


NODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": NODE_ID_PATTERN},
        "kind": {"enum": [k.value for k in NodeKind
                          if k not in (NodeKind.SCHEDULE, NodeKind.CODE, NodeKind.LIMITER)],
                 "default": "task"},
        "task": {"type": "string", "minLength": 1},
        "queue": {"type": "string", "pattern": QUEUE_PATTERN.pattern, "default": "cpu"},
        "needs": {"type": "array", "items": {"type": "string"}},
        "when": _or_null({"type": "string", "minLength": 1, "description": "a condition "
                          "over references, e.g. ${nodes.a.output.label} == \"refund\"; "
                          "false skips the node"}),
        "input": {"description": "a JSON template; a string that is exactly ${...} is "
                                 "replaced by the value it names"},
        "over": _or_null({"type": "string", "description": "the list of a map (or of a "
                          "wait or workflow node per item), e.g. ${input.items}"}),
        "max_concurrency": _or_null({"type": "integer", "minimum": 1}),
        "requires": _or_null(REQUIRES_SCHEMA),
        "concurrency": _or_null(CONCURRENCY_SCHEMA),
        "rate_limit": _or_null(RATE_LIMIT_SCHEMA),
        "cache": _or_null(CACHE_SCHEMA),
        "retry": _or_null(RETRY_SCHEMA),
        "timeout": _or_null(_SECONDS),
        "heartbeat_timeout": _or_null({**_SECONDS, "minimum": 1}),
        "on_error": _or_null({"type": "string"}),
        "continue_on_error": _or_null({"type": "boolean"}),
        "signal": {"type": "string", "pattern": NODE_ID_PATTERN,
                   "description": "the signal a wait node waits for"},
        "fields": _or_null(SIGNAL_FIELDS_SCHEMA),
        "duration": _or_null({**_SECONDS, "description": "a sleep's length, seconds"}),
        "until": _or_null({"type": "string", "description": "a sleep's end: an RFC 3339 "
                           "time with an offset, or a ${...} reference to one"}),
        "workflow": {"type": "object", "description": "a child workflow's spec, inline"},
        "definition": {"type": "string", "description": "instead of workflow: a registered "
                       "definition, name or name@version, inlined by the gateway"},
        "definition_version": {"type": "integer", "minimum": 1, "description": "the "
                               "definition's version the inline workflow was resolved "
                               "from (set by the gateway)"},
        "decide": {"type": "string", "minLength": 1, "description": "a loop's decide task"},
        "tools": {"type": "array", "minItems": 1, "items": TOOL_SCHEMA},
        "max_steps": {"type": "integer", "minimum": 1, "maximum": MAX_LOOP_STEPS},
        "on_exhausted": {"enum": ["fail", "finish"], "default": "fail"},
        "budget": _or_null({"type": "number", "exclusiveMinimum": 0}),
    },
    "allOf": [
        _kind_needs(["task"], ["task"]),
        _kind_needs(["map"], ["task", "over"]),
        _kind_needs(["wait"], ["signal"]),
        {"if": {"properties": {"kind": {"const": "sleep"}}, "required": ["kind"]},
         "then": {"oneOf": [{"required": ["duration"]}, {"required": ["until"]}]}},
        # A workflow node's "workflow or definition" is left to the gateway's 422: one
        # more condition here is past what schemathesis can merge with the node's
        # properties (it stops generating submissions at all).
        _kind_needs(["loop"], ["decide", "tools", "max_steps"]),
    ],
}
"""One node of a spec (docs/specs.md): the fields of every kind, and
those each kind requires. Which fields a kind does not take is the spec parser's to say
(``spec.kinds.KIND_KEYS``). A ``schedule`` node is left out: ``PUT /v1/schedules/{name}``
makes it (its body is documented there), and so is a ``code`` node: a ``@workflow``'s
spec is the decorator's (``WorkflowInfo.spec()``, run by ``POST /v1/run/{name}``), and
the gateway takes it in a submission all the same. Schemathesis
(``tests/fuzz/test_openapi_document.py``) also generated no positive case for
``POST /v1/workflows`` with a seventh value in the ``kind`` enum (a throw-away kind
showed it, whatever the value), so a new kind needs that test looked at first."""

LABELS_SCHEMA: dict[str, Any] = {
    "type": "object", "maxProperties": labels.MAX_LABELS,
    "propertyNames": {"pattern": "^" + labels.KEY_PATTERN.pattern + "$"},
    "additionalProperties": {"type": "string",
                             "pattern": "^" + labels.VALUE_PATTERN.pattern + "$"},
    "description": "labels, key: value (headwater.core.labels): keys "
                   f"{labels.KEY_HINT}; values {labels.VALUE_HINT}"}
"""A run's labels (a spec's ``labels``, a submission's)."""

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
        "restart_on_failure": _or_null({
            "type": "boolean", "description": "a lost attempt restarts the whole run "
            "(idempotent workflows only; no wait or schedule nodes)"}),
        "max_restarts": _or_null({"type": "integer", "minimum": 1,
                                  "maximum": MAX_RESTARTS_LIMIT,
                                  "description": "restarts allowed (default 3; only with "
                                  "restart_on_failure)"}),
        "nodes": {"type": "array", "minItems": 1, "items": NODE_SCHEMA},
        "output": {"description": "a JSON template of the workflow's output"},
        "priority": _or_null(PRIORITY_SCHEMA),
        "deadline": _or_null({
            "type": ["number", "string"], "description": "the whole run's deadline: "
            "seconds after its start (3600), a duration (30s, 15m, 12h, 7d) or an RFC 3339 "
            "instant; the run fails with DeadlineExceeded if still running then"}),
        "labels": _or_null(LABELS_SCHEMA),
    },
}
"""A workflow spec as a JSON object."""

SUBMIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "oneOf": [{"required": ["workflow"]}, {"required": ["definition"]}],
    "additionalProperties": False,
    "properties": {
        "id": {"type": ["string", "null"], "pattern": WORKFLOW_ID_PATTERN,
               "description": "idempotency key: the same id and body give the same run; "
                              "none or null: the gateway makes one"},
        "workflow": SPEC_SCHEMA,
        "definition": {"type": "string", "description": "instead of workflow: a registered "
                       "definition, name (its latest version) or name@version; the input "
                       "must match its input_schema"},
        "input": {"description": "the workflow's input, any JSON value"},
        "tenant": {"type": ["string", "null"], "maxLength": 200},
        "queue_anyway": {"type": "boolean", "default": False,
                         "description": "queue the run even if no live worker of a node's "
                                        "queue serves its task, nor one did lately "
                                        "(HEADWATER_UNSERVED_AFTER_S): without it, 400; a "
                                        "worker may come later. A full queue is still 429"},
        "priority": _or_null({**PRIORITY_SCHEMA, "description": "the run's priority, in "
                              "place of the spec's (a definition's default): "
                              f"{PRIORITY_SCHEMA['description']}"}),
        "parent": _or_null({
            "type": "object", "additionalProperties": False,
            "required": ["workflow_id", "node", "attempt"],
            "properties": {"workflow_id": {"type": "string", "minLength": 1,
                                           "maxLength": 200},
                           "node": {"type": "string", "minLength": 1, "maxLength": 128},
                           "index": {"type": ["integer", "null"], "minimum": 0,
                                     "maximum": MAX_NUMBER},
                           "attempt": {"type": "integer", "minimum": 1,
                                       "maximum": MAX_NUMBER}},
            "description": "the task attempt whose ctx.call submits the run: the run is "
                           "that workflow's child, cancelled when it ends (not part of "
                           "the run's identity)"}),
        "labels": _or_null({**LABELS_SCHEMA, "description": "the run's labels, merged "
                            "over the spec's (a definition's) key by key"}),
    },
}
"""``POST /v1/workflows`` (``runs.models.SubmitRequest``): a spec, or a definition's name."""

SUBMIT_MEANINGS = {
    404: "no such definition (or version of it)",
    409: "the id is taken by another body (or is being submitted right now: retry)",
    400: "a task no live worker of its node's queue serves, nor one did within "
         "HEADWATER_UNSERVED_AFTER_S (the problem has task and queue; queue_anyway: true "
         "queues it anyway)",
    429: "a queue the workflow needs has a backlog at or over its maxdepth "
         "(HEADWATER_QUEUE_MAXDEPTH; the problem has queue, backlog and maxdepth; with "
         "Retry-After)",
}
"""What 404, 409, 400 and 429 mean for ``POST /v1/workflows`` (``runs.submit``,
``queues.admission``)."""

CANCEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"reason": {"type": "string", "maxLength": 1000}},
}
"""``POST /v1/workflows/{id}/cancel`` (``control.models.CancelRequest``); the body is optional."""

PAUSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"reason": {"type": "string", "maxLength": 1000},
                   "request_id": {"type": ["string", "null"], "minLength": 1,
                                  "maxLength": 200}},
}
"""``POST /v1/workflows/{id}/pause`` (``pauses.models.PauseRequest``); the body is
optional."""

RESUME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"request_id": PAUSE_SCHEMA["properties"]["request_id"]},
}
"""``POST /v1/workflows/{id}/resume`` (``pauses.models.ResumeRequest``); the body is
optional."""

DEFINITION_PAUSE_BODY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"reason": PAUSE_SCHEMA["properties"]["reason"]},
}
"""``POST /v1/definitions/{name}/pause`` (``pauses.models.DefinitionPauseRequest``); the
body is optional."""

DEFINITION_RESUME_BODY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {},
}
"""``POST /v1/definitions/{name}/resume`` (``pauses.models.DefinitionResumeRequest``): an
empty object, or no body."""

SIGNAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["fields"],
    "additionalProperties": False,
    "properties": {
        "signal_id": {"type": ["string", "null"], "minLength": 1, "maxLength": 200,
                      "description": "the sender's id for the signal: another with an id "
                                     "already recorded changes nothing (retrying is safe); "
                                     "none or null: the gateway makes one"},
        "index": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_INDEX,
                  "description": "the map item whose wait it is for (a wait with over)"},
        "fields": {"type": "object", "description": "the fields the wait node declares, "
                                                    "by name; they become its output"},
    },
}
"""``POST /v1/workflows/{id}/signals/{name}`` (``control.models.SignalRequest``)."""
RERUN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "id": {"type": ["string", "null"], "pattern": WORKFLOW_ID_PATTERN,
               "description": "the new run's id, the idempotency key (the same id and body "
                              "again answer the same run); none: the gateway makes one"},
        "input": {"description": "the new run's input; left out: the source's"},
    },
}
"""``POST /v1/workflows/{id}/rerun`` (``reruns.models.RerunRequest``)."""
RESET_SCHEMA: dict[str, Any] = {
    **RERUN_SCHEMA, "required": ["node"],
    "properties": {**RERUN_SCHEMA["properties"], "node": {
        "type": "string", "minLength": 1, "maxLength": 200,
        "description": "the node to run again, with everything downstream of it"}},
}
"""``POST /v1/workflows/{id}/reset`` (``reruns.models.ResetRequest``)."""

SIGNAL_NAME_DOC: dict[str, Any] = {"pattern": NODE_ID_PATTERN,
                                   "description": "the signal a wait node declares "
                                                  "(signal:); any other is 400"}
"""The schema extras of the ``{name}`` path parameter of a signal (documented, not
enforced: the workflow's spec says which names it takes)."""

WORKFLOW_ID_DOC: dict[str, Any] = {"pattern": WORKFLOW_ID_PATTERN,
                                   "description": "a workflow id (any other is 404)"}
"""The schema extras of the ``{workflow_id}`` path parameter (documented, not enforced:
an id of another form names no workflow)."""


def json_body(schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    """The ``openapi_extra`` of a route whose JSON body is read by the route itself.

    Args:
        schema: the body's JSON Schema.
        required: whether a body must be sent.
    """
    return {"requestBody": {"required": required,
                            "content": {"application/json": {"schema": schema}}}}


def json_answer(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A ``responses`` entry of a JSON answer (a 2xx), for a route decorator.

    Args:
        description: what the answer means.
        schema: the answer's JSON Schema.
    """
    return {"description": description, "content": {"application/json": {"schema": schema}}}
