"""How long the broker may hold a worker's fetch: ``HEADWATER_FETCH_WAIT_MS`` while no
partition is paused, ``PAUSED_FETCH_WAIT_MS`` while one is.

A worker pauses the partitions whose records it holds (``intake``) and resumes each once
its slots took them. aiokafka sends one fetch at a time to a broker and does not fetch a
resumed partition while one is in flight, so the next dispatch of a resumed partition
waits for the fetch in flight (of the others) to come back, empty after the whole wait
when nothing came for them. A long wait keeps an idle worker cheap (four idle workers:
1.25 CPU s in 20 s at Kafka's 500 ms, 1.60 at 100, 3.29 at 20); a short one keeps a busy
worker's resumed partitions prompt (B6, dispatch record → ``TaskStarted`` p50: 331 ms at
500, 11 ms at 20). A worker pauses partitions only while it holds records its slots have
not taken, that is while it is busy: then its fetches wait ``PAUSED_FETCH_WAIT_MS``.

aiokafka takes the wait once, when the consumer starts (``fetch_max_wait_ms``), and its
fetcher reads it again for each fetch it sends (``Fetcher._fetch_max_wait_ms``): that
attribute is what ``FetchWait`` sets; ``tests/unit/services/worker/test_fetch_wait.py``
fails when aiokafka stops building its fetches from it.
"""

from __future__ import annotations

from typing import Any

PAUSED_FETCH_WAIT_MS = 10
"""How long the broker may hold a worker's fetch while one of its partitions is paused,
ms: about how late a resumed partition's next dispatch is seen."""


class FetchWait:
    """Sets ``consumer``'s fetch wait from whether a partition of it is paused.

    Args:
        consumer: the worker's ``AIOKafkaConsumer``.
        idle_ms: the wait while none is (``HEADWATER_FETCH_WAIT_MS``).
        paused_ms: the wait while one is.
    """

    def __init__(self, consumer: Any, idle_ms: int,
                 paused_ms: int = PAUSED_FETCH_WAIT_MS) -> None:
        self.consumer = consumer
        self.idle_ms = idle_ms
        self.paused_ms = min(paused_ms, idle_ms)

    def follow(self) -> int:
        """Set the wait the consumer's pauses call for (on its started fetcher; before it
        starts there is none, and it starts with ``idle_ms``).

        Returns:
            The wait, ms.
        """
        wait_ms = self.paused_ms if self.consumer.paused() else self.idle_ms
        fetcher = getattr(self.consumer, "_fetcher", None)
        if fetcher is not None:
            fetcher._fetch_max_wait_ms = wait_ms
        return wait_ms
