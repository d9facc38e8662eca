"""Liveness and readiness of a service process: what ``/health`` and ``/ready`` answer on
its metrics port (``services.common.metrics.serve``), for the coordinator, the
projector, the workers and ``headwater serve`` (the gateway answers its own on its HTTP
port: ``services.gateway.health``).

``/health`` is shallow, to prevent cascading outages: it says only that the process's
event loop turns (``Probes.beat`` stamps it every ``BEAT_S``); it never asks Kafka, so a
broker outage never gets every pod restarted at once. 503 when the loop has not turned
for ``STALE_S`` (blocked, or dead with the process still up).

``/ready`` says whether the process does its work now: every part of it (a coordinator,
a projector, the worker of a queue; ``headwater serve`` runs several) has joined its
consumer group (and, for the coordinator, restored its table: faust's rebalance is
complete), a Kafka broker answered the last check (``Probes.watch_broker``, every
``BROKER_CHECK_S``), and the process is not draining (SIGTERM). 503 otherwise, with the
reasons; a Kubernetes Service or a load balancer then stops sending to it, and an
operator sees which part waits for what.

One ``Probes`` per process (``PROBES``): its parts register themselves
(``PROBES.part``); each process's entry point starts ``PROBES.watch`` in its loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiokafka.client import AIOKafkaClient

from services.common.kafka.client import BrokerUnreachable, broker_answers
from services.common.kafka.security import KafkaSecurity, aiokafka_security

log = logging.getLogger("headwater.probes")

BEAT_S = 1.0
"""How often the event loop stamps its liveness, seconds."""
STALE_S = 30.0
"""How long the loop may go without a stamp before ``/health`` answers 503, seconds: far
above any step the loop takes (a RocksDB partition opened, a large batch applied), so a
busy process is never killed for being busy."""
BROKER_CHECK_S = 2.0
"""How often a Kafka broker is asked for an answer (``broker_answers``), seconds."""
BROKER_TIMEOUT_S = 2.0
"""How long the check waits for the broker's answer, seconds: readiness drops within
about ``BROKER_CHECK_S`` + ``BROKER_TIMEOUT_S`` of the broker's loss."""


@dataclass
class Part:
    """One consumer-group member of the process, and whether it is ready.

    Attributes:
        name: what the probes call it (``coordinator``, ``projector``, ``worker cpu``).
        joined: it has joined its group and holds its assignment (for a coordinator:
            the rebalance is complete, its table restored); False again while a
            rebalance takes partitions away, until it completes.
    """

    name: str
    joined: bool = False
    check: Callable[[], str] | None = None
    """Why it is not ready, for a part that is no group member (the gateway inside
    ``headwater serve``: ``""`` once connected); None: ``joined`` says."""

    def assigned(self) -> None:
        """The group's assignment is taken (and restored, for a coordinator)."""
        if not self.joined:
            log.info("%s: joined its group", self.name)
        self.joined = True

    def rebalancing(self) -> None:
        """Partitions are being revoked: not ready until the next assignment."""
        self.joined = False

    def fault(self) -> str:
        """Why it is not ready (``""``: it is)."""
        if self.check is not None:
            return self.check()
        return "" if self.joined else "has not joined its consumer group"


