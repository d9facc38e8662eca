"""``Client.webhooks`` and ``AsyncClient.webhooks``: webhooks (``/v1/webhooks``,
docs/webhooks.md) and their deliveries. Each method's request and the reading of its
answer are one ``requests.Request`` built here, sent by the client's ``fetch`` (so a
``PUT`` is retried like any call: the same body again is the same webhook). Answers are
the gateway's JSON documents (a webhook never carries its secret).
"""

from __future__ import annotations

import builtins
from typing import Any

from headwater.client.http import Call, segment
from headwater.client.requests import (
    Fetches,
    FetchesAsync,
    Listing,
    Request,
    document,
    nothing,
    pages,
)

DELIVERIES_PAGE = 500
"""The most deliveries one ``deliveries`` call reads (the gateway's largest page)."""


def put_body(url: str, events: list[str], secret: str, filter: dict[str, Any] | None,
             retry: dict[str, Any] | None) -> dict[str, Any]:
    """The body of a ``PUT``."""
    body: dict[str, Any] = {"url": url, "events": events, "secret": secret}
    if filter is not None:
        body["filter"] = filter
    if retry is not None:
        body["retry"] = retry
    return body


def _one(name: str, tail: str = "") -> str:
    return f"/v1/webhooks/{segment(name)}{tail}"


def applying(name: str, body: dict[str, Any]) -> Request[dict[str, Any]]:
    """``Webhooks.apply``: ``PUT /v1/webhooks/{name}``."""
    return Request(Call("PUT", _one(name), json=body), document)


def listing() -> Request[Listing[dict[str, Any]]]:
    """``Webhooks.list``: every page of ``GET /v1/webhooks``."""
    return pages("/v1/webhooks", lambda item: item)


def showing(name: str) -> Request[dict[str, Any]]:
    """``Webhooks.get``: ``GET /v1/webhooks/{name}``."""
    return Request(Call("GET", _one(name)), document)


def deleting(name: str) -> Request[None]:
    """``Webhooks.delete``: ``DELETE /v1/webhooks/{name}``."""
    return Request(Call("DELETE", _one(name)), nothing)


def delivering(name: str, status: str | None, workflow_id: str | None,
               limit: int) -> Request[dict[str, Any]]:
    """``Webhooks.deliveries``: one page of ``GET /v1/webhooks/{name}/deliveries``."""
    params: dict[str, Any] = {"limit": limit}
    if status is not None:
        params["status"] = status
    if workflow_id is not None:
        params["workflow_id"] = workflow_id
    return Request(Call("GET", _one(name, "/deliveries"), params=params), document)


def redelivering(name: str, delivery_id: str) -> Request[dict[str, Any]]:
    """``Webhooks.redeliver``: ``POST .../deliveries/{id}/retry``."""
    return Request(Call("POST", _one(name, f"/deliveries/{segment(delivery_id)}/retry")),
                   document)


class Webhooks:
    """``Client.webhooks``: create or replace, list, show, delete, deliveries, and
    redelivering one."""

    def __init__(self, client: Fetches) -> None:
        self._client = client

    def put(self, name: str, *, url: str, events: builtins.list[str], secret: str,
            filter: dict[str, Any] | None = None,
            retry: dict[str, Any] | None = None) -> dict[str, Any]:
        """Create or replace the webhook ``name``: ``events`` (``run.ended``,
        ``run.succeeded``, ``run.failed``, ``run.cancelled``, ``run.waiting``) of the runs
        ``filter`` takes (``{"names": [...], "definitions": [...]}``), posted to ``url``
        signed with ``secret``; ``retry``: ``{max_attempts, backoff_s, backoff_max_s}``.
        Returns the webhook (without its secret). Raises ``Unprocessable`` naming each
        faulty field, ``Conflict`` for another tenant's name."""
        return self.apply(name, put_body(url, events, secret, filter, retry))

    def apply(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """``put`` with the body as a mapping (a file's, as ``headwater webhooks apply``
        reads it)."""
        return self._client.fetch(applying(name, body))

    def list(self) -> builtins.list[dict[str, Any]]:
        """Every webhook, by name (every page of ``GET /v1/webhooks``)."""
        return self._client.fetch_all(listing())

    def get(self, name: str) -> dict[str, Any]:
        """A webhook's settings (never its secret). Raises ``NotFound``."""
        return self._client.fetch(showing(name))

    def delete(self, name: str) -> None:
        """Delete it: nothing more is delivered. Raises ``NotFound``."""
        self._client.fetch(deleting(name))

    def deliveries(self, name: str, *, status: str | None = None,
                   workflow_id: str | None = None,
                   limit: int = DELIVERIES_PAGE) -> builtins.list[dict[str, Any]]:
        """The webhook's latest deliveries, newest first (``status``: ``pending``,
        ``delivered`` or ``dead``; ``workflow_id``: one run's), each with its attempts.
        Raises ``NotFound``."""
        items: builtins.list[dict[str, Any]] = self._client.fetch(
            delivering(name, status, workflow_id, limit))["items"]
        return items

    def redeliver(self, name: str, delivery_id: str) -> dict[str, Any]:
        """Make a dead (or delivered) delivery due again now, for one more attempt with
        the same id; returns it. Raises ``NotFound``, ``Conflict`` while it is pending."""
        return self._client.fetch(redelivering(name, delivery_id))


class AsyncWebhooks:
    """``AsyncClient.webhooks``: as ``Webhooks``, to await."""

    def __init__(self, client: FetchesAsync) -> None:
        self._client = client

    async def put(self, name: str, *, url: str, events: builtins.list[str], secret: str,
                  filter: dict[str, Any] | None = None,
                  retry: dict[str, Any] | None = None) -> dict[str, Any]:
        """As ``Webhooks.put``."""
        return await self.apply(name, put_body(url, events, secret, filter, retry))

    async def apply(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """As ``Webhooks.apply``."""
        return await self._client.fetch(applying(name, body))

    async def list(self) -> builtins.list[dict[str, Any]]:
        """As ``Webhooks.list``."""
        return await self._client.fetch_all(listing())

    async def get(self, name: str) -> dict[str, Any]:
        """As ``Webhooks.get``."""
        return await self._client.fetch(showing(name))

    async def delete(self, name: str) -> None:
        """As ``Webhooks.delete``."""
        await self._client.fetch(deleting(name))

    async def deliveries(self, name: str, *, status: str | None = None,
                         workflow_id: str | None = None,
                         limit: int = DELIVERIES_PAGE) -> builtins.list[dict[str, Any]]:
        """As ``Webhooks.deliveries``."""
        doc = await self._client.fetch(delivering(name, status, workflow_id, limit))
        items: builtins.list[dict[str, Any]] = doc["items"]
        return items

    async def redeliver(self, name: str, delivery_id: str) -> dict[str, Any]:
        """As ``Webhooks.redeliver``."""
        return await self._client.fetch(redelivering(name, delivery_id))
