"""``ensure_topics`` returns only once the broker lists the topics it created.

Before the fix it returned as soon as ``CreateTopics`` was answered, when the broker's
metadata cache did not list the topics yet (14 of 16 topics, 8 partitions each, created
by two processes at once on the local broker, in three runs out of three); a
coordinator subscribing then found no such input topics and consumed nothing of them
for aiokafka's ``metadata_max_age_ms`` (5 minutes), as the fault suite saw on a fresh
broker.
"""

from __future__ import annotations

import asyncio
import uuid

from aiokafka.admin import AIOKafkaAdminClient
from stackkit import BOOTSTRAP

from services.common.kafka.client import ensure_topics
from services.common.settings import CommonSettings

PAIRS = 8


async def test_created_topics_are_listed_at_once(services: None) -> None:
    settings = CommonSettings(bootstrap=BOOTSTRAP)
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    created: list[str] = []
    unlisted: list[str] = []
    try:
        for _ in range(PAIRS):
            prefix = f"listed{uuid.uuid4().hex[:10]}"
            names = [f"{prefix}.submissions", f"{prefix}.control"]
            created += names
            # Two processes at once, as a gateway and a coordinator starting together.
            await asyncio.gather(ensure_topics(settings, names), ensure_topics(settings, names))
            listed = set(await admin.list_topics())
            unlisted += [n for n in names if n not in listed]
    finally:
        await admin.delete_topics(created)
        await admin.close()
    assert unlisted == [], f"{len(unlisted)} of {2 * PAIRS} topics not listed yet"
