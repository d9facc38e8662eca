"""The gateway's connections, created at start-up and shared by the routes."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

import asyncpg
from aiokafka import AIOKafkaProducer
from fastapi import Request

from services.gateway.problems import RETRY_AFTER_S, Problem
from services.gateway.settings import Settings
from services.gateway.stream import Notifier


@dataclass
class Runtime:
    """What the routes use, created at start-up.

    Attributes:
        settings: the gateway's settings.
        pool: the projection's PostgreSQL pool (set once connected).
        producer: the Kafka producer (set once connected).
        notifier: wakes SSE streams on the projector's ``NOTIFY``.
        ready: True once every connection is open.
    """

    settings: Settings
    pool: asyncpg.Pool = field(init=False)
    producer: AIOKafkaProducer = field(init=False)
    notifier: Notifier = field(default_factory=Notifier)
    ready: bool = False

    async def close(self) -> None:
        """Close whatever was opened."""
        await self.notifier.stop()
        if hasattr(self, "producer"):
            await self.producer.stop()
        if hasattr(self, "pool"):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.pool.close(), 5)


def runtime(request: Request) -> Runtime:
    """The gateway's connections.

    Raises:
        Problem: 503 with ``Retry-After`` while still connecting.
    """
    hw: Runtime = request.app.state.hw
    if not hw.ready:
        raise Problem(503, "Not ready", "still connecting to Kafka and PostgreSQL",
                      headers={"Retry-After": RETRY_AFTER_S})
    return hw
