"""The topics a worker reads, and subscribing again when they change.

A worker reads its queue's topic, ``tasks.<queue>``, and those of its queue's priority
bands that exist (``Topics.priority``: the dispatches of runs of another priority than
the default; ``watched``); a worker serving ``@workflow``s also reads their lanes at its
code version and those of other versions no live worker serves (``lanes``); a worker
announcing tags also reads the selector topics of its queue for every set of its tags
that exists (``selectors``). Those are found while the worker runs, in one listing of
the broker's topics every ``lanes_s`` seconds shared by all three (``listing``), so the
consumer's subscription follows them (:meth:`Subscriptions.adopting`) until the worker
stops taking dispatches.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from headwater.core.priority import BANDS
from services.common.kafka.client import ensure_topics
from services.worker.intake import Intake
from services.worker.lanes import Lanes
from services.worker.listing import Lists, Sees, TopicListing
from services.worker.selectors import Selectors
from services.worker.settings import Settings
from services.worker.watched import Watched


class Subscriptions:
    """What one worker reads.

    Args:
        settings: the worker's settings.
        topic: its queue's topic.
        lanes: its lanes (None: it serves no ``@workflow``).
        selectors: its selector topics (None: it announces no tags).
        admin: what lists the topics (default: an admin client of ``settings``' Kafka).
    """

    def __init__(self, settings: Settings, topic: str, lanes: Lanes | None,
                 selectors: Selectors | None, admin: Lists | None = None) -> None:
        self.settings = settings
        self.topic = topic
        self.lanes = lanes
        self.selectors = selectors
        self.bands = Watched(settings, settings.topics.priorities_of(settings.queue, BANDS),
                             "priority topics")
        watchers: list[Sees] = [w for w in (lanes, self.bands, selectors) if w is not None]
        self.listing = TopicListing(settings, watchers, admin)

    def reading(self) -> list[str]:
        """The topics to read now: ``tasks.<queue>``, its priority topics, the lanes
        and the selector topics."""
        return [self.topic, *sorted(self.bands.current),
                *sorted(self.lanes.current if self.lanes else ()),
                *sorted(self.selectors.current if self.selectors else ())]

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """Create this worker's lanes, follow the workers topic (for the lanes) and
        look at the topic list once (``listing``) before the worker subscribes."""
        async with contextlib.AsyncExitStack() as stack:
            if self.lanes is not None:
                await ensure_topics(self.settings, sorted(self.lanes.mine))
                await stack.enter_async_context(self.lanes)
            await stack.enter_async_context(self.listing)
            yield

    @contextlib.asynccontextmanager
    async def adopting(self, intake: Intake,
                       stopping: Callable[[], bool]) -> AsyncIterator[None]:
        """Look at the topic list every ``lanes_s`` meanwhile, and subscribe
        ``intake``'s consumer again whenever the lanes, the priority topics or the
        selector topics to read changed, until the worker stops taking dispatches
        (``stopping``, or the intake left its group)."""

        def resubscribe() -> None:
            if stopping() or intake.left or not intake.taking:
                return  # draining: the group is left, or about to be
            intake.consumer.subscribe(self.reading(), listener=intake.listener)

        task = asyncio.create_task(self.listing.follow(resubscribe))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
