"""The deliverer: the webhooks topic kept in PostgreSQL, deliveries decided from
``events`` (``decider.py``) and attempted (``sender.py``).

It runs beside the projector (``services.projector.writer.run_projector``, so in the
coordinator's process by default, or in ``python -m services.projector``), or alone
(``python -m services.webhooks``); ``HEADWATER_WEBHOOKS=off`` leaves it out of the
projector. Several deliverers share the work: the decider's consumer group splits the
events' partitions, and the sender's leases split the due deliveries.

At start it reads the whole ``webhooks`` topic into the ``webhooks`` table (a lost table
comes back) before it decides anything, then keeps following it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, TopicPartition

from headwater import codec
from headwater.errors import DecodeError
from headwater.webhooks import WebhookStored
from services.common.db import UNAVAILABLE
from services.common.kafka.client import ensure_compacted_topics, make_producer, started
from services.common.kafka.security import aiokafka_security
from services.common.settings import OFF, CommonSettings, env_float, env_str
from services.webhooks.decider import Decider
from services.webhooks.sender import Sender
from services.webhooks.store import store_hooks

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WebhookSettings:
    """The deliverer's settings.

    Attributes:
        enabled: whether the projector runs the deliverer (``HEADWATER_WEBHOOKS``,
            ``on``/``off``, default ``on``).
        timeout_s: how long an attempt waits for the receiver's answer, seconds
            (``HEADWATER_WEBHOOK_TIMEOUT_S``, default 10).
    """

    enabled: bool = True
    timeout_s: float = 10.0

    @classmethod
    def from_env(cls) -> WebhookSettings:
        """Read from the ``HEADWATER_*`` environment. Raises ``ValueError`` naming a bad
        variable."""
        timeout = env_float("WEBHOOK_TIMEOUT_S", 10.0)
        if not 0 < timeout <= 300:
            raise ValueError(f"HEADWATER_WEBHOOK_TIMEOUT_S must be in (0, 300], got {timeout}")
        return cls(env_str("WEBHOOKS", "on").lower() not in OFF, timeout)


def last_records(values: Iterable[bytes | None]) -> list[WebhookStored]:
    """The ``WebhookStored`` records among record values, the last of each name
    (anything else, undecodable or of another type, is logged and skipped)."""
    last: dict[str, WebhookStored] = {}
    for value in values:
        try:
            record = codec.decode(value)
        except DecodeError as e:
            log.warning("an undecodable record on the webhooks topic, skipped: %s", e)
            continue
        if isinstance(record, WebhookStored):
            last[record.name] = record
        elif value is not None:
            log.warning("a %s record on the webhooks topic, skipped", type(record).__name__)
    return list(last.values())


async def write_hooks(pool: asyncpg.Pool, hooks: list[WebhookStored]) -> None:
    """Write records to ``webhooks``, waiting PostgreSQL out while it is unavailable; a
    record it refuses (a value its text cannot hold, from a producer other than the
    gateway) is logged and skipped, never retried for ever."""
    while True:
        try:
            await store_hooks(pool, hooks)
            return
        except UNAVAILABLE as e:
            log.warning("webhooks not written (%r); again in 1 s", e)
            await asyncio.sleep(1.0)
        except asyncpg.PostgresError:
            break
    for hook in hooks:  # one by one, to keep all but the refused ones
        try:
            await store_hooks(pool, [hook])
        except asyncpg.PostgresError as e:
            log.error("webhook %r refused by PostgreSQL, skipped: %s", hook.name[:100], e)


async def follow_hooks(settings: CommonSettings, pool: asyncpg.Pool,
                       loaded: asyncio.Event) -> None:
    """Keep ``webhooks`` current with the topic until cancelled; set ``loaded`` once
    the records that were on it at start are written."""
    topic = settings.topics.webhooks
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.bootstrap,
                                **aiokafka_security(settings.kafka_security), group_id=None,
                                enable_auto_commit=False, auto_offset_reset="earliest")
    async with started(consumer):
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        while True:
            if not loaded.is_set() and await consumer.position(tp) >= end:
                loaded.set()
                log.info("webhooks: %d records of %s read", end, topic)
            batches = await consumer.getmany(timeout_ms=500, max_records=500)
            records: list[Any] = [r for b in batches.values() for r in b]
            hooks = last_records(r.value for r in records)
            if hooks:
                await write_hooks(pool, hooks)


async def run_webhooks(settings: CommonSettings, pool: asyncpg.Pool,
                       webhook_settings: WebhookSettings | None = None) -> None:
    """Run the deliverer until cancelled (nothing when ``HEADWATER_WEBHOOKS=off``)."""
    ws = webhook_settings or WebhookSettings.from_env()
    if not ws.enabled:
        return
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per attempt
    await ensure_compacted_topics(settings, [settings.topics.webhooks], timeout_s=60.0)
    producer = make_producer(settings)
    await producer.start()
    try:
        sender = Sender(pool, settings.topics, producer, ws.timeout_s)
        decider = Decider(settings, pool, woken=sender.wake.set)
        loaded = asyncio.Event()

        async def decide_once_loaded() -> None:
            await loaded.wait()
            await decider.run()

        async with asyncio.TaskGroup() as group:
            group.create_task(follow_hooks(settings, pool, loaded))
            group.create_task(decide_once_loaded())
            group.create_task(sender.run())
    finally:
        await producer.stop()
