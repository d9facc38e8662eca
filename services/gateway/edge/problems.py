"""Errors as RFC 9457 problem details (``application/problem+json``), and the table of
every problem type the gateway answers.

Each kind of problem has its own type (RFC 9457 §4: a type URI, a title and a status):
``PROBLEM_TYPES``. A handler raises ``Problem(status, title, ...)``; the answer's
``type`` is the URI of the entry with that status and title (``type_of``), and the
OpenAPI document lists every entry (``openapi.problems``), so neither can drift from the
other (``tests/unit/services/gateway/openapi/test_openapi_problem_types.py`` checks every
``Problem`` the gateway's code makes against this table). The type URIs are URNs of the
project's own: identifiers, not locators, so there is nothing to dereference (RFC 9457
§3.1.1 asks documentation of a locator); ``/openapi.json`` documents each one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from services.common.db import UNAVAILABLE

PROBLEM_JSON = "application/problem+json"
RETRY_AFTER_S = "1"  # seconds, as the Retry-After header carries it
TYPE_PREFIX = "urn:headwater:problem:"
"""Every problem type's URI is this and its slug."""

DATABASE_UNAVAILABLE = UNAVAILABLE
"""Errors that mean PostgreSQL cannot answer now (not that a query is wrong): 503."""

log = logging.getLogger("headwater.gateway")
_TEXT: dict[str, Any] = {"type": "string"}
_COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}


@dataclass(frozen=True)
class ProblemType:
    """One kind of problem (RFC 9457 §4, "Defining New Problem Types").

    Attributes:
        slug: the type's name, e.g. ``not-found``; its URI is ``TYPE_PREFIX + slug``.
        status: the HTTP status code every problem of the type has.
        title: the problem's ``title``, the same for every occurrence.
        about: when it happens (the OpenAPI document's description of it).
        members: its extension members beyond ``detail``, ``instance`` and ``errors``:
            name -> JSON Schema.
        retry_after: whether its answer carries ``Retry-After`` (seconds).
    """

    slug: str
    status: int
    title: str
    about: str
    members: dict[str, Any] = field(default_factory=dict, hash=False)
    retry_after: bool = False

    @property
    def uri(self) -> str:
        """The problem's ``type``."""
        return TYPE_PREFIX + self.slug


BAD_REQUEST = ProblemType(
    "bad-request", 400, "Bad request", "the path or the query holds U+0000 (%00), which "
    "PostgreSQL text cannot hold: refused before any route")
BAD_LAST_EVENT_ID = ProblemType(
    "bad-last-event-id", 400, "Bad Last-Event-ID", "a Last-Event-ID header that is not an "
    "id of the stream's events: a seq number, 1 to 18 digits 0-9, for a run's events; "
    "<attempt>:<line> for a task's log (empty: from the start)")
BAD_CURSOR = ProblemType(
    "bad-cursor", 400, "Bad cursor", "a cursor this API did not return (pass a page's "
    "next_cursor as it is)")
NO_WORKER = ProblemType(
    "no-worker", 400, "No worker serves the task", "a task that no live worker of its "
    "node's queue serves, nor one did within HEADWATER_UNSERVED_AFTER_S (named by task "
    "and queue; a task served nowhere with the closest served task names in did_you_mean); "
    "queue_anyway: true queues it anyway",
    {"task": _TEXT, "queue": _TEXT, "did_you_mean": {"type": "array", "items": _TEXT}})
NO_MATCHING_WORKER = ProblemType(
    "no-matching-worker", 400, "No worker matches the selector", "a node that requires "
    "tags (requires: [...]) that no live worker of its queue announces "
    "(HEADWATER_WORKER_TAGS), nor one did within HEADWATER_UNSERVED_AFTER_S; named by "
    "task, queue, the tags required and those missing, with the tags each live worker "
    "of the queue announces in worker_tags; queue_anyway: true queues it anyway",
    {"task": _TEXT, "queue": _TEXT, "requires": {"type": "array", "items": _TEXT},
     "missing": {"type": "array", "items": _TEXT},
     "worker_tags": {"type": "array", "items": {"type": "array", "items": _TEXT}}})