@dataclass
class Probes:
    """The probes of one process: its parts, the loop's last stamp, the broker check and
    the drain.

    Attributes:
        parts: the process's parts, by name.
        beat_at: ``time.monotonic()`` of the loop's last stamp (None: not started).
        broker_fault: why the last broker check failed (``""``: it answered; None: not
            checked yet).
        draining: why the process is stopping (``""``: it is not).
    """

    parts: dict[str, Part] = field(default_factory=dict)
    beat_at: float | None = None
    broker_fault: str | None = None
    draining: str = ""
    _watching: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def part(self, name: str, check: Callable[[], str] | None = None) -> Part:
        """The part ``name``, registered here (the same one when asked again); ``check``:
        see ``Part.check``."""
        with self._lock:
            return self.parts.setdefault(name, Part(name, check=check))

    def drain(self, why: str) -> None:
        """The process is stopping (its first SIGTERM): not ready from now on."""
        if not self.draining:  # the first reason stays (the signal, not a part's echo)
            log.info("not ready: %s", why)
            self.draining = why or "draining"

    def health(self, now: float | None = None) -> tuple[bool, dict[str, object]]:
        """Liveness: whether the loop turned within ``STALE_S`` (or has not started yet:
        the process is starting), and the body to answer with."""
        now = time.monotonic() if now is None else now
        body: dict[str, object] = {"pid": os.getpid()}
        if self.beat_at is not None and now - self.beat_at > STALE_S:
            stalled = now - self.beat_at
            return False, {"status": "stalled", **body,
                           "detail": f"the event loop has not turned for {stalled:.0f} s"}
        return True, {"status": "ok", **body}

    def ready(self) -> tuple[bool, dict[str, object]]:
        """Readiness: whether every part is, the broker answers and the process is not
        draining; the body names each reason it is not."""
        with self._lock:
            parts = {name: part.fault() for name, part in self.parts.items()}
        faults = [f"{name} {why}" for name, why in parts.items() if why]
        if not parts:
            faults.append("starting")
        if self.broker_fault is None:
            faults.append("Kafka not checked yet")
        elif self.broker_fault:
            faults.append(f"Kafka unreachable: {self.broker_fault}")
        if self.draining:
            faults.append(f"shutting down ({self.draining})")
        body: dict[str, object] = {"parts": {n: why or "ready" for n, why in parts.items()}}
        if faults:
            return False, {"status": "not ready", "detail": "; ".join(faults), **body}
        return True, {"status": "ready", **body}

    async def watch(self, bootstrap: str, security: KafkaSecurity) -> None:
        """Stamp the loop every ``BEAT_S`` and check the broker every ``BROKER_CHECK_S``
        until cancelled; once per process (a second call returns at once).

        Args:
            bootstrap: the Kafka bootstrap servers.
            security: how to connect to them.
        """
        if self._watching:
            return
        self._watching = True
        beats = asyncio.create_task(self._beat())
        try:
            await self.watch_broker(bootstrap, security)
        finally:
            beats.cancel()
            self._watching = False

    async def _beat(self) -> None:
        while True:
            self.beat_at = time.monotonic()
            await asyncio.sleep(BEAT_S)

    async def watch_broker(self, bootstrap: str, security: KafkaSecurity) -> None:
        """Ask a broker for an answer every ``BROKER_CHECK_S`` over a client of the
        probes' own (the parts' clients are busy with their fetches), keeping
        ``broker_fault`` current, until cancelled."""
        client = AIOKafkaClient(bootstrap_servers=bootstrap, **aiokafka_security(security),
                                request_timeout_ms=round(BROKER_TIMEOUT_S * 1000) + 1000)
        bootstrapped = False
        try:
            while True:
                try:
                    if not bootstrapped:
                        await asyncio.wait_for(client.bootstrap(), BROKER_TIMEOUT_S)
                        bootstrapped = True
                    await broker_answers(client, BROKER_TIMEOUT_S)
                except BrokerUnreachable as e:
                    self._broker(str(e))
                except Exception as e:  # bootstrap: a refused connection, a timeout
                    self._broker(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)
                else:
                    self._broker("")
                await asyncio.sleep(BROKER_CHECK_S)
        finally:
            await client.close()

    def _broker(self, fault: str) -> None:
        if fault != self.broker_fault and (fault or self.broker_fault):
            if fault:
                log.warning("not ready: Kafka unreachable: %s", fault)
            else:
                log.info("Kafka answers again")
        self.broker_fault = fault


PROBES = Probes()
"""This process's probes."""
