"""A worker's fetch wait (``services/worker/fetch_wait.py``): aiokafka's fetcher builds
each fetch from the attribute ``FetchWait`` sets (this test fails when it stops doing
so, and the wait would then stay the consumer's first), the wait each pause state calls
for, and the intake setting it as it pauses and resumes partitions."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from aiokafka import TopicPartition
from aiokafka.consumer.fetcher import Fetcher
from aiokafka.consumer.subscription_state import SubscriptionState
from worker_fakes import TP0, FakeConsumer, dispatch, records

from services.worker.fetch_wait import PAUSED_FETCH_WAIT_MS, FetchWait
from services.worker.intake import Intake


def _waits(fetcher: Any, subscriptions: SubscriptionState) -> list[int]:
    """The wait of each fetch the fetcher would send now."""
    requests = fetcher._get_actions_per_node(subscriptions.subscription.assignment)[0]
    return [request._max_wait_ms for _, request in requests]


async def test_aiokafkas_fetcher_builds_each_fetch_with_the_wait_set_on_it() -> None:
    tp = TopicPartition("t", 0)
    subscriptions = SubscriptionState()
    subscriptions.assign_from_user({tp})
    subscriptions.seek(tp, 0)
    cluster = SimpleNamespace(leader_for_partition=lambda tp: 0,
                              broker_metadata=lambda node: None)
    client = SimpleNamespace(_loop=asyncio.get_running_loop(), cluster=cluster,
                             _metadata_max_age_ms=300_000)
    fetcher = Fetcher(client, subscriptions, fetch_max_wait_ms=500)
    try:
        assert _waits(fetcher, subscriptions) == [500]
        FetchWait(SimpleNamespace(_fetcher=fetcher, paused=lambda: {tp}), 500).follow()
        assert _waits(fetcher, subscriptions) == [PAUSED_FETCH_WAIT_MS]
    finally:
        await fetcher.close()


def test_the_wait_is_short_while_a_partition_is_paused() -> None:
    fetcher = SimpleNamespace(_fetch_max_wait_ms=500)
    paused: set[str] = set()
    wait = FetchWait(SimpleNamespace(_fetcher=fetcher, paused=lambda: paused), 500)
    assert wait.follow() == 500 and fetcher._fetch_max_wait_ms == 500
    paused.add("tp")
    assert wait.follow() == PAUSED_FETCH_WAIT_MS == fetcher._fetch_max_wait_ms
    paused.clear()
    assert wait.follow() == 500 == fetcher._fetch_max_wait_ms


def test_a_wait_set_below_the_paused_one_stays_and_no_fetcher_is_no_fault() -> None:
    fetcher = SimpleNamespace(_fetch_max_wait_ms=5)
    wait = FetchWait(SimpleNamespace(_fetcher=fetcher, paused=lambda: {"tp"}), 5)
    assert wait.follow() == 5 == fetcher._fetch_max_wait_ms
    assert FetchWait(SimpleNamespace(paused=set), 500).follow() == 500  # not started


async def test_the_intake_shortens_the_wait_while_it_holds_records() -> None:
    consumer = FakeConsumer({TP0: records(*(dispatch("unit.ok", {"n": i}, workflow_id=f"w{i}")
                                           for i in range(3)))})
    fetcher = SimpleNamespace(_fetch_max_wait_ms=500)
    consumer._fetcher = fetcher  # type: ignore[attr-defined]
    intake = Intake(consumer, 1, fetch_wait_ms=500)  # type: ignore[arg-type]
    assert [r.offset for _, r in await intake.take()] == [0]
    assert consumer.paused() == {TP0} and fetcher._fetch_max_wait_ms == PAUSED_FETCH_WAIT_MS
    for expected in (1, 2):
        intake.release()
        assert [r.offset for _, r in await intake.take()] == [expected]
    intake.release()
    assert await intake.take() == []  # nothing held: resumed before this take's fetch
    assert consumer.paused() == set() and fetcher._fetch_max_wait_ms == 500
