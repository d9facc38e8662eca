"""``PUT/GET/DELETE /v1/triggers/{name}`` and ``GET /v1/triggers``: Kafka topics whose
records start runs of a definition (``settings`` checks a body, ``catalog`` stores it on
the ``triggers`` topic and runs its consumer, ``runner`` the consumer).

A trigger belongs to the principal's tenant (its runs run as that tenant, and resolve
that tenant's definitions); a principal of every tenant (auth off, an operator) stores
triggers of no tenant, and its list shows every tenant's. Another tenant's trigger is
404.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from headwater.trigger_records import TriggerStored, trigger_key
from services.common.auth.tokens import Principal
from services.common.clock import now_ms
from services.gateway.auth.scope import principal
from services.gateway.definitions.registry import resolve
from services.gateway.edge.body import read_limited
from services.gateway.edge.problems import (
    INVALID_REQUEST,
    NOT_FOUND,
    NOT_READY,
    REQUEST_TOO_LARGE,
    RETRY_AFTER_S,
    Problem,
)
from services.gateway.lifetime import Runtime, accepting, runtime
from services.gateway.openapi.bodies import json_body
from services.gateway.openapi.problems import WRITES, problems
from services.gateway.triggers.catalog import Catalog
from services.gateway.triggers.lag import lags
from services.gateway.triggers.settings import parse

router = APIRouter()
log = logging.getLogger("headwater.gateway.triggers")

BODY_EXAMPLE: dict[str, Any] = {
    "topic": "shop.orders", "format": "json", "definition": "ship-order",
    "filter": [{"pointer": "/value/kind", "equals": "order"}],
    "input": {"order": "${value.order}", "customer": "${key}"},
    "id": "order-${value.order.id}", "start": "earliest"}
BODY_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["topic", "definition"], "additionalProperties": False,
    "properties": {
        "topic": {"type": "string", "description": "an existing Kafka topic"},
        "format": {"type": "string", "enum": ["json", "avro", "bytes"], "default": "json"},
        "avro": {"type": "object", "description": "with format avro: {schema, framing: "
                 "confluent (default) | plain | single-object}"},
        "filter": {"type": "array", "items": {"type": "object", "properties": {
            "pointer": {"type": "string"}, "equals": {}}}},
        "input": {"description": "the run's input: ${value...}, ${key}, ${headers.<name>}, "
                  "${topic}, ${partition}, ${offset}, ${timestamp}; default ${value}"},
        "id": {"type": ["string", "null"], "description": "the run id template; null: "
               "trigger:<name>:<topic>:<partition>:<offset>"},
        "definition": {"type": "string", "description": "name or name@version"},
        "start": {"type": "string", "enum": ["latest", "earliest"], "default": "latest"}},
}
TRIGGER_EXAMPLE: dict[str, Any] = {
    "name": "orders", "tenant": None, "settings": {**BODY_EXAMPLE, "avro": None},
    "at_ms": 1722000000000,
    "lag": {"trigger": "-/orders", "name": "orders", "tenant": None, "topic": "shop.orders",
            "group": "headwater-trigger---orders", "lag": 2,
            "partitions": [{"partition": 0, "end": 120, "committed": 118, "lag": 2}]},
    "links": {"self": "/v1/triggers/orders", "definition": "/v1/definitions/ship-order"}}
TRIGGER_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {
        "name": {"type": "string"}, "tenant": {"type": ["string", "null"]},
        "settings": {"type": "object"}, "at_ms": {"type": "integer"},
        "lag": {"type": ["object", "null"], "description": "its consumer group's lag per "
                "partition; null when Kafka could not be read"},
        "links": {"type": "object"}}}


def _answer(description: str, schema: dict[str, Any], example: Any) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": schema, "example": example}}}


def _with_example(extra: dict[str, Any]) -> dict[str, Any]:
    extra["requestBody"]["content"]["application/json"]["example"] = BODY_EXAMPLE
    return extra


def _tenant(me: Principal) -> str | None:
    """The tenant of the triggers ``me`` stores and addresses by name."""
    return None if me.every_tenant else me.tenant


def _catalog(hw: Runtime) -> Catalog:
    catalog = hw.triggers
    if catalog is None:
        raise Problem(503, "Not ready", "the triggers topic is not read yet",
                      headers={"Retry-After": RETRY_AFTER_S})
    return catalog


async def _view(hw: Runtime, record: TriggerStored, with_lag: bool = True) -> dict[str, Any]:
    figures: dict[str, Any] | None = None
    if with_lag and hw.queue_figures is not None:
        try:
            figures = (await lags(hw.queue_figures.offsets, hw.settings.topics, [record]))[0]
        except Exception as e:  # Kafka slow or down: the trigger is shown without
            log.warning("the lag of trigger %s could not be read: %r", record.name, e)
    definition = str(record.settings["definition"]).split("@")[0]
    return {"name": record.name, "tenant": record.tenant, "settings": record.settings,
            "at_ms": record.at_ms, "lag": figures,
            "links": {"self": f"/v1/triggers/{record.name}",
                      "definition": f"/v1/definitions/{definition}"}}


def _json(doc: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json")


@router.put("/v1/triggers/{name}", openapi_extra=_with_example(json_body(BODY_SCHEMA)),
            responses={
    200: _answer("the trigger, unchanged or with new settings (its consumer goes on "
                 "from its committed offsets)", TRIGGER_SCHEMA, TRIGGER_EXAMPLE),
    201: _answer("a new trigger: its consumer starts", TRIGGER_SCHEMA, TRIGGER_EXAMPLE),
    **problems(*WRITES, REQUEST_TOO_LARGE, INVALID_REQUEST, meanings={
        422: "the name or the body, naming every fault (an unknown or deleted "
             "definition too)"})})
async def put_trigger(request: Request, name: str) -> Response:
    """Store a trigger: ``topic``, ``format`` (json, avro with ``avro: {schema,
    framing}``, bytes), ``filter``, ``input``, ``id``, ``definition`` and ``start``
    (docs/http-api.md, "Triggers"). Each record of the topic that passes the filter
    starts one run of the definition; a record that cannot be mapped is dead-lettered."""
    hw = accepting(request)
    catalog = _catalog(hw)
    me = principal(request)
    tenant = _tenant(me)
    body = await read_limited(request, hw.settings.max_body_bytes)
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise Problem(422, "Invalid request", f"body: not JSON: {e}",
                      errors=[f"body: not JSON: {e}"]) from e
    try:
        settings = parse(name, tenant, doc)
    except ValueError as e:
        faults = str(e).split("\n")
        raise Problem(422, "Invalid request", "; ".join(faults), errors=faults) from e
    await _readable(hw, catalog, settings.topic)
    try:
        await resolve(hw.pool, settings.definition, me)
    except Problem as e:
        if e.status >= 500:
            raise
        raise Problem(422, "Invalid request", f"definition: {e.detail}",
                      errors=[f"definition: {e.detail}"]) from e
    known = catalog.live(trigger_key(tenant, name))
    if known is not None and known.settings == settings.document:
        return _json(await _view(hw, known))
    record = TriggerStored(name, tenant, settings.document, False, now_ms())
    try:
        await catalog.write(record)
    except Exception as e:
        raise Problem(503, "Kafka unavailable", f"the trigger was not stored: {e!r}",
                      headers={"Retry-After": RETRY_AFTER_S}) from e
    return _json(await _view(hw, record, with_lag=False), 201 if known is None else 200)


async def _readable(hw: Runtime, catalog: Catalog, topic: str) -> None:
    """Refuse a topic of this deployment's own (its records are Headwater's: a trigger
    on its history would start runs that write more history, without end) and one the
    broker does not list (a consumer of it would have the broker create it, a typo's
    stray topic).

    Raises:
        Problem: 422 naming ``topic``; 503 the broker cannot be asked.
    """
    if hw.settings.topics.is_own(topic):
        fault = (f"topic: {topic!r} is one of this deployment's own topics (prefix "
                 f"{hw.settings.topics.prefix!r}) or Kafka's; a trigger reads another "
                 "system's topic")
        raise Problem(422, "Invalid request", fault, errors=[fault])
    try:
        exists = await catalog.plumbing.exists(hw.settings, topic)
    except Exception as e:
        raise Problem(503, "Kafka unavailable", f"topic {topic!r} not looked up: {e!r}",
                      headers={"Retry-After": RETRY_AFTER_S}) from e
    if not exists:
        fault = f"topic: no topic {topic!r} on the broker; create it first"
        raise Problem(422, "Invalid request", fault, errors=[fault])


@router.get("/v1/triggers/{name}", responses={
    200: _answer("the trigger and its consumer group's lag", TRIGGER_SCHEMA, TRIGGER_EXAMPLE),
    **problems(NOT_READY, NOT_FOUND, meanings={404: "no such trigger"})})
async def get_trigger(request: Request, name: str) -> Response:
    """A trigger's settings and its consumer group's lag per partition."""
    hw = runtime(request)
    record = _catalog(hw).live(trigger_key(_tenant(principal(request)), name))
    if record is None:
        raise Problem(404, "Not found", f"no trigger {name}")
    return _json(await _view(hw, record))


@router.get("/v1/triggers", responses={
    200: _answer("every trigger the principal sees, by tenant and name",
                 {"type": "object", "properties": {"items": {"type": "array",
                                                             "items": TRIGGER_SCHEMA}}},
                 {"items": [TRIGGER_EXAMPLE]}),
    **problems(NOT_READY)})
async def list_triggers(request: Request) -> Response:
    """Every trigger the principal sees (its tenant's; every tenant's for a principal of
    every tenant), with their lag."""
    hw = runtime(request)
    me = principal(request)
    records = [r for r in _catalog(hw).all_live() if me.sees(r.tenant)]
    return _json({"items": [await _view(hw, r) for r in records]})


@router.delete("/v1/triggers/{name}", responses={
    200: _answer("the trigger is deleted: its consumer stops (its group's offsets stay, "
                 "so a trigger stored again under the name goes on from them)",
                 {"type": "object", "properties": {"name": {"type": "string"},
                                                   "deleted": {"type": "boolean"}}},
                 {"name": "orders", "deleted": True}),
    **problems(*WRITES, NOT_FOUND, meanings={404: "no such trigger"})})
async def delete_trigger(request: Request, name: str) -> Response:
    """Delete a trigger: its consumers stop on every gateway."""
    hw = accepting(request)
    catalog = _catalog(hw)
    tenant = _tenant(principal(request))
    if catalog.live(trigger_key(tenant, name)) is None:
        raise Problem(404, "Not found", f"no trigger {name}")
    try:
        await catalog.write(TriggerStored(name, tenant, None, True, now_ms()))
    except Exception as e:
        raise Problem(503, "Kafka unavailable", f"the deletion was not stored: {e!r}",
                      headers={"Retry-After": RETRY_AFTER_S}) from e
    return _json({"name": name, "deleted": True})


async def queue_section(hw: Runtime, me: Principal) -> list[dict[str, Any]] | None:
    """``GET /v1/queues``' ``triggers``: the lag of every trigger ``me`` sees, or None
    when Kafka could not be read."""
    catalog = hw.triggers
    if catalog is None or hw.queue_figures is None:
        return []
    records = [r for r in catalog.all_live() if me.sees(r.tenant)]
    try:
        return await lags(hw.queue_figures.offsets, hw.settings.topics, records)
    except Exception as e:
        log.warning("GET /v1/queues: the triggers' lag could not be read: %r", e)
        return None
