"""The gateway's lifetime: the connections it opens at start-up and shares with the
routes (``Runtime``), whether it is ready yet or stopping (``drain``), and the guards a
route calls first: ``runtime`` (503 until ready) and ``accepting`` (503 also once
stopping)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import asyncpg
from aiokafka import AIOKafkaProducer
from fastapi import Request
from starlette.routing import BaseRoute

from services.common.blobs.claims import Claims
from services.gateway.definitions.announced import Registrar
from services.gateway.definitions.store import Store
from services.gateway.drain import Drain
from services.gateway.edge.problems import RETRY_AFTER_S, Problem
from services.gateway.outlet import Outlet
from services.gateway.queues import admission
from services.gateway.queues.figures import QueueFigures
from services.gateway.queues.workers import WorkerRegistry
from services.gateway.queues.workers import install as install_registry
from services.gateway.runs.stream import Notifier
from services.gateway.settings import Settings
from services.gateway.triggers.catalog import Catalog

log = logging.getLogger("headwater.gateway")


@dataclass
class Runtime:
    """What the routes use, created at start-up.

    Attributes:
        settings: the gateway's settings.
        pool: the projection's PostgreSQL pool (set once connected).
        producer: the Kafka producer (set once connected).
        notifier: wakes SSE streams on the projector's ``NOTIFY``.
        ready: True once every connection is open.
        drain: whether the gateway is stopping, and the requests in flight.
        broker_check: asks Kafka for an answer within the seconds it is given and raises
            ``services.common.kafka.BrokerUnreachable`` when none comes (``/ready``); set
            with the producer, over its connection (None: Kafka is not checked).
        workers: the workers' announcements (``queues.workers``; set once connected).
        queue_figures: backlogs and waiting dispatches (``queues.figures``; set once connected).
        registrar: registers the ``@workflow``s workers announce as definitions
            (``definitions.announced``; set once the definitions topic was read).
        claims: the blob store of payloads by reference, over ``pool``
            (``blobs.payloads.claims_over``; set once connected).
        triggers: the triggers and their consumers (``triggers.catalog``; set once
            the triggers topic was read).
    """

    settings: Settings
    pool: asyncpg.Pool = field(init=False)
    producer: AIOKafkaProducer = field(init=False)
    notifier: Notifier = field(default_factory=Notifier)
    ready: bool = False
    drain: Drain = field(default_factory=Drain)
    broker_check: Callable[[float], Awaitable[None]] | None = None
    workers: WorkerRegistry | None = None
    queue_figures: QueueFigures | None = None
    registrar: Registrar | None = None
    claims: Claims | None = None
    triggers: Catalog | None = None

    @property
    def outlet(self) -> Outlet:
        """Where this gateway's submissions go (``outlet.Outlet``; once connected)."""
        return Outlet(self.producer, self.settings.topics, self.settings.produce_timeout_s,
                      self.settings.auth.headers, self.claims)

    def begin_shutdown(self, reason: str) -> None:
        """Stop taking work (``drain``); call from the event loop. Idempotent."""
        if self.drain.begin():
            log.info("gateway shutting down (%s): /ready and new work answer 503; waiting "
                     "up to %.1f s for %d requests in flight (and %d event streams)",
                     reason, self.drain.window_s, self.drain.in_flight, self.drain.streams)

    async def close(self) -> None:
        """Close whatever was opened."""
        await self.notifier.stop()
        if self.triggers is not None:
            await self.triggers.stop()
        await self.stop_queues()
        if hasattr(self, "producer"):
            await self.producer.stop()
        if self.claims is not None:
            with contextlib.suppress(Exception):
                await self.claims.close()
        if hasattr(self, "pool"):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.pool.close(), 5)


    async def start_queues(self) -> None:
        """Start reading the workers topic and the queues' figures, and admit
        submissions with them (``queues.admission``).

        Raises:
            KafkaError: the broker is unreachable.
        """
        self.workers = WorkerRegistry(self.settings, self.settings.announce_grace_s,
                                      self.settings.unserved_after_s)
        self.workers.start()
        install_registry(self.workers)
        figures = QueueFigures(self.settings)
        await figures.start()
        self.queue_figures = figures
        admission.install(admission.Admission(self.workers, figures,
                                              dict(self.settings.queue_maxdepth)))

    def definitions_store(self) -> Store:
        """The definitions registry's writer (once connected)."""
        return Store(self.pool, self.producer, self.settings.topics.definitions,
                     self.settings.produce_timeout_s)

    def start_registrar(self, routes: Iterable[BaseRoute] = ()) -> None:
        """Register the workflows workers announce (after the definitions topic was read
        into its tables, so that versions are chosen from what Kafka holds); a path one
        of the gateway's ``routes`` takes is not registered."""
        if self.workers is None:
            return
        self.registrar = Registrar(self.definitions_store(), self.workers.live, routes)
        self.workers.listeners.append(self.registrar.heard)
        self.registrar.start()

    async def stop_queues(self) -> None:
        """Stop what ``start_queues`` and ``start_registrar`` started."""
        if self.registrar is not None:
            await self.registrar.stop()
        admission.install(None)
        install_registry(None)
        if self.workers is not None:
            await self.workers.stop()
        if self.queue_figures is not None:
            await self.queue_figures.stop()


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


def accepting(request: Request) -> Runtime:
    """The gateway's connections, for a request that starts work (a submission, a
    cancel).

    Raises:
        Problem: 503 with ``Retry-After`` once the gateway is shutting down (another
            instance takes the retry), or while still connecting.
    """
    hw: Runtime = request.app.state.hw
    if hw.drain.stopping:
        raise Problem(503, "Shutting down", "this gateway is shutting down; retry, another "
                      "instance will take the request", headers={"Retry-After": RETRY_AFTER_S})
    return runtime(request)