INVALID_SIGNAL = ProblemType(
    "invalid-signal", 400, "Invalid signal", "no wait of the workflow takes the signal: "
    "an undeclared name, an index missing, out of range or not taken, a field missing, "
    "undeclared or of the wrong type (named in errors)", {"signal": _TEXT})
CORS_REFUSED = ProblemType(
    "cors-preflight-refused", 400, "CORS preflight refused", "a CORS preflight (OPTIONS) "
    "from an origin HEADWATER_CORS_ORIGINS does not name, or asking for a method or "
    "header the API does not take; refused lists what",
    {"refused": {"type": "array", "items": _TEXT}})
UNAUTHORIZED = ProblemType(
    "unauthorized", 401, "Unauthorized", "auth is on (HEADWATER_AUTH) and the request has no "
    "valid bearer token: none, another scheme, an unknown or revoked API key, or a JWT "
    "that does not verify (the WWW-Authenticate header says which, RFC 6750 §3)")
FORBIDDEN = ProblemType(
    "forbidden", 403, "Forbidden", "the token's role does not allow the operation (read < "
    "submit < admin), the body names another tenant than the token's, or a tenant's token "
    "writes a shared definition (one with no tenant)",
    {"role": _TEXT, "needs": _TEXT})
NOT_FOUND = ProblemType(
    "not-found", 404, "Not found", "no such workflow, definition (or version of it), "
    "schedule, or task or node of a run; for a definition name, the closest registered "
    "names in did_you_mean",
    {"definition": _TEXT, "schedule": _TEXT, "did_you_mean": {"type": "array", "items": _TEXT}})
NO_ROUTE = ProblemType(
    "no-route", 404, "No such route", "a path that names no operation of the API")
METHOD_NOT_ALLOWED = ProblemType(
    "method-not-allowed", 405, "Method Not Allowed", "a method the path does not take (the "
    "Allow header lists those it does)")
CONFLICT = ProblemType(
    "conflict", 409, "Conflict", "the workflow id is taken by another body (or is being "
    "submitted right now: retry; or by another tenant's run, which is not said), the "
    "workflow has already ended, the definition has used every version number, or "
    "another tenant holds the definition's or schedule's name",
    {"workflow_id": _TEXT, "status_now": _TEXT}, retry_after=True)
DEFINITION_DELETED = ProblemType(
    "definition-deleted", 410, "Definition deleted", "the definition was deleted: it "
    "starts no new runs (its versions stay readable with ?version=N)",
    {"definition": _TEXT, "version": {"type": "integer", "minimum": 1}})
REQUEST_TOO_LARGE = ProblemType(
    "request-too-large", 413, "Request too large", "the body (as declared by "
    "Content-Length, or as sent) is over HEADWATER_MAX_BODY_BYTES, or for a submission "
    "or a signal over HEADWATER_MAX_PAYLOAD_BYTES (named in setting)",
    {"setting": _TEXT, "max_body_bytes": _COUNT})
BAD_DIGEST = ProblemType(
    "bad-digest", 400, "Bad digest", "a blob's digest that is not sha256: and 64 "
    "lowercase hex digits")
RECORD_TOO_LARGE = ProblemType(
    "record-too-large", 413, "Record too large", "the Kafka record the request makes is "
    "over what Kafka takes (HEADWATER_MAX_MESSAGE_BYTES or the broker's "
    "message.max.bytes): the same request is refused again",
    {"workflow_id": _TEXT, "record_bytes": _COUNT,
     "max_record_bytes": {"type": ["integer", "null"], "minimum": 0}})
INVALID_REQUEST = ProblemType(
    "invalid-request", 422, "Invalid request", "a body or query that does not fit the "
    "operation: not JSON, a field missing, unknown or of the wrong type, a value "
    "PostgreSQL or Kafka cannot hold (U+0000, an integer beyond 64 bits), a malformed "
    "parameter; errors names every fault")
