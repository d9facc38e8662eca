"""A gateway under FastAPI's TestClient with stand-ins for PostgreSQL and Kafka.

``FakePool`` keeps the ``workflows`` rows that ``submit`` claims in memory and answers
the other statements with nothing; ``fail`` makes every call raise (PostgreSQL down),
``stall`` makes every call hang. ``FakeProducer`` records what is produced, or never
acknowledges with ``stall``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from fastapi.testclient import TestClient

from headwater import codec
from services.gateway.app import create_app
from services.gateway.lifetime import Runtime
from services.gateway.settings import Settings

UNREACHABLE = Settings(bootstrap="127.0.0.1:9", pg_dsn="postgresql://postgres@127.0.0.1:9/x",
                       produce_timeout_s=0.3, ready_timeout_s=0.3)
SPEC: dict[str, Any] = {"name": "one", "nodes": [{"id": "a", "task": "t.a"}]}


@dataclass
class FakePool:
    """An in-memory stand-in for the projection's pool (see the module docstring)."""

    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    paused_definitions: set[str] = field(default_factory=set)
    fail: BaseException | None = None
    stall: bool = False

    async def _enter(self) -> None:
        if self.stall:
            await asyncio.Event().wait()
        if self.fail is not None:
            raise self.fail

    async def fetchval(self, sql: str, *args: Any) -> Any:
        """Claim (``insert``), ``select 1`` and ``select status``."""
        await self._enter()
        if sql.startswith("insert into workflows"):
            workflow_id, name, tenant, status, spec, workflow_input, digest, _ = args[:8]
            if workflow_id in self.rows:
                return None
            self.rows[workflow_id] = {"status": status, "seq": 0, "name": name,
                                      "tenant": tenant, "spec": spec, "input": workflow_input,
                                      "body_hash": digest}
            if len(args) > 8:  # definition, definition_version, rerun, the ctx.call link
                self.rows[workflow_id].update(zip(
                    ("definition", "definition_version", "rerun", "parent_id", "parent_node",
                     "parent_index", "parent_attempt"), args[8:], strict=True))
            return 1
        if sql.startswith("select 1 from workflows"):
            return 1 if args[0] in self.rows else None
        if sql.startswith("select 1 from definition_pauses"):
            return 1 if args[0] in self.paused_definitions else None
        if sql.startswith("select status from workflows"):
            row = self.rows.get(args[0])
            return row["status"] if row else None
        return 1

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        """The row of ``args[0]``."""
        await self._enter()
        return self.rows.get(args[0])

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        """No events, no listed rows."""
        await self._enter()
        return []

    async def execute(self, sql: str, *args: Any) -> str:
        """Release a claim (``delete from workflows ... seq = 0``, with its blob_refs)."""
        await self._enter()
        row = self.rows.get(args[0])
        if "delete from workflows" in sql and row is not None and row["seq"] == 0:
            del self.rows[args[0]]
        return "DELETE"

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[FakePool]:
        """The pool itself stands in for a connection."""
        await self._enter()
        yield self

    async def close(self) -> None:
        """Nothing to close."""


@dataclass
class FakeProducer:
    """Records ``(topic, key, decoded record)``; with ``stall`` never acknowledges."""

    sent: list[tuple[str, bytes, Any]] = field(default_factory=list)
    stall: bool = False

    async def send_and_wait(self, topic: str, value: bytes, key: bytes,
                            headers: Any = None) -> None:
        """Produce one record."""
        if self.stall:
            await asyncio.Event().wait()
        self.sent.append((topic, key, codec.decode(value)))

    async def stop(self) -> None:
        """Nothing to stop."""


@dataclass
class Gateway:
    """A running app and its runtime, connected to the given stand-ins."""

    client: TestClient
    hw: Runtime

    def connect(self, pool: Any, producer: Any | None = None) -> None:
        """Use ``pool`` and ``producer`` and declare the gateway ready."""
        self.hw.pool = pool
        self.hw.producer = producer or FakeProducer()
        self.hw.ready = True


@contextlib.contextmanager
def gateway(settings: Settings = UNREACHABLE) -> Iterator[Gateway]:
    """Start the app under a ``TestClient``; its own connections never succeed."""
    app = create_app(settings)
    with TestClient(app) as client:
        yield Gateway(client, app.state.hw)


def assert_problem(response: Any, status: int, title: str | None = None) -> dict[str, Any]:
    """Assert ``response`` is a problem document with ``status``; return the document."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json", response.headers
    doc: dict[str, Any] = response.json()
    assert doc["status"] == status, doc
    if title is not None:
        assert doc["title"] == title, doc
    return doc
