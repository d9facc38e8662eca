"""HTTP routes of webhooks: ``PUT``, ``GET`` (one, or the list), ``DELETE
/v1/webhooks/{name}`` and ``GET /v1/webhooks/{name}/deliveries`` (docs/webhooks.md).

A ``PUT`` is checked at the edge (``define.WebhookRequest``: 422 naming every field),
written to the ``webhooks`` topic and then to its table (``define.write``); the secret
is never answered. Every route is scoped by the principal's tenant: another tenant's
webhook is 404 as an unknown name, and its name is 409 on ``PUT``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import quote

import orjson
from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from headwater.core.definitions import NAME_PATTERN
from services.gateway.auth.scope import principal
from services.gateway.edge.body import parse_body, read_limited, require_storable
from services.gateway.edge.problems import (
    BAD_CURSOR,
    CONFLICT,
    INVALID_REQUEST,
    NOT_FOUND,
    REQUEST_TOO_LARGE,
    Problem,
)
from services.gateway.lifetime import accepting, runtime
from services.gateway.openapi.bodies import json_answer, json_body
from services.gateway.openapi.problems import READS, WRITES, problems
from services.gateway.webhooks.define import (
    WebhookRequest,
    check_name,
    now_ms,
    record_of,
    visible,
    write,
)
from services.gateway.webhooks.views import Which, hook_view, read_deliveries, read_hooks
from services.webhooks.matching import EVENT_NAMES
from services.webhooks.store import read_hook, redeliver

router = APIRouter()

_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string"}, "maxItems": 100}
WEBHOOK_PUT_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["url", "events", "secret"], "additionalProperties": False,
    "properties": {
        "url": {"type": "string", "format": "uri", "description": "http:// or https://"},
        "events": {"type": "array", "minItems": 1, "items": {"enum": list(EVENT_NAMES)},
                   "description": "run.ended stands for run.succeeded, run.failed and "
                                  "run.cancelled; run.waiting: a wait node (or a "
                                  "@workflow's wf.signal) waits for a signal"},
        "filter": {"type": "object", "additionalProperties": False, "properties": {
            "names": {**_LIST, "description": "the runs' spec names; empty: any"},
            "definitions": {**_LIST, "description": "the runs' definitions; empty: any"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"},
                       "description": "labels the runs must all carry; empty: any"}}},
        "secret": {"type": "string", "minLength": 16, "maxLength": 256, "writeOnly": True,
                   "description": "the key of the HMAC-SHA256 signatures; never answered"},
        "retry": {"type": "object", "additionalProperties": False, "properties": {
            "max_attempts": {"type": "integer", "minimum": 1, "maximum": 50, "default": 8},
            "backoff_s": {"type": "number", "default": 2, "description": "the wait after "
                          "the first failed attempt, doubled after each"},
            "backoff_max_s": {"type": "number", "default": 600}}},
    },
}
WEBHOOK_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["name", "url", "events", "filter", "retry"],
    "properties": {
        "name": {"type": "string"}, "tenant": {"type": ["string", "null"]},
        "url": {"type": "string"}, "events": {"type": "array", "items": {"type": "string"}},
        "filter": {"type": "object"}, "retry": {"type": "object"},
        "created_at": {"type": "string", "format": "date-time"},
        "updated_at": {"type": "string", "format": "date-time"},
        "links": {"type": "object"},
    },
}
WEBHOOKS_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"items": {"type": "array", "items": WEBHOOK_SCHEMA},
                                     "next_cursor": {"type": ["string", "null"]}}}
DELIVERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "the delivery id (Headwater-Delivery): the "
                                                "same on every attempt"},
        "webhook": {"type": "string"}, "workflow_id": {"type": "string"},
        "seq": {"type": "integer"}, "event": {"type": "string"},
        "status": {"enum": ["pending", "delivered", "dead"]},
        "attempts": {"type": "array", "items": {"type": "object", "properties": {
            "n": {"type": "integer"}, "at": {"type": "string", "format": "date-time"},
            "status_code": {"type": ["integer", "null"]}, "error": {"type": "string"},
            "ms": {"type": "integer"}}}},
        "next_attempt_at": {"type": ["string", "null"], "format": "date-time"},
        "reason": {"type": ["string", "null"], "description": "why it is dead"},
        "body": {"description": "the JSON posted"},
    },
}
DELIVERIES_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"items": {"type": "array", "items": DELIVERY_SCHEMA},
                                     "next_cursor": {"type": ["string", "null"]}}}
WebhookName = Annotated[str, Path(json_schema_extra={
    "pattern": NAME_PATTERN, "description": "a webhook's name: 1-100 letters, digits and _.- "
                                            "starting with a letter or digit"})]
_NOT_FOUND = {404: "no webhook of that name (or another tenant's)"}


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


@router.put("/v1/webhooks/{name}", status_code=201, openapi_extra=json_body(WEBHOOK_PUT_SCHEMA),
            responses={201: json_answer("a new webhook", WEBHOOK_SCHEMA),
                       200: json_answer("the webhook, replaced", WEBHOOK_SCHEMA),
                       **problems(*WRITES, REQUEST_TOO_LARGE, INVALID_REQUEST, CONFLICT,
                                  meanings={409: "another tenant's webhook holds the name",
                                            422: "an invalid name or body, naming every "
                                                 "field"})})
async def put_webhook(request: Request, name: WebhookName) -> Response:
    """Create (201) or replace (200) a webhook: its URL, events, filter, secret and
    retries. Events after its creation are delivered; a replaced webhook keeps its
    deliveries."""
    hw = accepting(request)
    check_name(name)
    body = parse_body(WebhookRequest, await read_limited(request, hw.settings.max_body_bytes))
    require_storable(body.model_dump())  # no U+0000: PostgreSQL's text refuses it
    me = principal(request)
    before = await read_hook(hw.pool, name)
    live = before if before is not None and not before.deleted else None
    record = record_of(name, body, me, live, now_ms())
    await write(hw.settings, hw.producer, hw.pool, record)
    where = f"/v1/webhooks/{quote(name, safe='')}"
    return _json(hook_view(record), 200 if live is not None else 201, {"Location": where})


@router.get("/v1/webhooks", responses={
    200: json_answer("the webhooks, by name", WEBHOOKS_SCHEMA),
    **problems(*READS, INVALID_REQUEST)})
async def get_webhooks(request: Request, limit: Annotated[int, Query(ge=1, le=500)] = 100,
                       cursor: str | None = None) -> Response:
    """The webhooks by name (the principal's tenant's), paged by ``cursor``."""
    return _json(await read_hooks(runtime(request).pool, principal(request), limit, cursor))


@router.get("/v1/webhooks/{name}", responses={
    200: json_answer("the webhook (never its secret)", WEBHOOK_SCHEMA),
    **problems(*READS, NOT_FOUND, meanings=_NOT_FOUND)})
async def get_webhook(request: Request, name: WebhookName) -> Response:
    """A webhook's settings, without its secret; 404 when there is none."""
    return _json(hook_view(await visible(runtime(request).pool, name, principal(request))))


