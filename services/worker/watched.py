"""Topics a worker reads once they exist: a set of names known from the start, of which
the broker lists some.

A worker's selector topics (``selectors``) and its queue's priority topics
(``Topics.priority``) are created by the coordinator on their first dispatch; the worker
knows every name it may read and finds which exist by listing the topics every
``lanes_s`` seconds, as it finds lanes, so that its consumer is subscribed again only
when the set changed (a subscription change rebalances the group). The first dispatch
to a new topic waits up to ``lanes_s``, and a rebalance, before a worker takes it; it is
not lost meanwhile (a new topic is read from its start, ``auto.offset.reset=earliest``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Protocol

from aiokafka.admin import AIOKafkaAdminClient

from services.common.kafka.security import aiokafka_security
from services.worker.settings import Settings

log = logging.getLogger("headwater.worker")

LIST_TIMEOUT_S = 10.0
"""How long one listing of the topics may take, seconds."""


def existing_topics(own: frozenset[str], existing: Iterable[str]) -> frozenset[str]:
    """The topics of ``own`` that are among ``existing`` (every topic the broker lists
    will do)."""
    return own & frozenset(existing)


class Watched:
    """Follows the topic list; says which of ``own`` to read now.

    Use ``async with`` around the time the worker serves (it looks once on entering).
    Each ``lanes_s`` seconds :meth:`follow` compares the topics to read with the last
    ones and calls ``on_change`` with the new set when they differ.

    Args:
        settings: the worker's settings (queue, topics, Kafka, ``lanes_s``).
        own: every topic it may read.
        what: what they are, for the log (``"selector topics"``).
    """

    def __init__(self, settings: Settings, own: frozenset[str], what: str) -> None:
        self.settings = settings
        self.own = own
        self.what = what
        self.current: frozenset[str] = frozenset()
        self.admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap,
                                         **aiokafka_security(settings.kafka_security))

    async def __aenter__(self) -> Watched:
        """Connect and look once (a failed look reads none for now: the next one may
        pass)."""
        await self.admin.start()
        try:
            await self.look()
        except Exception as e:
            log.warning("could not list the %s of queue %s: %r", self.what,
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
        self.current = existing_topics(self.own, existing)

    async def follow(self, on_change: Callable[[frozenset[str]], None]) -> None:
        """Every ``lanes_s``: when the topics to read changed, call ``on_change`` with
        them. Runs until cancelled; a failed look keeps them as they are."""
        while True:
            await asyncio.sleep(self.settings.lanes_s)
            before = self.current
            try:
                await self.look()
            except Exception as e:  # the next look may pass; meanwhile nothing changes
                log.warning("could not look for %s: %r", self.what, e)
                continue
            if self.current != before:
                log.info("worker %s reads the %s %s", self.settings.worker_id, self.what,
                         ", ".join(sorted(self.current)) or "none")
                on_change(self.current)


class Follows(Protocol):
    """What looks for the topics to read while the worker runs (``Watched``,
    ``lanes.Lanes``)."""

    async def follow(self, on_change: Callable[[frozenset[str]], None]) -> None:
        """Look again and again, calling ``on_change`` when the topics change."""


@contextlib.asynccontextmanager
async def following(source: Follows, on_change: Callable[[frozenset[str]], None],
                    ) -> AsyncIterator[None]:
    """Run ``source.follow(on_change)`` in the background meanwhile."""
    task = asyncio.create_task(source.follow(on_change))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
