"""Kafka plumbing the services share: topic creation, producers, record headers, and
whether a broker answers at all (``broker_answers``)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

from aiokafka import AIOKafkaClient, AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaError,
    NoError,
    TopicAlreadyExistsError,
    for_code,
)
from aiokafka.protocol.metadata import MetadataRequest

from headwater.topics import AVRO_CONTENT_TYPE, CONTENT_TYPE_HEADER
from services.common.kafka.security import aiokafka_security, raise_if_refused
from services.common.settings import CommonSettings

log = logging.getLogger("headwater.kafka")

AVRO_HEADERS: list[tuple[str, bytes]] = [(CONTENT_TYPE_HEADER, AVRO_CONTENT_TYPE.encode())]


async def ensure_topics(
    settings: CommonSettings, names: Iterable[str], timeout_s: float = 60.0,
    configs: dict[str, str] | None = None,
) -> None:
    """Create the topics that do not exist yet (idempotent), and return once the broker
    lists every one of them in its metadata.

    A topic is in the controller's metadata when ``CreateTopics`` answers but in a
    broker's metadata cache a little later (KRaft applies the metadata log
    asynchronously): a consumer that subscribed meanwhile finds no such topic and,
    with aiokafka, asks again only after ``metadata_max_age_ms`` (5 minutes by
    default), consuming nothing of it until then. aiokafka also returns a refused
    creation as an error code in the answer rather than raising it. Hence the wait,
    asking again while a topic is refused or still missing.

    Args:
        settings: bootstrap, security, partition count and replication factor.
        names: topic names.
        timeout_s: how long to keep trying while the broker is unreachable or the topics
            are not listed yet, seconds.
        configs: topic configs (Kafka's ``TopicConfig`` names).

    Raises:
        KafkaConnectionError: the broker stayed unreachable for ``timeout_s``.
        KafkaAccessRefused: the broker refused the TLS handshake or the SASL
            credentials (at once, not after ``timeout_s``).
        TimeoutError: the topics were not all listed within ``timeout_s`` (the message
            has the broker's last refusal, if any).
    """
    wanted = list(dict.fromkeys(names))
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap,
                                **aiokafka_security(settings.kafka_security))
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await admin.start()
            break
        except KafkaConnectionError:
            # A broker that refuses the credentials will not accept them later.
            await raise_if_refused(settings.bootstrap, settings.kafka_security)
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    try:
        topics = [NewTopic(n, settings.partitions, settings.replication,
                           topic_configs=dict(configs or {})) for n in wanted]
        await _create_until_listed(admin, topics, deadline)
    finally:
        await admin.close()


COMPACTED = {"cleanup.policy": "compact"}
"""The topic config of a compacted topic (Kafka's ``cleanup.policy``): the log keeps at
least the last record of each key."""


async def ensure_compacted_topics(settings: CommonSettings, names: Iterable[str],
                                  partitions: int = 1, timeout_s: float = 60.0) -> None:
    """Create the compacted topics that do not exist yet, as ``ensure_topics`` does
    (``cleanup.policy=compact``, ``partitions`` partitions instead of the settings').

    A topic that exists already is left as it is, whatever its config.

    Args:
        settings: bootstrap and replication factor.
        names: topic names.
        partitions: partitions of each new topic (1: one total order of its records).
        timeout_s: as ``ensure_topics``, seconds.

    Raises:
        KafkaConnectionError: the broker stayed unreachable for ``timeout_s``.
        TimeoutError: the topics were not all listed within ``timeout_s``.
    """
    await ensure_topics(dataclasses.replace(settings, partitions=partitions), names,
                        timeout_s=timeout_s, configs=COMPACTED)


async def topic_config(settings: CommonSettings, name: str) -> dict[str, str]:
    """The config of topic ``name`` as the broker describes it (``describe_config``),
    through an admin client of its own.

    Raises:
        KafkaError: the broker refused to describe it (an unknown topic, an ACL).
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap,
                                **aiokafka_security(settings.kafka_security))
    await admin.start()
    try:
        return await describe_config(admin, name)
    finally:
        await admin.close()


async def topic_exists(settings: CommonSettings, name: str) -> bool:
    """Whether the broker lists topic ``name`` (a metadata request for every topic,
    which creates none, whatever ``auto.create.topics.enable`` says)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap,
                                **aiokafka_security(settings.kafka_security))
    await admin.start()
    try:
        return name in await admin.list_topics()
    finally:
        await admin.close()


async def describe_config(admin: AIOKafkaAdminClient, name: str) -> dict[str, str]:
    """The config of topic ``name`` as the broker describes it (its own settings and the
    broker's defaults), Kafka's names to values, through a started admin client.

    Raises:
        KafkaError: the broker refused to describe it (an unknown topic, an ACL).
    """
    [response] = await admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, name, None)])
    [(code, message, _, _, entries)] = response.resources
    if code:
        raise for_code(code)(f"describing topic {name}: {message}")
    return {entry[0]: entry[1] for entry in entries}


RECREATE_S = 1.0
"""How long a creation the broker accepted may take to be listed before it is asked
for again, seconds."""


async def _create_until_listed(admin: AIOKafkaAdminClient, topics: list[NewTopic],
                               deadline: float) -> None:
    """Create whichever of ``topics`` the broker does not list, until it lists them all.

    Raises:
        TimeoutError: not all listed by ``deadline`` (``time.monotonic()``).
    """
    asked_at, refused = -math.inf, ""
    while True:
        listed = set(await admin.list_topics())
        missing = [t for t in topics if t.name not in listed]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics {[t.name for t in missing]} not listed by the "
                               f"broker in time{refused}")
        if refused or time.monotonic() - asked_at >= RECREATE_S:
            asked_at = time.monotonic()
            # Another process may create one first: that is fine.
            with contextlib.suppress(TopicAlreadyExistsError):
                response = await admin.create_topics(missing)
                refused = _refusals(response.topic_errors)
                if refused:
                    log.warning("the broker refused to create topics%s; asking again", refused)
        await asyncio.sleep(0.05)


def _refusals(topic_errors: Iterable[tuple[Any, ...]]) -> str:
    """`` (<topic>: <error>, ...)`` for the topics a ``CreateTopics`` answer refused for
    another reason than that they exist; ``""`` when none was."""
    refused = [f"{name}: {for_code(code).__name__}" for name, code, *_ in topic_errors
               if for_code(code) not in (NoError, TopicAlreadyExistsError)]
    return f" ({', '.join(refused)})" if refused else ""


def make_producer(settings: CommonSettings, linger_ms: int = 0) -> AIOKafkaProducer:
    """An idempotent producer with ``acks=all`` (Kafka ``enable.idempotence``), secured
    as ``settings.kafka_security`` says."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap,
        **aiokafka_security(settings.kafka_security),
        acks="all",
        enable_idempotence=True,
        linger_ms=linger_ms,
        max_request_size=settings.max_message_bytes,
    )


class BrokerUnreachable(Exception):
    """Raised by :func:`broker_answers` when no broker answered in time; the message
    says why (no answer within the time, a refused connection, no broker known)."""


async def broker_answers(client: AIOKafkaClient, timeout_s: float) -> None:
    """Ask a broker the client knows for the metadata of no topic, over the client's own
    connection, and wait at most ``timeout_s`` for the answer.

    A producer or consumer that is merely idle has no way to notice a broker that died
    or froze until its next request times out (aiokafka's ``request_timeout_ms``, 40 s by
    default): a request is the only test, as aiokafka's maintainers advise for health
    checks (aio-libs/aiokafka#604). Asking for no topic (an empty list, Metadata API
    v1 and later) makes it the cheapest request a broker answers. A request left
    unanswered when the time is up is abandoned harmlessly: aiokafka ignores the late
    answer of a cancelled request.

    Args:
        client: the ``AIOKafkaClient`` of a started producer or consumer (its
            ``client`` attribute).
        timeout_s: how long to wait for the answer, seconds.

    Raises:
        BrokerUnreachable: no answer within ``timeout_s``, the connection failed, or no
            broker is known yet.
    """
    node = client.get_random_node()
    if node is None:
        raise BrokerUnreachable("no broker known yet")
    try:
        await asyncio.wait_for(client.send(node, MetadataRequest([])), timeout_s)
    except TimeoutError:
        raise BrokerUnreachable(f"no answer within {timeout_s:g} s") from None
    except (KafkaError, OSError) as e:
        raise BrokerUnreachable(f"{type(e).__name__}: {e}") from e


@contextlib.asynccontextmanager
async def started(consumer: AIOKafkaConsumer) -> AsyncIterator[AIOKafkaConsumer]:
    """``consumer`` started, and stopped on the way out, also when starting it failed or
    was cancelled.

    aiokafka's ``start()`` creates the group coordinator, which joins the group and
    heartbeats in the background, and then waits for the assignment. A reader
    cancelled there (a sibling reader of the projector failed, say, as the broker came
    back) and never stopped stays a member of its group for as long as its process
    lives, assigned partitions that nobody reads; stopped, it leaves the group.
    """
    try:
        await consumer.start()
        yield consumer
    finally:
        await consumer.stop()


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
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap,
                                **aiokafka_security(settings.kafka_security))
    await admin.start()
    try:
        found = await admin.list_consumer_group_offsets(group, partitions=wanted)
    finally:
        await admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in found.items()
            if meta.offset >= 0}