@router.get("/v1/webhooks/{name}/deliveries", responses={
    200: json_answer("the webhook's deliveries, newest first", DELIVERIES_SCHEMA),
    **problems(*READS, NOT_FOUND, BAD_CURSOR, INVALID_REQUEST, meanings=_NOT_FOUND)})
async def get_deliveries(
        request: Request, name: WebhookName,
        status: Literal["pending", "delivered", "dead"] | None = None,
        workflow_id: Annotated[str | None, Query(max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        cursor: str | None = None) -> Response:
    """A webhook's deliveries, newest first: each with its run, event, status, attempts
    (time, status code or error) and, while pending, when the next attempt is due."""
    pool = runtime(request).pool
    await visible(pool, name, principal(request))
    return _json(await read_deliveries(pool, name, Which(status, workflow_id), limit, cursor))


@router.post("/v1/webhooks/{name}/deliveries/{delivery_id}/retry", status_code=202, responses={
    202: json_answer("due again now", DELIVERY_SCHEMA),
    **problems(*WRITES, NOT_FOUND, CONFLICT, meanings={
        404: "no webhook of that name, or no such delivery of it",
        409: "the delivery is pending: its next attempt is due already"})})
async def retry_delivery(request: Request, name: WebhookName,
                         delivery_id: Annotated[str, Path(max_length=100)]) -> Response:
    """Make a dead (or delivered) delivery due again now, for one more attempt with the
    same id and body (202); 409 while it is pending."""
    hw = accepting(request)
    await visible(hw.pool, name, principal(request))
    refused = await redeliver(hw.pool, name, delivery_id, now_ms())
    if refused == "unknown":
        raise Problem(404, "Not found", f"no delivery {delivery_id} of webhook {name}")
    if refused is not None:
        raise Problem(409, "Conflict", f"delivery {delivery_id} is {refused}: its next "
                      "attempt is due already")
    page = await read_deliveries(hw.pool, name, Which(delivery_id=delivery_id), 1, None)
    return _json(page["items"][0], 202)


@router.delete("/v1/webhooks/{name}", status_code=204, responses={
    204: {"description": "deleted: no more deliveries (pending ones are dead-lettered)"},
    **problems(*WRITES, NOT_FOUND, meanings=_NOT_FOUND)})
async def delete_webhook(request: Request, name: WebhookName) -> Response:
    """Delete a webhook (204): nothing more is delivered to it; 404 when there is
    none."""
    hw = accepting(request)
    hook = await visible(hw.pool, name, principal(request))
    now = now_ms()
    await write(hw.settings, hw.producer, hw.pool, type(hook)(
        hook.name, hook.tenant, hook.url, hook.events, hook.filter, "", hook.max_attempts,
        hook.backoff_ms, hook.backoff_max_ms, True, hook.created_at_ms, max(now, hook.at_ms)))
    return Response(status_code=204)
