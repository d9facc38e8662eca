"""``Client.operations`` and ``AsyncClient.operations``: bulk operations
(``/v1/operations``, docs/client.md "Bulk operations"): one action (cancel, signal,
rerun) done to every run a filter matches, recorded with its progress and counts.

The filter is the listing's (``Client.list``): ``labels``, ``status``, ``name``,
``definition``, ``tenant``, ``paused``. The operation's id is chosen before the first try, so a
retried start is the same operation.
"""

from __future__ import annotations

import builtins
import uuid
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from headwater.client.http import Call, label_params, segment
from headwater.client.requests import Fetches, FetchesAsync, Request, reading


class Filter(TypedDict, total=False):
    """Which runs (all of the given must hold); at least one besides ``tenant``."""

    labels: dict[str, str | None]
    """Labels the runs carry (a None value: the key with any value)."""
    status: str
    name: str
    definition: str
    """A definition's name, or ``name@version``."""
    tenant: str
    paused: bool
    """True: only the runs paused now; False: only the others."""


@dataclass(frozen=True)
class DryRun:
    """What an operation would act on: how many runs match and a few of their ids.

    Attributes:
        matched: the runs the filter matches (at most the gateway's limit, 5000).
        over_limit: more match than one operation takes.
        sample: the ids of the oldest matched (at most 10).
        to_act_on: of the matched, those the action acts on (the others it skips:
            ended runs; for a rerun, those that did not fail and were not cancelled).
        by_status: the matched runs by their status now.
    """

    matched: int
    over_limit: bool
    sample: list[str]
    to_act_on: int = 0
    by_status: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Operation:
    """A bulk operation (``GET /v1/operations/{id}``).

    Attributes:
        id: its id.
        action: ``cancel``, ``signal``, ``rerun``, ``pause`` or ``resume``.
        state: ``running`` or ``done``.
        matched: the runs its filter matched when it started.
        progress: how many of them it has acted on.
        counts: ``done``, ``skipped`` and ``failed`` so far.
        reasons: the skipped and failed runs with why (``{"id", "outcome", "reason"}``).
        raw: the whole document.
    """

    id: str
    action: str
    state: str
    matched: int
    progress: int
    counts: dict[str, int]
    reasons: list[dict[str, str]]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def done(self) -> bool:
        """Whether every target has been acted on (the counts are final)."""
        return self.state == "done"


def operation_from(doc: dict[str, Any]) -> Operation:
    """The view of an operation's document."""
    return Operation(doc["id"], doc["action"], doc["state"], int(doc["matched"]),
                     int(doc["progress"]), dict(doc["counts"]), list(doc["reasons"]), doc)


def dry_run_from(doc: dict[str, Any]) -> DryRun:
    """The view of a dry run's answer."""
    return DryRun(int(doc["matched"]), bool(doc.get("over_limit")), list(doc["sample"]),
                  int(doc.get("to_act_on", doc["matched"])), dict(doc.get("by_status") or {}))


def body(action: str, where: Filter, args: dict[str, Any]) -> dict[str, Any]:
    """The body of ``POST /v1/operations`` (``args``: reason, signal, cache, id, ...)."""
    given: dict[str, Any] = {k: v for k, v in where.items()
                             if k != "labels" and (v or (k == "paused" and v is not None))}
    labels = where.get("labels")
    if labels:
        given["label"] = label_params(labels)
    return {"action": action, "filter": given, **{k: v for k, v in args.items()
                                                 if v not in (None, "")}}


def starting(action: str, where: Filter, args: dict[str, Any]) -> Request[Operation]:
    """``Operations.start``: ``POST /v1/operations`` under an id chosen now."""
    doc = body(action, where, {"id": args.pop("id", None) or f"op-{uuid.uuid4().hex}",
                               **args})
    return Request(Call("POST", "/v1/operations", json=doc), reading(operation_from))


