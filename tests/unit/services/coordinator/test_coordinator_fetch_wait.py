"""The fetch wait of the coordinator's consumer (``faust_seam.app.shorten_fetch_wait``,
workaround 12), no broker: faust fixes aiokafka's ``fetch_max_wait_ms`` at 1.5 s, and the
seam sets it on the started consumer's fetcher at the first assignment."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import faust
from aiokafka.consumer.fetcher import Fetcher
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

from services.coordinator.faust_seam import app as seam
from services.coordinator.settings import Settings


def test_faust_fixes_the_fetch_wait_at_one_and_a_half_seconds() -> None:
    """When this fails, faust sets the wait otherwise (a setting?): see whether
    ``shorten_fetch_wait`` is still needed."""
    source = inspect.getsource(AIOKafkaConsumerThread._create_worker_consumer)
    assert "fetch_max_wait_ms=1500" in source


def test_aiokafkas_fetcher_reads_its_wait_from_the_attribute_the_seam_sets() -> None:
    assert "self._fetch_max_wait_ms = fetch_max_wait_ms" in inspect.getsource(Fetcher.__init__)
    assert "self._fetch_max_wait_ms" in inspect.getsource(Fetcher._get_actions_per_node)


async def test_the_first_assignment_shortens_the_fetch_wait() -> None:
    app: faust.App = seam.build_app(Settings.from_env(), 10.0)
    fetcher = SimpleNamespace(_fetch_max_wait_ms=1500)
    aiokafka_consumer = SimpleNamespace(_fetcher=fetcher)
    app.consumer = SimpleNamespace(  # type: ignore[assignment]
        _thread=SimpleNamespace(_ensure_consumer=lambda: aiokafka_consumer))
    seam.shorten_fetch_wait(app)
    await app.on_partitions_assigned.send(set())
    assert fetcher._fetch_max_wait_ms == seam.FETCH_MAX_WAIT_MS
