"""The broker's topic list, looked at once per interval for every set of topics a
worker follows.

A worker reads topics found while it runs: its queue's priority topics (``Topics.priority``)
and selector topics (``selectors``) once the coordinator created them, and lanes of other
code versions (``lanes``). Each of those is a ``Sees``: given the topics the broker
lists, it settles which of its own to read and says whether that changed. One
``TopicListing`` holds the worker's one admin client and lists the topics every
``lanes_s`` seconds, hands the same list to each, and calls back once when any of them
changed, so the consumer is subscribed again once (a subscription change rebalances the
queue's group) and the broker answers one listing per interval, whatever the worker
follows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from aiokafka.admin import AIOKafkaAdminClient

from services.common.kafka.security import aiokafka_security
from services.worker.settings import Settings

log = logging.getLogger("headwater.worker")

LIST_TIMEOUT_S = 10.0
"""How long one listing of the topics may take, seconds."""


class Sees(Protocol):
    """A set of topics to read that follows the topic list (``watched.Watched``,
    ``lanes.Lanes``)."""

    def see(self, existing: frozenset[str]) -> bool:
        """Settle the topics to read by ``existing`` (every topic the broker lists);
        whether they changed."""


class Lists(Protocol):
    """What lists the broker's topics (aiokafka's ``AIOKafkaAdminClient``)."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def list_topics(self) -> list[str]: ...


class TopicListing:
    """Lists the broker's topics for ``watchers``, once at start and every ``lanes_s``.

    Use ``async with`` around the time the worker serves (it connects and looks once on
    entering; a failed look leaves every watcher as it starts: the next may pass), and
    :meth:`follow` meanwhile.

    Args:
        settings: the worker's settings (Kafka, ``lanes_s``).
        watchers: what to hand each listing to.
        admin: what lists the topics (default: an admin client of ``settings``' Kafka).
    """

    def __init__(self, settings: Settings, watchers: Sequence[Sees],
                 admin: Lists | None = None) -> None:
        self.settings = settings
        self.watchers = tuple(watchers)
        self.admin: Lists = admin if admin is not None else AIOKafkaAdminClient(
            bootstrap_servers=settings.bootstrap,
            **aiokafka_security(settings.kafka_security))
        self.listings = 0
        """How many listings the broker answered (one per look)."""

    async def __aenter__(self) -> TopicListing:
        """Connect and look once."""
        await self.admin.start()
        try:
            await self.look()
        except Exception as e:
            log.warning("could not list the topics of queue %s: %r", self.settings.queue, e)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.admin.close()

    async def look(self) -> bool:
        """List the topics once and hand the list to every watcher; whether the topics
        to read of any of them changed.

        Raises:
            KafkaError: the broker could not list its topics.
            TimeoutError: not within ``LIST_TIMEOUT_S``.
        """
        existing = frozenset(await asyncio.wait_for(self.admin.list_topics(),
                                                    LIST_TIMEOUT_S))
        self.listings += 1
        changed = [w.see(existing) for w in self.watchers]  # every one sees the list
        return any(changed)

    async def follow(self, on_change: Callable[[], None]) -> None:
        """Every ``lanes_s``: look, and call ``on_change`` when the topics to read
        changed. Runs until cancelled; a failed look changes nothing."""
        while True:
            await asyncio.sleep(self.settings.lanes_s)
            try:
                changed = await self.look()
            except Exception as e:  # the next look may pass; meanwhile nothing changes
                log.warning("could not list the topics of queue %s: %r",
                            self.settings.queue, e)
                continue
            if changed:
                on_change()
