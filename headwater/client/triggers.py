"""``Client.triggers`` and ``AsyncClient.triggers``: Kafka topics whose records start
runs (``/v1/triggers``, docs/http-api.md, "Triggers"). Each method's request and the
reading of its answer are one ``requests.Request`` built here, sent by the client's
``fetch`` (so they retry as its other calls do: a ``PUT`` again with the same settings
changes nothing).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from headwater.client.http import Call, segment
from headwater.client.requests import (
    Fetches,
    FetchesAsync,
    Listing,
    Request,
    nothing,
    pages,
    reading,
)


class TriggerOptions(TypedDict, total=False):
    """A trigger's settings beside its topic and definition; those not given take the
    gateway's defaults."""

    format: str
    """``json`` (default), ``avro`` or ``bytes``."""
    avro: dict[str, Any]
    """With ``avro``: ``{"schema": <Avro schema>, "framing": "confluent" | "plain" |
    "single-object"}``."""
    filter: list[dict[str, Any]]
    """``[{"pointer": "/value/kind", "equals": "order"}, ...]``: all must hold."""
    input: Any
    """The run's input template (default ``"${value}"``)."""
    id: str
    """The run id template (default: derived from topic, partition and offset)."""
    start: str
    """``latest`` (default) or ``earliest``: where a new trigger begins reading."""


@dataclass(frozen=True)
class Trigger:
    """A trigger, as ``GET /v1/triggers[/{name}]`` and ``PUT`` show it.

    Attributes:
        name: its name.
        tenant: its tenant (None: none).
        topic: the topic it reads.
        definition: the definition its runs are of (``name`` or ``name@version``).
        settings: every setting, defaults filled in.
        lag: records of the topic its consumer group has not committed yet (None:
            not read, or Kafka could not be read).
        raw: the whole document (``lag`` per partition under ``raw["lag"]``).
    """

    name: str
    tenant: str | None
    topic: str
    definition: str
    settings: dict[str, Any]
    lag: int | None
    raw: dict[str, Any] = field(repr=False, compare=False)


def trigger_from(doc: dict[str, Any]) -> Trigger:
    """The view of a trigger document."""
    settings = doc.get("settings") or {}
    lag = doc.get("lag")
    return Trigger(name=doc["name"], tenant=doc.get("tenant"), topic=settings.get("topic", ""),
                   definition=settings.get("definition", ""), settings=settings,
                   lag=int(lag["lag"]) if isinstance(lag, dict) else None, raw=doc)


def _one(name: str) -> str:
    return f"/v1/triggers/{segment(name)}"


def put_body(topic: str, definition: str, options: TriggerOptions) -> dict[str, Any]:
    """The body of a ``PUT``."""
    return {"topic": topic, "definition": definition, **options}


def applying(name: str, body: dict[str, Any]) -> Request[Trigger]:
    """``Triggers.apply``: ``PUT /v1/triggers/{name}``."""
    return Request(Call("PUT", _one(name), json=body), reading(trigger_from))


def listing() -> Request[Listing[Trigger]]:
    """``Triggers.list``: ``GET /v1/triggers``."""
    return pages("/v1/triggers", trigger_from)


def showing(name: str) -> Request[Trigger]:
    """``Triggers.get``: ``GET /v1/triggers/{name}``."""
    return Request(Call("GET", _one(name)), reading(trigger_from))


def deleting(name: str) -> Request[None]:
    """``Triggers.delete``: ``DELETE /v1/triggers/{name}``."""
    return Request(Call("DELETE", _one(name)), nothing)


class Triggers:
    """``Client.triggers``: create or replace, list, show, delete."""

    def __init__(self, client: Fetches) -> None:
        self._client = client

    def put(self, name: str, *, topic: str, definition: str,
            **options: Unpack[TriggerOptions]) -> Trigger:
        """Create or replace the trigger ``name``: each record of ``topic`` that passes
        ``filter`` starts one run of ``definition`` (``name`` or ``name@3``).

        ``options`` (``TriggerOptions``) not given take the gateway's defaults. Raises
        ``Unprocessable`` naming each faulty field (topic, format, filter, input, id,
        definition ...).
        """
        return self.apply(name, put_body(topic, definition, options))

    def apply(self, name: str, body: dict[str, Any]) -> Trigger:
        """``put`` with the body as a mapping (a file's, as ``headwater triggers apply``
        reads it); the gateway names any field it does not take."""
        return self._client.fetch(applying(name, body))

    def list(self) -> builtins.list[Trigger]:
        """Every trigger, by tenant and name, with its lag."""
        return self._client.fetch_all(listing())

    def get(self, name: str) -> Trigger:
        """A trigger and its lag. Raises ``NotFound``."""
        return self._client.fetch(showing(name))

    def delete(self, name: str) -> None:
        """Delete it: its consumer stops (runs started go on). Raises ``NotFound``."""
        self._client.fetch(deleting(name))


class AsyncTriggers:
    """``AsyncClient.triggers``: as ``Triggers``, to await."""

    def __init__(self, client: FetchesAsync) -> None:
        self._client = client

    async def put(self, name: str, *, topic: str, definition: str,
                  **options: Unpack[TriggerOptions]) -> Trigger:
        """As ``Triggers.put``."""
        return await self.apply(name, put_body(topic, definition, options))

    async def apply(self, name: str, body: dict[str, Any]) -> Trigger:
        """As ``Triggers.apply``."""
        return await self._client.fetch(applying(name, body))

    async def list(self) -> builtins.list[Trigger]:
        """As ``Triggers.list``."""
        return await self._client.fetch_all(listing())

    async def get(self, name: str) -> Trigger:
        """As ``Triggers.get``."""
        return await self._client.fetch(showing(name))

    async def delete(self, name: str) -> None:
        """As ``Triggers.delete``."""
        await self._client.fetch(deleting(name))
