"""The OpenAPI document's parts of bulk operations: their answers' schemas and the
examples of their bodies and answers (``openapi.answers`` and ``openapi.examples``
take them in)."""

from __future__ import annotations

from typing import Any

from headwater.operations import OperationState, Outcome

JSON = "application/json"
_TEXT: dict[str, Any] = {"type": "string"}
_COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
_COUNTS: dict[str, Any] = {"type": "object", "required": [o.value for o in Outcome],
                           "properties": {o.value: _COUNT for o in Outcome}}
_REASON: dict[str, Any] = {"type": "object", "required": ["id", "outcome", "reason"],
                           "properties": {"id": _TEXT, "outcome": _TEXT, "reason": _TEXT}}
OPERATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "action", "state", "tenant", "filter", "args", "matched", "progress",
                 "counts", "reasons", "sample", "created_at", "updated_at", "links"],
    "properties": {
        "id": _TEXT, "action": _TEXT, "state": {"enum": list(OperationState)},
        "tenant": {"type": ["string", "null"]}, "filter": {"type": "object"},
        "args": {"type": "object"},
        "matched": {**_COUNT, "description": "the runs the filter matched when it started"},
        "progress": {**_COUNT, "description": "how many of them it has acted on"},
        "counts": _COUNTS,
        "reasons": {"type": "array", "items": _REASON,
                    "description": "the targets skipped or failed, with why (at most 100)"},
        "sample": {"type": "array", "items": _TEXT},
        "created_at": {"type": "string", "format": "date-time"},
        "updated_at": {"type": "string", "format": "date-time"},
        "links": {"type": "object", "additionalProperties": _TEXT}},
    "description": "a bulk operation, its progress and counts (operations.api.view)"}
DRY_RUN_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["dry_run", "action", "filter", "matched", "sample"],
    "properties": {"dry_run": {"const": True}, "action": _TEXT, "filter": {"type": "object"},
                   "matched": _COUNT, "over_limit": {"type": "boolean"},
                   "sample": {"type": "array", "items": _TEXT},
                   "by_status": {"type": "object", "additionalProperties": _COUNT,
                                 "description": "the matched runs by their status now"},
                   "to_act_on": {**_COUNT, "description": "the matched runs the action "
                                 "acts on (the others would be skipped: ended runs, or "
                                 "for a rerun those that have not failed or been "
                                 "cancelled)"}}}
ANSWERS: dict[str, dict[str, dict[str, dict[str, Any]]]] = {
    "POST /v1/operations": {"202": {JSON: OPERATION_SCHEMA},
                            "200": {JSON: {"anyOf": [OPERATION_SCHEMA, DRY_RUN_SCHEMA]}}},
    "GET /v1/operations/{operation_id}": {"200": {JSON: OPERATION_SCHEMA}},
    "GET /v1/operations": {"200": {JSON: {"type": "object", "required": ["items"],
                                          "properties": {"items": {
                                              "type": "array", "items": OPERATION_SCHEMA}}}}},
}
"""Per operation, status and media type: the answer's schema."""

_FILTER = {"label": ["team:search"], "status": "running"}
_DONE: dict[str, Any] = {
    "id": "op-nightly-stop", "action": "cancel", "state": "done", "tenant": "acme",
    "filter": _FILTER, "args": {"reason": "index rebuilt"}, "matched": 3, "progress": 3,
    "counts": {"done": 2, "skipped": 1, "failed": 0},
    "reasons": [{"id": "index-7", "outcome": "skipped", "reason": "already succeeded"}],
    "sample": ["index-5", "index-6", "index-7"], "created_at": "2026-12-06T16:00:00+00:00",
    "updated_at": "2026-12-06T16:00:01+00:00",
    "links": {"self": "/v1/operations/op-nightly-stop"}}


def _example(summary: str, value: Any) -> dict[str, Any]:
    return {"summary": summary, "value": value}


REQUEST_EXAMPLES: dict[str, dict[str, dict[str, Any]]] = {
    "POST /v1/operations": {
        "dry-run": _example("how many running runs of a team a cancel would reach", {
            "action": "cancel", "filter": _FILTER, "dry_run": True}),
        "cancel": _example("cancel them, with a reason", {
            "action": "cancel", "filter": _FILTER, "id": "op-nightly-stop",
            "reason": "index rebuilt"}),
        "signal": _example("approve every waiting run of a definition", {
            "action": "signal", "filter": {"definition": "refund", "status": "running"},
            "signal": {"name": "approval", "fields": {"approved": True}}}),
    }}
"""Per operation: the request body's named examples."""
ANSWER_EXAMPLES: dict[str, dict[str, dict[str, dict[str, Any]]]] = {
    "POST /v1/operations": {
        "202": {JSON: {"example": _example("recorded; it goes on in the background",
                                           {**_DONE, "state": "running", "progress": 0,
                                            "counts": {"done": 0, "skipped": 0,
                                                       "failed": 0}, "reasons": []})}},
        "200": {JSON: {"example": _example("a dry run", {
            "dry_run": True, "action": "cancel", "filter": _FILTER, "matched": 3,
            "over_limit": False, "sample": ["index-5", "index-6", "index-7"],
            "by_status": {"running": 2, "succeeded": 1}, "to_act_on": 2})}}},
    "GET /v1/operations/{operation_id}": {"200": {JSON: {"example": _example(
        "a bulk cancel, done", _DONE)}}},
    "GET /v1/operations": {"200": {JSON: {"example": _example("the latest operation", {
        "items": [_DONE]})}}},
}
"""Per operation, status and media type: the answer's named examples."""
