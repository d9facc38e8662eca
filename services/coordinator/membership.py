"""Leaving the consumer group before the process ends abruptly.

A coordinator that restarts in place (``os.execv``) or exits at once sends no
``LeaveGroup`` of its own: Kafka keeps its old member in the group until the session
times out (``broker_session_timeout``, 10 s), the fresh process's partitions are split
with that ghost meanwhile, and its expiry rebalances the group a second time. faust's
input streams can skip records across such a rebalance, which makes the coordinator
restart again: a loop seen in the fault suite (five restarts ten seconds apart). So the
member leaves first, best effort, as aiokafka's ``GroupCoordinator`` does on a graceful
close (Kafka protocol ``LeaveGroup``, KIP-345 for static members, which do not leave).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger("headwater.coordinator")

LEAVE_TIMEOUT_S = 2.0
"""How long to wait for the group coordinator's answer, seconds."""


def leave_group(app: Any, timeout_s: float = LEAVE_TIMEOUT_S) -> bool:
    """Send ``LeaveGroup`` for this process's member of the faust app's consumer group,
    from the consumer's own thread, and wait up to ``timeout_s`` for the answer. Blocks
    the calling thread: call it only right before the process ends or execs.

    Returns:
        Whether the request was answered; False (logged) when the consumer is not
        running, or the request failed or timed out.
    """
    try:
        thread = app.consumer._thread  # faust's AIOKafkaConsumerThread
        group = thread._ensure_consumer()._coordinator  # aiokafka's GroupCoordinator
        done = asyncio.run_coroutine_threadsafe(group._maybe_leave_group(),
                                                thread.thread_loop)
        done.result(timeout_s)
    except Exception as e:  # anything at all: the process ends right after
        log.warning("could not leave the consumer group: %s: %s", type(e).__name__, e)
        return False
    log.warning("left the consumer group")
    return True
