"""One listing of the broker's topics per interval feeds every set of topics a worker
follows (``listing.TopicListing`` in ``subscriptions``): its priority topics, its lanes
and its selector topics see the same list, one admin client answers it, and a change of
any of them subscribes the consumer again once."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from worker_fakes import settings

from services.worker import listing as listing_module
from services.worker import subscriptions as subscriptions_module
from services.worker.lanes import Lanes
from services.worker.selectors import Selectors
from services.worker.subscriptions import Subscriptions

TOPICS = settings().topics
QUEUE = settings().queue


@pytest.fixture(autouse=True)
def created(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lane topics a worker would create (no broker in a unit test)."""
    made: list[str] = []

    async def ensure_topics(_settings: Any, topics: list[str]) -> None:
        made.extend(topics)

    monkeypatch.setattr(subscriptions_module, "ensure_topics", ensure_topics)
    return made


class Admin:
    """Lists what ``topics`` holds now, counting the listings."""

    def __init__(self, topics: set[str]) -> None:
        self.topics = topics
        self.listings = 0
        self.started = self.closed = 0

    async def start(self) -> None:
        self.started += 1

    async def close(self) -> None:
        self.closed += 1

    async def list_topics(self) -> list[str]:
        self.listings += 1
        return sorted(self.topics)


class Consumer:
    """Records each subscription."""

    def __init__(self) -> None:
        self.subscriptions: list[list[str]] = []

    def subscribe(self, topics: list[str], listener: Any = None) -> None:
        self.subscriptions.append(list(topics))


def _reads(admin: Admin | None, lanes_s: float = 60.0) -> Subscriptions:
    s = settings(tags=("gpu",), lanes_s=lanes_s)
    lanes = Lanes(s, {"wf": "v2"})
    lanes.registry.start = lambda: None  # type: ignore[method-assign]
    lanes.registry.caught_up = True  # the workers topic read: no live worker
    return Subscriptions(s, TOPICS.tasks(QUEUE), lanes, Selectors(s), admin)


HIGH, GPU = TOPICS.priority(QUEUE, 8), TOPICS.needs(QUEUE, ["gpu"])
MINE, OLD = TOPICS.lane(QUEUE, "wf", "v2"), TOPICS.lane(QUEUE, "wf", "v1")


async def test_one_listing_feeds_the_bands_the_lanes_and_the_selectors(
        created: list[str]) -> None:
    admin = Admin({TOPICS.tasks(QUEUE), HIGH, GPU, OLD, TOPICS.needs("other", ["gpu"])})
    reads = _reads(admin)
    async with reads.watching():
        assert created == [MINE]  # its own lane, made before it is read
        assert admin.listings == 1 and admin.started == 1
        assert reads.reading() == [TOPICS.tasks(QUEUE), HIGH, MINE, GPU]
        assert reads.lanes is not None and OLD in reads.lanes.unserved_since  # its grace began
        admin.topics |= {TOPICS.priority(QUEUE, 2), TOPICS.needs(QUEUE, ["gpu", "tpu"])}
        assert await reads.listing.look()  # the low band is new
        assert admin.listings == 2
        assert reads.bands.current == {HIGH, TOPICS.priority(QUEUE, 2)}
        assert reads.selectors is not None and reads.selectors.current == {GPU}
        assert not await reads.listing.look()  # nothing new: no change
        assert admin.listings == 3
    assert admin.closed == 1


async def test_a_worker_has_one_admin_client_whatever_it_follows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Admin] = []

    def client(**_: Any) -> Admin:
        made.append(Admin(set()))
        return made[-1]

    monkeypatch.setattr(listing_module, "AIOKafkaAdminClient", client)
    reads = _reads(None)
    async with reads.watching():
        pass
    assert len(made) == 1 and made[0].listings == 1


async def test_a_change_of_any_of_them_subscribes_again_once_per_listing() -> None:
    admin = Admin({TOPICS.tasks(QUEUE)})
    reads = _reads(admin, lanes_s=0.02)
    consumer = Consumer()
    intake = SimpleNamespace(consumer=consumer, listener=None, left=False, taking=True)
    async with reads.watching(), reads.adopting(intake, lambda: False):  # type: ignore[arg-type]
        admin.topics |= {HIGH, GPU, OLD}  # a new band, selector topic and lane at once
        for _ in range(200):
            await asyncio.sleep(0.01)
            if consumer.subscriptions and OLD in consumer.subscriptions[-1]:
                break
    # One subscription for the band and the selector topic, seen in the same listing;
    # one more when the unserved lane's grace is over.
    assert consumer.subscriptions[0] == [TOPICS.tasks(QUEUE), HIGH, MINE, GPU]
    assert consumer.subscriptions[-1] == [TOPICS.tasks(QUEUE), HIGH, *sorted({MINE, OLD}),
                                          GPU]
    assert len(consumer.subscriptions) == 2
    assert len(consumer.subscriptions) < admin.listings


async def test_a_failed_listing_changes_nothing_and_the_next_one_counts() -> None:
    admin = Admin({HIGH})
    reads = _reads(admin)
    async with reads.watching():
        async def broken() -> list[str]:
            raise TimeoutError

        admin.list_topics = broken  # type: ignore[method-assign]
        with pytest.raises(TimeoutError):
            await reads.listing.look()
        assert reads.bands.current == {HIGH}
