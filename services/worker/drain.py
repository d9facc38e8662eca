"""A worker's graceful stop (SIGTERM): take nothing more, hand the queue over, and let the
running attempts end within a window.

1. Stop taking (``Intake.stop_taking``): every partition is paused; dispatches fetched
   but not taken stay uncommitted.
2. Wait (at most ``START_GRACE_S``) until each dispatch taken before the signal has
   started, its ``TaskStarted`` acknowledged: from then on it is this worker's lease
   (``lifecycle``) and needs no redelivery.
3. Commit and leave the consumer group (``Intake.leave``): the group rebalances at once,
   not after a session timeout, and the other workers get every dispatch not started
   here.
4. Let the running attempts run, heartbeat and report as usual, for what is left of the
   window (``Settings.drain_s``). The caller then stops those still running, which
   report ``TaskFailed`` (``WorkerStopped``, retryable) as on an immediate stop.

Sources: Kubernetes, "Pod Lifecycle", termination of Pods (SIGTERM, then SIGKILL after
``terminationGracePeriodSeconds``); the Kafka protocol's ``LeaveGroup`` request, which a
consumer sends when it closes so that the group rebalances at once instead of waiting
out ``session.timeout.ms`` (aiokafka: ``AIOKafkaConsumer.stop``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection

from services.worker.intake import Intake

log = logging.getLogger("headwater.worker")

START_GRACE_S = 3.0
"""How long a stopping worker waits for the ``TaskStarted`` of dispatches it took
before it leaves the group, seconds. One that is not acknowledged by then may be
delivered again to the next owner of its partition (at least once, never lost)."""


async def drain(intake: Intake, tasks: Collection[asyncio.Task[None]], window_s: float,
                worker_id: str) -> int:
    """Hand the queue over and wait for the running attempts, for up to ``window_s``.

    Args:
        intake: the worker's intake; it takes nothing more afterwards, and its consumer
            has left the group.
        tasks: one task per dispatch in hand (its attempt, start to report).
        window_s: the drain window, seconds, counted from the call.
        worker_id: this worker's name, for the log.

    Returns:
        How many of ``tasks`` are still running when the window ends (the caller stops
        them).
    """
    began = time.monotonic()
    in_hand = [t for t in tasks if not t.done()]
    log.info("worker %s draining: %d dispatches in hand, up to %.1f s; taking no more, "
             "leaving the group (a second SIGTERM or SIGINT stops at once)",
             worker_id, len(in_hand), window_s)
    intake.stop_taking()
    unstarted = await intake.settled(min(START_GRACE_S, window_s))
    if unstarted:
        log.warning("worker %s: %d taken dispatches have no acknowledged start; their "
                    "next owner may run them again", worker_id, unstarted)
    await intake.leave()
    log.info("worker %s left its group after %.1f s", worker_id, time.monotonic() - began)
    pending: set[asyncio.Task[None]] = set()
    if in_hand:
        remaining = max(0.0, window_s - (time.monotonic() - began))
        _, pending = await asyncio.wait(in_hand, timeout=remaining)
    log.info("worker %s drained in %.1f s: %d of %d dispatches in hand ended, %d still "
             "running are stopped now", worker_id, time.monotonic() - began,
             len(in_hand) - len(pending), len(in_hand), len(pending))
    return len(pending)
