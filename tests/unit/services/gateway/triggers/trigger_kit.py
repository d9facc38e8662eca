"""Shared pieces of the triggers' unit tests: a trigger's settings and Kafka records
built in memory (aiokafka's ``ConsumerRecord``, no broker), a definitions registry of one
definition (``DefinitionPool``) and a producer of the triggers topic (``TopicProducer``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiokafka import ConsumerRecord

from headwater import codec
from headwater.trigger_records import TriggerStored
from services.gateway.triggers.settings import TriggerSettings, parse

BODY: dict[str, Any] = {"topic": "shop.orders", "definition": "ship"}


def trigger(name: str = "orders", tenant: str | None = None, **fields: Any) -> TriggerSettings:
    """A trigger's settings: ``BODY`` with ``fields``."""
    return parse(name, tenant, {**BODY, **fields})


def record(value: bytes | None, offset: int = 7, partition: int = 2, key: bytes | None = b"k1",
           headers: tuple[tuple[str, bytes], ...] = (), topic: str = "shop.orders",
           timestamp: int = 1_722_000_000_000) -> ConsumerRecord[bytes, bytes]:
    """A record of ``topic`` as a consumer hands it over."""
    return ConsumerRecord(topic, partition, offset, timestamp, 0, key, value, None,
                          len(key or b""), len(value or b""), headers)


SPEC: dict[str, Any] = {"name": "ship", "nodes": [{"id": "a", "task": "t.ship",
                                                    "input": {"n": "${input.n}"}}]}
SCHEMA: dict[str, Any] = {"type": "object", "required": ["n"],
                          "properties": {"n": {"type": "integer"}}}


class DefinitionPool:
    """The projection's pool as far as resolving a definition goes: ``ship`` at
    ``version`` (deleted with ``deleted``), its input ``SCHEMA``."""

    def __init__(self) -> None:
        self.version = 2
        self.deleted = False
        self.fail: BaseException | None = None

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        """The head and the version of ``ship``."""
        if self.fail is not None:
            raise self.fail
        if "from definition_heads" in sql:
            return ({"version": self.version, "deleted": self.deleted, "tenant": None}
                    if args[0] == "ship" else None)
        if "from definitions" in sql:
            return ({"spec": SPEC, "input_schema": SCHEMA}
                    if args == ("ship", self.version) else None)
        return None

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        """The names to suggest: ``ship``."""
        return [{"name": "ship"}]

    async def close(self) -> None:
        """Nothing to close."""


@dataclass
class Meta:
    offset: int


class TopicProducer:
    """Keeps what is produced to the triggers topic; acknowledges with its offset."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, TriggerStored]] = []

    async def send_and_wait(self, topic: str, value: bytes, key: bytes,
                            headers: Any = None) -> Meta:
        self.sent.append((topic, key, codec.decode(value)))
        return Meta(len(self.sent) - 1)

    async def stop(self) -> None:
        """Nothing to stop."""
