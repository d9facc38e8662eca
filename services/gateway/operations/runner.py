"""Working through an operation's targets: a batch at a time, each batch's results
recorded (``store.write``) before the next, so a gateway that dies mid-way loses at
most a batch's progress (which is acted on again: ``actions``). Each gateway runs the
operations it started and, every few seconds, takes over those whose owner stopped
writing (``store.claim_stale``), its own stalled ones included."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid

from headwater.operations import OperationState, Outcome, Progress
from services.common import faults
from services.common.auth.tokens import EVERY_TENANT, Principal
from services.common.clock import now_ms
from services.gateway.lifetime import Runtime
from services.gateway.operations import store
from services.gateway.operations.actions import ACTIONS, Result, Target

log = logging.getLogger("headwater.gateway")

BATCH = 50
"""Targets acted on between two records of an operation."""
CONCURRENCY = 16
"""Targets of a batch acted on at once."""


class Runner:
    """The operations this gateway works on (see the module).

    Attributes:
        hw: the gateway's runtime.
        owner: this gateway's id in the ``operations`` table (host, pid and a random
            part: a restarted gateway is another owner).
    """

    def __init__(self, hw: Runtime) -> None:
        self.hw = hw
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.running: dict[str, asyncio.Task[None]] = {}
        self._resume: asyncio.Task[None] | None = None

    def start(self, progress: Progress) -> None:
        """Work on ``progress`` in the background, unless this gateway already does."""
        held = self.running.get(progress.operation_id)
        if held is not None and not held.done():
            return
        self.running[progress.operation_id] = asyncio.create_task(
            self._run(progress), name=f"operation {progress.operation_id}")

    async def _run(self, progress: Progress) -> None:
        try:
            await run(self.hw, progress, self.owner)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # Kafka or PostgreSQL gone: taken over once the lease ends
            log.warning("operation %s stopped at target %d of %d (%r); it goes on once "
                        "its lease of %g s has passed", progress.operation_id, progress.next,
                        len(progress.targets), e, self.hw.settings.operations_lease_s)

    def resume_every(self, interval_s: float) -> None:
        """Take over stale operations every ``interval_s`` seconds, from now on."""
        self._resume = asyncio.create_task(self._resume_loop(interval_s),
                                           name="operations resume")

    async def _resume_loop(self, interval_s: float) -> None:
        while True:
            with contextlib.suppress(Exception):  # PostgreSQL away: try at the next turn
                await self.resume_stale()
            await asyncio.sleep(interval_s)

    async def resume_stale(self) -> list[str]:
        """Take over the stale running operations and work on each; returns their ids."""
        ids = await store.claim_stale(self.hw.pool, self.owner,
                                      self.hw.settings.operations_lease_s)
        for operation_id in ids:
            row = await store.read(self.hw.pool, operation_id)
            if row is not None:
                log.info("going on with operation %s from target %d", operation_id,
                         row["position"])
                self.start(Progress.from_record(store.record_of(row)))
        return ids

    async def stop(self) -> None:
        """Stop working (the operations stay running: another gateway goes on)."""
        tasks = [t for t in (self._resume, *self.running.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def run(hw: Runtime, progress: Progress, owner: str) -> None:
    """Act on ``progress``'s targets from ``next`` to the last, recording the results
    after each batch; the last record says ``done``.

    Raises:
        Problem, KafkaError, asyncpg.PostgresError, OSError: a target could not be
            acted on, or a record written, for a reason not the target's own: the
            operation stays where its last record left it.
    """
    me = Principal(progress.tenant or EVERY_TENANT, "admin", f"operation {progress.operation_id}")
    act = ACTIONS[progress.action]
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(workflow_id: str) -> Result:
        async with gate:
            return await act(Target(hw, me, progress.operation_id, workflow_id, progress.args))

    while progress.state is OperationState.RUNNING:
        batch = progress.targets[progress.next:progress.next + BATCH]
        results = await asyncio.gather(*(one(w) for w in batch))
        for workflow_id, (outcome, reason) in zip(batch, results, strict=True):
            progress.count(workflow_id, outcome, reason if outcome is not Outcome.DONE else "")
        faults.point("gateway.operation_acted")
        await store.write(hw.producer, hw.pool, hw.settings, progress.record(now_ms()), owner,
                          hw.settings.produce_timeout_s)
    log.info("operation %s done: %s", progress.operation_id, progress.counts)