INVALID_SPEC = ProblemType(
    "invalid-workflow-spec", 422, "Invalid workflow spec", "the spec parser refuses the "
    "workflow (references, cycles, a kind's fields ...), or a child definition it names "
    "cannot be inlined; errors names every fault")
SPEC_TOO_LARGE = ProblemType(
    "workflow-spec-too-large", 422, "Workflow spec too large", "the spec with its child "
    "definitions inlined holds over MAX_INLINED_NODES nodes (or, for a definition, over "
    "HEADWATER_MAX_BODY_BYTES)")
INVALID_DEFINITION_REFERENCE = ProblemType(
    "invalid-definition-reference", 422, "Invalid definition reference", "a definition "
    "reference that is not name or name@version", {"definition": {"type": ["string", "null"]}})
INPUT_MISMATCH = ProblemType(
    "input-mismatch", 422, "Input does not match the definition", "the input does not "
    "match the definition's input_schema; errors names each field",
    {"definition": _TEXT, "version": {"type": "integer", "minimum": 1}})
INPUT_UNRESOLVED = ProblemType(
    "input-unresolved", 422, "Input lacks what the spec references", "an inline spec's "
    "${input...} reference that the submitted input cannot resolve where the run would "
    "resolve it (a key the input lacks, an index beyond a list, a map's over that is no "
    "list); errors names each reference and what the input has there")
INVALID_DEFINITION = ProblemType(
    "invalid-definition", 422, "Invalid definition", "a definition whose spec, child "
    "definitions or input_schema is invalid; errors names every fault")
INVALID_DEFINITION_NAME = ProblemType(
    "invalid-definition-name", 422, "Invalid definition name", "a definition name that is "
    "missing or not 1-100 letters, digits and _.- starting with a letter or digit")
INVALID_SCHEDULE_NAME = ProblemType(
    "invalid-schedule-name", 422, "Invalid schedule name", "a schedule name that is not "
    "1-100 letters, digits and _.- starting with a letter or digit")
INVALID_SCHEDULE = ProblemType(
    "invalid-schedule", 422, "Invalid schedule", "a schedule whose cron, timezone, "
    "definition (malformed, unknown or deleted), input (against the definition's "
    "input_schema) or scheduled workflow is invalid; errors names every fault")
QUEUE_FULL = ProblemType(
    "queue-full", 429, "Queue full", "a queue the workflow needs has a backlog at or over "
    "its maxdepth (HEADWATER_QUEUE_MAXDEPTH), named by queue, backlog and maxdepth",
    {"queue": _TEXT, "backlog": _COUNT, "maxdepth": _COUNT}, retry_after=True)
INTERNAL_ERROR = ProblemType(
    "internal-error", 500, "Internal error", "an unexpected error in the gateway, logged "
    "with its traceback")
NOT_READY = ProblemType(
    "not-ready", 503, "Not ready", "the gateway is still connecting to Kafka and "
    "PostgreSQL (for /ready also: one of them does not answer, or it is shutting down)",
    retry_after=True)
SHUTTING_DOWN = ProblemType(
    "shutting-down", 503, "Shutting down", "this gateway is shutting down and starts no "
    "new work: retry, another instance takes it", retry_after=True)
KAFKA_UNAVAILABLE = ProblemType(
    "kafka-unavailable", 503, "Kafka unavailable", "Kafka failed, or did not acknowledge "
    "in time: the record may still be stored, and retrying the same request is safe",
    {"workflow_id": _TEXT}, retry_after=True)
DATABASE_DOWN = ProblemType(
    "database-unavailable", 503, "Database unavailable", "PostgreSQL does not answer",
    retry_after=True)

