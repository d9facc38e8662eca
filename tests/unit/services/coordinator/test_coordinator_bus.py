"""``FaustBus`` dead letters and records (with stand-ins for the faust app's topics and
producer and for topic creation: what is checked is what the bus hands to the producer,
not Kafka)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from headwater.topics import VALUE_OMITTED_HEADER
from services.common.kafka.client import AVRO_HEADERS
from services.common.settings import CommonSettings
from services.coordinator.bus import MAX_REASON_CHARS, FaustBus
from services.coordinator.records import DeadLetter, InputRecord, Outgoing


class Topic:
    def __init__(self, sent: list[dict[str, Any]]) -> None:
        self.sent = sent

    async def send(self, **kwargs: Any) -> Any:
        self.sent.append(kwargs)
        return _done()


async def _done() -> None:
    return None


class Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    async def send(self, *args: Any) -> Any:
        self.sent.append(args)
        return _done()


class App:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.producer = Producer()
        self.made: list[list[str]] = []  # topics the bus had created, call by call

    def topic(self, name: str, **kwargs: Any) -> Topic:
        return Topic(self.sent)

    async def make_topics(self, settings: CommonSettings, names: Iterable[str]) -> None:
        self.made.append(list(names))


def bus(limit: int) -> tuple[FaustBus, App]:
    settings = CommonSettings(**{**CommonSettings.common_from_env(),  # type: ignore[arg-type]
                                 "max_message_bytes": limit})
    app = App()
    return FaustBus(app, settings, make_topics=app.make_topics), app


async def test_a_dead_letter_keeps_the_original_bytes_and_says_why() -> None:
    b, app = bus(1 << 20)
    record = InputRecord("p.reports", 3, 42, b"wf", b"\x00bad", [("h", b"v")])
    await b.publish([], [DeadLetter(record, "x" * (MAX_REASON_CHARS + 10))])
    [sent] = app.sent
    headers = dict(sent["headers"])
    assert sent["value"] == b"\x00bad" and sent["key"] == b"wf"
    assert headers["reason"] == b"x" * MAX_REASON_CHARS
    assert (headers["source-topic"], headers["source-partition"],
            headers["source-offset"]) == (b"p.reports", b"3", b"42")
    assert VALUE_OMITTED_HEADER not in headers


async def test_a_dead_letter_too_large_with_its_headers_goes_without_its_value() -> None:
    b, app = bus(10_000)
    record = InputRecord("p.submissions", 0, 7, b"wf", b"v" * 9_990, [])
    await b.publish([], [DeadLetter(record, "too large to apply")])
    [sent] = app.sent
    assert sent["value"] is None
    assert dict(sent["headers"])[VALUE_OMITTED_HEADER] == b"9990 bytes"


async def test_records_go_to_the_producer_keyed_with_avro_headers_in_order() -> None:
    b, app = bus(1 << 20)
    b._ready["p.tasks.cpu"] = object()  # a topic the coordinator found at start
    records = [Outgoing("p.events", b"wf", b"e1", "wf"), Outgoing("p.tasks.cpu", b"d", b"x", "wf"),
               Outgoing("p.events", b"wf", b"e2", "wf")]
    await b.publish(records, [])
    assert [(topic, key, value, partition) for topic, key, value, partition, _, _
            in app.producer.sent] == [("p.events", b"wf", b"e1", None),
                                      ("p.tasks.cpu", b"d", b"x", None),
                                      ("p.events", b"wf", b"e2", None)]
    assert all(h == AVRO_HEADERS for *_, h in app.producer.sent)
    assert app.sent == []  # nothing through faust's topics
    assert app.made == [["p.events"]]  # a topic not found at start: created once, first


async def test_the_topics_found_at_start_are_not_created_again() -> None:
    b, app = bus(1 << 20)
    t = b.topics
    await b.publish([Outgoing(t.events, b"wf", b"e", "wf"),
                     Outgoing(t.worker_control, b"wf", b"c", "wf")], [])
    assert app.made == [] and len(app.producer.sent) == 2
