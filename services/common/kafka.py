"""Kafka plumbing the services share: topic creation, producers, record headers."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError, TopicAlreadyExistsError

from headwater.topics import AVRO_CONTENT_TYPE, CONTENT_TYPE_HEADER
from services.common.settings import CommonSettings

AVRO_HEADERS: list[tuple[str, bytes]] = [(CONTENT_TYPE_HEADER, AVRO_CONTENT_TYPE.encode())]


async def ensure_topics(
    settings: CommonSettings, names: Iterable[str], timeout_s: float = 60.0,
    configs: dict[str, str] | None = None,
) -> None:
    """Create the topics that do not exist yet (idempotent).

    Args:
        settings: bootstrap, partition count and replication factor.
        names: topic names.
        timeout_s: how long to keep trying while the broker is unreachable, seconds.
        configs: topic configs (Kafka's ``TopicConfig`` names).

    Raises:
        KafkaConnectionError: the broker stayed unreachable for ``timeout_s``.
    """
    wanted = list(dict.fromkeys(names))
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await admin.start()
            break
        except KafkaConnectionError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    try:
        existing = set(await admin.list_topics())
        missing = [n for n in wanted if n not in existing]
        if missing:
            # Another process may create one first: that is fine.
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics([
                    NewTopic(n, settings.partitions, settings.replication,
                             topic_configs=dict(configs or {}))
                    for n in missing
                ])
    finally:
        await admin.close()


def make_producer(settings: CommonSettings, linger_ms: int = 0) -> AIOKafkaProducer:
    """An idempotent producer with ``acks=all`` (Kafka ``enable.idempotence``)."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap,
        acks="all",
        enable_idempotence=True,
        linger_ms=linger_ms,
        max_request_size=settings.max_message_bytes,
    )


def header(headers: Iterable[tuple[str, bytes]] | None, name: str) -> str | None:
    """The value of header ``name`` decoded as UTF-8, or None."""
    for key, value in headers or ():
        if key == name:
            return value.decode(errors="replace") if value is not None else None
    return None


async def committed_offsets(settings: CommonSettings, group: str,
                            partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The consumer group's committed offsets (the next offset to read) of ``partitions``,
    from the broker (Kafka's OffsetFetch); partitions without one are left out.

    Raises:
        KafkaError: the broker could not answer.
    """
    wanted = [TopicPartition(t, p) for t, p in partitions]
    if not wanted:
        return {}
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap)
    await admin.start()
    try:
        found = await admin.list_consumer_group_offsets(group, partitions=wanted)
    finally:
        await admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in found.items()
            if meta.offset >= 0}
