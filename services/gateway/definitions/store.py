"""Register and delete definitions: choose the version under a per-name lock, claim it in
PostgreSQL, put its records on the ``definitions`` topic, then mark it stored.

Each write of a name holds a PostgreSQL advisory lock on that name (session-level, on
one connection, for the whole write: versions are chosen and produced one at a time,
so the topic holds each name's records in the order of its versions). The version row
and the head are claimed (committed, ``state = 'claimed'``) before the records are
produced and marked ``stored`` once Kafka acknowledged them. A write whose records were
never produced (the gateway died, or Kafka did not answer: 503) is produced again by the
next ``PUT`` or ``DELETE`` of the name before it decides anything (``_heal``), which is
harmless if they had been: the topic is compacted by key, and the records are the same.

A write is scoped by tenant under the same lock (``headwater.core.definitions.
write_refusal``): a tenant's principal writes its own names and new ones (which become
its own); another tenant's name is 409 on ``PUT`` (taken, whoever holds it) and 404 on
``DELETE``; a shared name is 403 (written with a token of every tenant).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import asyncpg
from aiokafka import AIOKafkaProducer

from headwater.core.definitions import (
    FOREIGN,
    DefinitionHead,
    DefinitionStored,
    Head,
    RollbackRefused,
    decide_put,
    decide_rollback,
    digest,
    new_owner,
    next_revision,
    stored_key,
    write_refusal,
)
from services.common.auth.tokens import OPEN, Principal
from services.common.clock import now_ms
from services.common.db import name_locked
from services.common.kafka.client import AVRO_HEADERS
from services.gateway.definitions import records as definition_records
from services.gateway.definitions.registry import tenant_of, unknown
from services.gateway.edge.problems import RETRY_AFTER_S, Problem

CLAIMED, STORED = "claimed", "stored"
"""A version row's or a head's ``state``: chosen, and on Kafka."""
T = TypeVar("T")
LOCK_CLASS = 7420002
"""The first key of the per-name advisory locks (``pg_advisory_lock(int, int)``; the
schema's lock is 7420001)."""


@dataclass(frozen=True)
class Registered:
    """What a ``PUT`` answers: the version, and whether it is new (201) or the body was
    already the current version (200)."""

    name: str
    version: int
    digest: str
    created_at: datetime
    created: bool


@dataclass(frozen=True)
class RolledBack:
    """What a rollback answers: the ``version`` now current, the one current before
    (``previous``), the highest (``latest``), and whether the head changed."""

    name: str
    version: int
    previous: int
    latest: int
    changed: bool


def _as_head(row: Any) -> Head | None:
    """The ``definition_heads`` row as the rules' ``Head`` (None: no row)."""
    if row is None:
        return None
    return Head(row["version"], row["deleted"], int(row["revision"]))


def _millis(at: datetime) -> int:
    return round(at.timestamp() * 1000)


def _refused(name: str, head: Any, me: Principal, putting: bool) -> None:
    """Raise the problem of ``me`` writing ``name`` (its head row, or None), if any.

    Raises:
        Problem: 409 (``PUT``) or 404 (``DELETE``) another tenant's name, 403 a shared
            one for a principal of one tenant.
    """
    why = write_refusal(head is not None, head.get("tenant") if head else None,
                        tenant_of(me))
    if why is None:
        return
    if why == FOREIGN:
        if not putting:
            raise unknown(name)
        raise Problem(409, "Conflict", f"the definition name {name} is taken; register the "
                      "definition under another name", definition=name)
    raise Problem(403, "Forbidden", f"definition {name} is shared by every tenant: shared "
                  "definitions are written with a token for every tenant; the token is for "
                  f"tenant {me.tenant!r}", role=me.role, needs="tenant *")


class _Writer:
    """One write of one name, on a connection that holds the name's lock."""

    def __init__(self, conn: asyncpg.Connection, producer: AIOKafkaProducer, topic: str,
                 timeout_s: float) -> None:
        self.conn, self.producer, self.topic, self.timeout_s = conn, producer, topic, timeout_s

    async def send(self, key: str, record: DefinitionStored | DefinitionHead) -> None:
        """Produce one record and wait for Kafka's acknowledgement.

        Raises:
            Problem: 503 with ``Retry-After`` when Kafka fails or is slow.
        """
        retry = {"Retry-After": RETRY_AFTER_S}
        try:
            await asyncio.wait_for(self.producer.send_and_wait(
                self.topic, definition_records.encode(record), key=key.encode(),
                headers=AVRO_HEADERS), self.timeout_s)
        except TimeoutError as e:
            raise Problem(503, "Kafka unavailable", f"Kafka did not acknowledge the definition "
                          f"within {self.timeout_s:g} s; it may still be stored, and retrying "
                          "is safe", headers=retry) from e
        except Exception as e:
            raise Problem(503, "Kafka unavailable", f"the definition was not stored: {e}; "
                          "retrying is safe", headers=retry) from e

    async def heal(self, name: str) -> None:
        """Produce what an earlier write of ``name`` claimed but may not have produced."""
        for row in await self.conn.fetch(
                "select version, spec, input_schema, digest, created_at, tenant from"
                " definitions where name = $1 and state = $2 order by version", name,
                CLAIMED):
            await self.send(stored_key(name, row["version"]), DefinitionStored(
                name, row["version"], row["spec"], row["input_schema"], row["digest"],
                _millis(row["created_at"]), row["tenant"]))
            await self.conn.execute("update definitions set state = $3 where name = $1 and"
                                    " version = $2", name, row["version"], STORED)
        head = await self.conn.fetchrow("select version, deleted, updated_at, tenant,"
                                        " revision from definition_heads where name = $1"
                                        " and state = $2", name, CLAIMED)
        if head is not None:
            await self.send(name, DefinitionHead(name, head["version"], head["deleted"],
                                                 _millis(head["updated_at"]), head["tenant"],
                                                 int(head["revision"])))
            await self.conn.execute("update definition_heads set state = $2 where name = $1",
                                    name, STORED)

    async def claim(self, record: DefinitionStored, at: datetime, revision: int) -> None:
        """Claim a new version and make it the head (one transaction)."""
        async with self.conn.transaction():
            await self.conn.execute(
                "insert into definitions (name, version, spec, input_schema, digest, state,"
                " created_at, tenant) values ($1, $2, $3, $4, $5, $6, $7, $8)", record.name,
                record.version, record.spec, record.input_schema, record.digest, CLAIMED, at,
                record.tenant)
            await self._claim_head(record.name, record.version, False, at, record.tenant,
                                   revision)

    async def _claim_head(self, name: str, version: int, deleted: bool, at: datetime,
                          tenant: str | None, revision: int) -> None:
        await self.conn.execute(
            "insert into definition_heads (name, version, deleted, state, updated_at, tenant,"
            " revision) values ($1, $2, $3, $4, $5, $6, $7) on conflict (name) do update set"
            " version = excluded.version, deleted = excluded.deleted, state = excluded.state,"
            " updated_at = excluded.updated_at, tenant = excluded.tenant,"
            " revision = excluded.revision", name, version, deleted, CLAIMED, at, tenant,
            revision)

    async def _head(self, name: str) -> Any:
        return await self.conn.fetchrow("select version, deleted, tenant, revision from"
                                        " definition_heads where name = $1", name)

    async def _versions(self, name: str) -> dict[int, str]:
        return {r["version"]: r["digest"] for r in await self.conn.fetch(
            "select version, digest from definitions where name = $1", name)}

    async def put(self, name: str, spec: Any, input_schema: Any,
                  me: Principal = OPEN, announced: bool = False) -> Registered:
        """Decide, claim, produce and mark stored (the name's lock is held); an
        ``announced`` body leaves a rolled-back name on its version."""
        body_digest = digest(spec, input_schema)
        await self.heal(name)
        head = await self._head(name)
        _refused(name, head, me, putting=True)
        if announced and head is not None and not head["deleted"]:
            versions = await self._versions(name)
            if head["version"] < max(versions, default=0):
                return await self._unchanged(name, head["version"])
        owner = new_owner(head is not None, head.get("tenant") if head else None,
                          tenant_of(me))
        versions = await self._versions(name)
        try:
            decision = decide_put(_as_head(head), versions, body_digest)
        except ValueError as e:
            raise Problem(409, "Conflict", str(e)) from e
        if not decision.created:
            return await self._unchanged(name, decision.version)
        at_ms = now_ms()
        at = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
        record = DefinitionStored(name, decision.version, spec, input_schema, body_digest,
                                  at_ms, owner)
        await self.claim(record, at, next_revision(_as_head(head)))
        await self.heal(name)  # produces the version, then the head, and marks them stored
        return Registered(name, decision.version, body_digest, at, True)

    async def delete(self, name: str, me: Principal = OPEN) -> int:
        """Mark the name deleted, produce its head, mark it stored; the last version."""
        await self.heal(name)
        head = await self._head(name)
        if head is None:
            raise unknown(name)
        _refused(name, head, me, putting=False)
        if not head["deleted"]:
            await self._claim_head(name, head["version"], True, datetime.now(tz=UTC),
                                   head.get("tenant"), next_revision(_as_head(head)))
            await self.heal(name)
        return int(head["version"])

    async def _unchanged(self, name: str, version: int) -> Registered:
        row = await self.conn.fetchrow("select digest, created_at from definitions where"
                                       " name = $1 and version = $2", name, version)
        return Registered(name, version, row["digest"], row["created_at"], False)

    async def rollback(self, name: str, to: int | None, me: Principal = OPEN) -> RolledBack:
        """Make version ``to`` (None: the one before the current) current; produce its
        head and mark it stored."""
        await self.heal(name)
        head = await self._head(name)
        if head is None:
            raise unknown(name)
        _refused(name, head, me, putting=False)
        versions = await self._versions(name)
        try:
            decision = decide_rollback(_as_head(head), versions, to)
        except RollbackRefused as e:
            if e.missing:
                raise Problem(404, "Not found", f"definition {name}: {e}",
                              definition=name) from e
            raise Problem(409, "Conflict", f"definition {name}: {e}", definition=name) from e
        if decision.changed:
            await self._claim_head(name, decision.version, False, datetime.now(tz=UTC),
                                   head.get("tenant"), next_revision(_as_head(head)))
            await self.heal(name)
        return RolledBack(name, decision.version, decision.previous, max(versions),
                          decision.changed)


@dataclass(frozen=True)
class Store:
    """Writes of the registry.

    Attributes:
        pool: the projection's pool.
        producer: the Kafka producer.
        topic: the definitions topic.
        produce_timeout_s: longest wait for Kafka's acknowledgement, seconds.
    """

    pool: asyncpg.Pool
    producer: AIOKafkaProducer
    topic: str
    produce_timeout_s: float

    async def _locked(self, name: str, write: Callable[[_Writer], Awaitable[T]]) -> T:
        """``write(writer)`` holding the name's advisory lock on one connection."""
        async with name_locked(self.pool, LOCK_CLASS, name) as conn:
            return await write(_Writer(conn, self.producer, self.topic,
                                       self.produce_timeout_s))

    async def put(self, name: str, spec: Any, input_schema: Any,
                  me: Principal = OPEN) -> Registered:
        """Register a body (already validated) under ``name``.

        Args:
            name: a valid definition name.
            spec: the workflow spec.
            input_schema: its input's JSON Schema, or None.
            me: who writes: a new name becomes its tenant's (shared for a principal of
                every tenant); an existing name keeps its tenant.

        Returns:
            The version: new, or the current one when the body is the same.

        Raises:
            Problem: 503 when Kafka does not acknowledge (retrying is safe), 409 when the
                name has used every version number or is another tenant's, 403 a shared
                name for a principal of one tenant.
        """
        return await self._locked(name, lambda w: w.put(name, spec, input_schema, me))

    async def delete(self, name: str, me: Principal = OPEN) -> int:
        """Delete ``name``: no new runs; its versions stay readable; deleting it again
        changes nothing.

        Args:
            name: the definition's name.
            me: who deletes (``put``'s rules; another tenant's name is unknown).

        Returns:
            Its last version.

        Raises:
            Problem: 404 no such name (or another tenant's), 403 a shared name for a
                principal of one tenant, 503 when Kafka does not acknowledge (retrying is
                safe).
        """
        return await self._locked(name, lambda w: w.delete(name, me))

    async def put_announced(self, name: str, spec: Any, input_schema: Any) -> Registered:
        """``put`` of a body a worker announced (shared, as an operator's): the same,
        but a name rolled back (its current version below its highest) stays on its
        version until an operator registers one (``put``), so workers still running
        the newer code do not undo the rollback."""
        return await self._locked(name, lambda w: w.put(name, spec, input_schema, OPEN,
                                                        announced=True))

    async def rollback(self, name: str, to: int | None = None,
                       me: Principal = OPEN) -> RolledBack:
        """Make an earlier version of ``name`` current: new runs use it, runs already
        started keep the version they recorded. Producing the head again is harmless.

        Args:
            name: the definition's name.
            to: the version to make current; None: the highest below the current one.
            me: who rolls back (``delete``'s rules).

        Returns:
            The version now current (unchanged when ``to`` was current already).

        Raises:
            Problem: 404 no such name or version (or another tenant's), 409 a deleted
                name or none before the current one, 403 a shared name for a principal
                of one tenant, 503 when Kafka does not acknowledge (retrying is safe).
        """
        return await self._locked(name, lambda w: w.rollback(name, to, me))