PROBLEM_TYPES: tuple[ProblemType, ...] = (
    BAD_REQUEST, BAD_LAST_EVENT_ID, BAD_CURSOR, BAD_DIGEST, NO_WORKER, NO_MATCHING_WORKER,
    INVALID_SIGNAL, CORS_REFUSED,
    UNAUTHORIZED, FORBIDDEN, NOT_FOUND, NO_ROUTE, METHOD_NOT_ALLOWED, CONFLICT, DEFINITION_DELETED,
    REQUEST_TOO_LARGE, RECORD_TOO_LARGE, INVALID_REQUEST, INVALID_SPEC, SPEC_TOO_LARGE,
    INVALID_DEFINITION_REFERENCE, INPUT_MISMATCH, INPUT_UNRESOLVED, INVALID_DEFINITION,
    INVALID_DEFINITION_NAME, INVALID_SCHEDULE_NAME, INVALID_SCHEDULE, QUEUE_FULL,
    INTERNAL_ERROR, NOT_READY, SHUTTING_DOWN, KAFKA_UNAVAILABLE, DATABASE_DOWN)
"""Every problem type the gateway answers, by status."""
_BY_KEY = {(t.status, t.title): t for t in PROBLEM_TYPES}
STARLETTE_TYPES = {NO_ROUTE.status: NO_ROUTE, METHOD_NOT_ALLOWED.status: METHOD_NOT_ALLOWED}
"""The types of Starlette's own HTTP errors (routing), by status."""


def type_of(status: int, title: str) -> ProblemType | None:
    """The entry of ``PROBLEM_TYPES`` with ``status`` and ``title``, or None."""
    return _BY_KEY.get((status, title))


class Problem(Exception):
    """Raised by a route to answer with a problem document.

    Args:
        status: HTTP status code.
        title: short summary, the same for every occurrence of this kind of problem
            (with ``status``, an entry of ``PROBLEM_TYPES``).
        detail: what went wrong this time.
        headers: extra response headers (e.g. ``Retry-After``).
        extra: extension members, e.g. ``errors`` (a list of faults).
    """

    def __init__(self, status: int, title: str, detail: str = "",
                 headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail or title)
        self.status, self.title, self.detail = status, title, detail
        self.headers = headers or {}
        self.extra = extra


def problem_response(status: int, title: str, detail: str = "", instance: str = "",
                     headers: dict[str, str] | None = None, **extra: Any) -> Response:
    """A ``Response`` carrying a problem document.

    Its ``type`` is the URI of the entry of ``PROBLEM_TYPES`` with ``status`` and
    ``title``; ``about:blank`` (RFC 9457 §4.2.1) for a pair the table does not hold.
    """
    kind = type_of(status, title)
    doc: dict[str, Any] = {"type": kind.uri if kind else "about:blank", "title": title,
                           "status": status}
    if detail:
        doc["detail"] = detail
    if instance:
        doc["instance"] = instance
    doc.update(extra)
    return Response(orjson.dumps(doc), status_code=status, media_type=PROBLEM_JSON,
                    headers=headers)


def install(app: FastAPI) -> None:
    """Make every error answer ``application/problem+json``.

    ``Problem`` answers itself, request validation is 422, PostgreSQL being unavailable
    (``DATABASE_UNAVAILABLE``) is 503 with ``Retry-After``, and Starlette's HTTP errors
    (404 route, 405 method) keep their status. Anything else is caught by
    ``middleware.CatchAll``.
    """

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> Response:
        return problem_response(exc.status, exc.title, exc.detail, request.url.path,
                                exc.headers, **exc.extra)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
                  for e in exc.errors()]
        return problem_response(INVALID_REQUEST.status, INVALID_REQUEST.title,
                                "; ".join(errors), request.url.path, errors=errors)

    async def _database(request: Request, exc: Exception) -> Response:
        log.warning("PostgreSQL unavailable during %s %s: %r", request.method,
                    request.url.path, exc)
        return problem_response(DATABASE_DOWN.status, DATABASE_DOWN.title,
                                "PostgreSQL does not answer; retry later", request.url.path,
                                {"Retry-After": RETRY_AFTER_S})

    for error in DATABASE_UNAVAILABLE:
        app.add_exception_handler(error, _database)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        path, kind = request.url.path, STARLETTE_TYPES.get(exc.status_code)
        detail = (f"no operation of the API has the path {path}" if kind is NO_ROUTE else
                  f"{request.method} is not a method of {path}" if kind is not None else "")
        return problem_response(exc.status_code, kind.title if kind else str(exc.detail),
                                detail, path, dict(exc.headers or {}))
