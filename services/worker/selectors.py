"""Which selector topics a worker reads: those of its queue whose tags it announces.

A node that requires tags (``requires: [gpu]``, ``headwater.core.selectors``) sends its
dispatches to its queue's selector topic for those tags, ``<prefix>.needs.<queue>.<tags>``
(``Topics.needs``; ``services.coordinator.records.dispatch_topic``), which the
coordinator creates on its first dispatch. A worker announcing tags T
(``HEADWATER_WORKER_TAGS``) reads, besides ``tasks.<queue>`` and its lanes, every
selector topic of its queue whose tags are a subset of T, in its queue's one consumer
group: Kafka's round-robin assignor (aiokafka's default) gives a topic's partitions only
to the members subscribed to it, so a dispatch requiring ``gpu`` goes to a worker
announcing ``gpu`` alone, and a worker without tags reads none of them. Dispatches of
nodes without requirements are unchanged (``tasks.<queue>``, read by every worker of
the queue).

The topics of its subsets are known from the start (``Topics.needs_of``, at most
``2**selectors.MAX_TAGS - 1`` names); which of them exist is found by listing the
topics every ``lanes_s`` seconds, as lanes are, and the consumer subscribed again only
when the set changed (a subscription change rebalances the group). So the first
dispatch to a new selector topic waits up to ``lanes_s``, and a rebalance, before a
worker takes it; it is not lost meanwhile (a new topic is read from its start,
``auto.offset.reset=earliest``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable

from aiokafka.admin import AIOKafkaAdminClient

from services.common.kafka.security import aiokafka_security
from services.worker.settings import Settings

log = logging.getLogger("headwater.worker")

LIST_TIMEOUT_S = 10.0
"""How long one listing of the topics may take, seconds."""


def selector_topics(own: frozenset[str], existing: Iterable[str]) -> frozenset[str]:
    """The selector topics a worker reads: those of its subsets (``own``:
    ``Topics.needs_of`` its queue and tags) that exist.

    Args:
        own: the selector topics of every non-empty subset of the worker's tags.
        existing: topic names (every topic the broker lists will do).
    """
    return own & frozenset(existing)


class Selectors:
    """Follows the topic list; says which selector topics to read now.

    Use ``async with`` around the time the worker serves (it looks once on entering).
    Each ``lanes_s`` seconds :meth:`follow` compares the topics to read with the last
    ones and calls ``on_change`` with the new set when they differ.

    Args:
        settings: the worker's settings (queue, tags, topics, Kafka, ``lanes_s``).
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.own = settings.topics.needs_of(settings.queue, settings.tags)
        self.current: frozenset[str] = frozenset()
        self.admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap,
                                         **aiokafka_security(settings.kafka_security))

    async def __aenter__(self) -> Selectors:
        """Connect and look once (a failed look reads none for now: the next one may
        pass)."""
        await self.admin.start()
        try:
            await self.look()
        except Exception as e:
            log.warning("could not list the selector topics of queue %s: %r",
                        self.settings.queue, e)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.admin.close()

    async def look(self) -> None:
        """Set :attr:`current` by the topics the broker lists now.

        Raises:
            KafkaError: the broker could not list its topics.
            TimeoutError: not within ``LIST_TIMEOUT_S``.
        """
        existing = await asyncio.wait_for(self.admin.list_topics(), LIST_TIMEOUT_S)
        self.current = selector_topics(self.own, existing)

    async def follow(self, on_change: Callable[[frozenset[str]], None]) -> None:
        """Every ``lanes_s``: when the selector topics to read changed, call
        ``on_change`` with them. Runs until cancelled; a failed look keeps them as they
        are."""
        while True:
            await asyncio.sleep(self.settings.lanes_s)
            before = self.current
            try:
                await self.look()
            except Exception as e:  # the next look may pass; meanwhile nothing changes
                log.warning("could not look for selector topics: %r", e)
                continue
            if self.current != before:
                log.info("worker %s (tags %s) reads the selector topics %s",
                         self.settings.worker_id, ",".join(self.settings.tags),
                         ", ".join(sorted(self.current)) or "none")
                on_change(self.current)


@contextlib.asynccontextmanager
async def following(selectors: Selectors, on_change: Callable[[frozenset[str]], None],
                    ) -> AsyncIterator[None]:
    """Run ``selectors.follow(on_change)`` in the background meanwhile."""
    task = asyncio.create_task(selectors.follow(on_change))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