def trying(action: str, where: Filter, args: dict[str, Any]) -> Request[DryRun]:
    """``Operations.dry_run``: ``POST /v1/operations`` with ``dry_run``."""
    return Request(Call("POST", "/v1/operations",
                        json={**body(action, where, args), "dry_run": True}),
                   reading(dry_run_from))


def showing(operation_id: str) -> Request[Operation]:
    """``Operations.get``: ``GET /v1/operations/{id}``."""
    return Request(Call("GET", f"/v1/operations/{segment(operation_id)}"),
                   reading(operation_from))


def listing(limit: int) -> Request[builtins.list[Operation]]:
    """``Operations.list``: ``GET /v1/operations``."""
    return Request(Call("GET", "/v1/operations", params={"limit": limit}),
                   reading(lambda doc: [operation_from(i) for i in doc["items"]]))


def _args(reason: str, signal: str | None, fields: dict[str, Any] | None,
          cache_refresh: bool, operation_id: str | None) -> dict[str, Any]:
    return {"reason": reason, "id": operation_id,
            "signal": {"name": signal, "fields": fields or {}} if signal else None,
            "cache": "refresh" if cache_refresh else None}


class Operations:
    """``Client.operations``: start (or try) a bulk operation, read its progress."""

    def __init__(self, client: Fetches) -> None:
        self._client = client

    def start(self, action: str, *, reason: str = "", signal: str | None = None,
              fields: dict[str, Any] | None = None, cache_refresh: bool = False,
              id: str | None = None, **where: Unpack[Filter]) -> Operation:
        """Do ``action`` to every run ``where`` matches, as one operation, in the
        background; ``get`` tells its progress.

        Args:
            action: ``cancel`` (with ``reason``), ``signal`` (``signal``: its name, and
                its ``fields``) or ``rerun`` (``cache_refresh``: its cached nodes anew).
            id: the operation's id (None: ``op-<uuid4 hex>``, chosen before the first
                try).
            where: the filter (``Filter``): ``labels={"team": "search"}``, ``status``...

        Raises:
            Unprocessable: an unknown action, a missing signal, an empty or malformed
                filter, more runs than one operation takes. Conflict: the id is taken by
                another operation.
        """
        return self._client.fetch(starting(action, where, _args(
            reason, signal, fields, cache_refresh, id)))

    def dry_run(self, action: str, *, signal: str | None = None,
                **where: Unpack[Filter]) -> DryRun:
        """How many runs ``start`` would act on, and a few of them; records nothing."""
        return self._client.fetch(trying(action, where, _args("", signal, None, False, None)))

    def get(self, operation_id: str) -> Operation:
        """An operation's progress and counts. Raises ``NotFound``."""
        return self._client.fetch(showing(operation_id))

    def list(self, limit: int = 20) -> builtins.list[Operation]:
        """The latest operations, newest first."""
        return self._client.fetch(listing(limit))


class AsyncOperations:
    """``AsyncClient.operations``: as ``Operations``, to await."""

    def __init__(self, client: FetchesAsync) -> None:
        self._client = client

    async def start(self, action: str, *, reason: str = "", signal: str | None = None,
                    fields: dict[str, Any] | None = None, cache_refresh: bool = False,
                    id: str | None = None, **where: Unpack[Filter]) -> Operation:
        """As ``Operations.start``."""
        return await self._client.fetch(starting(action, where, _args(
            reason, signal, fields, cache_refresh, id)))

    async def dry_run(self, action: str, *, signal: str | None = None,
                      **where: Unpack[Filter]) -> DryRun:
        """As ``Operations.dry_run``."""
        return await self._client.fetch(trying(action, where,
                                               _args("", signal, None, False, None)))

    async def get(self, operation_id: str) -> Operation:
        """As ``Operations.get``."""
        return await self._client.fetch(showing(operation_id))

    async def list(self, limit: int = 20) -> builtins.list[Operation]:
        """As ``Operations.list``."""
        return await self._client.fetch(listing(limit))
