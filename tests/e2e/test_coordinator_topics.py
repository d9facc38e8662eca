"""The topics a coordinator prepares before faust starts, on the real broker: the
table's changelog is created compacted, with the segment roll and dirty ratio that let
Kafka compact it soon; a changelog that exists and is not compacted (a broker with
``auto.create.topics.enable`` made it first) stops the start with the reason, since Kafka
would delete its records after ``retention.ms`` and a restart would lose workflows."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from stackkit import BOOTSTRAP

from services.common.kafka.client import topic_config
from services.coordinator.app import prepare
from services.coordinator.settings import Settings

KEYS = ("cleanup.policy", "segment.ms", "min.cleanable.dirty.ratio")


@pytest.fixture
async def settings(services: None) -> AsyncIterator[Settings]:
    """Coordinator settings under a fresh topic prefix; its topics deleted after."""
    prefix = f"prep{uuid.uuid4().hex[:10]}"
    yield dataclasses.replace(Settings.from_env(), bootstrap=BOOTSTRAP, prefix=prefix)
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        mine = [t for t in await admin.list_topics() if t.startswith(prefix)]
        await admin.delete_topics(mine)
    finally:
        await admin.close()


async def test_the_changelog_is_created_compacted_and_soon_compacted(
        settings: Settings) -> None:
    await prepare(settings)
    config = await topic_config(settings, settings.topics.table_changelog)
    assert {k: config[k] for k in KEYS} == {
        "cleanup.policy": "compact", "segment.ms": "3600000",
        "min.cleanable.dirty.ratio": "0.1"}
    await prepare(settings)  # a second start finds it as it is


async def test_a_changelog_that_is_not_compacted_stops_the_start(settings: Settings) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:  # as a broker's auto-creation makes it: the broker's default policy, delete
        await admin.create_topics([NewTopic(settings.topics.table_changelog,
                                            settings.partitions, 1)])
    finally:
        await admin.close()
    with pytest.raises(RuntimeError, match=r"cleanup\.policy='delete'.*lose"):
        await prepare(settings)


@pytest.mark.parametrize(("policy", "partitions", "fault"), [
    ("compact,delete", None, r"cleanup\.policy='compact,delete'.*lose"),
    ("compact", 3, r"has 3 partitions, the input topics 8"),
])
async def test_a_changelog_that_deletes_or_is_partitioned_otherwise_stops_the_start(
        settings: Settings, policy: str, partitions: int | None, fault: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(
            settings.topics.table_changelog, partitions or settings.partitions, 1,
            topic_configs={"cleanup.policy": policy})])
    finally:
        await admin.close()
    with pytest.raises(RuntimeError, match=fault):
        await prepare(settings)
