"""A trigger's consumer, one batch at a time (``TriggerRunner._apply``) against stand-ins
for Kafka and PostgreSQL: submissions keyed by run id in the source partition's order,
dead letters with their reason, the filter's records skipped, and the offsets committed
only once every record sent was acknowledged."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from aiokafka import TopicPartition
from trigger_kit import SPEC, DefinitionPool, record, trigger

from headwater import codec
from headwater.core import events as ev
from services.gateway.settings import Settings
from services.gateway.triggers.runner import Plumbing, TriggerRunner

SETTINGS = Settings(bootstrap="127.0.0.1:9", prefix="hw")
TP = TopicPartition("shop.orders", 2)


class Producer:
    """Records what is sent; each send's ack resolves at once, or fails with ``fail``."""

    def __init__(self, fail: BaseException | None = None) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None, list[tuple[str, bytes]]]] = []
        self.fail = fail

    async def send(self, topic: str, value: bytes | None, key: bytes | None = None,
                   headers: Any = None) -> asyncio.Future[None]:
        self.sent.append((topic, key, value, list(headers or ())))
        ack: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.fail is None:
            ack.set_result(None)
        else:
            ack.set_exception(self.fail)
        return ack


class Consumer:
    """Records the offsets committed."""

    def __init__(self) -> None:
        self.committed: list[dict[TopicPartition, int]] = []

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.committed.append(offsets)


def _runner(producer: Producer, pool: DefinitionPool | None = None, **fields: Any,
            ) -> TriggerRunner:
    settings = trigger(input={"n": "${value.n}"}, **fields)
    plumbing = Plumbing(SETTINGS, producer, pool or DefinitionPool(), (), 1.0)  # type: ignore[arg-type]
    return TriggerRunner(settings, "-/orders", plumbing)


def _batch(*values: bytes) -> dict[TopicPartition, list[Any]]:
    return {TP: [record(v, offset=10 + i) for i, v in enumerate(values)]}


def _submissions(producer: Producer) -> list[tuple[bytes | None, ev.WorkflowSubmitted]]:
    return [(key, codec.decode(value)) for topic, key, value, _ in producer.sent
            if topic == "hw.submissions"]


def _headers(sent: list[tuple[str, bytes]]) -> dict[str, str]:
    return {k: v.decode() for k, v in sent}


async def test_each_record_is_one_submission_in_order_then_the_offsets_are_committed() -> None:
    producer, consumer = Producer(), Consumer()
    runner = _runner(producer)
    await runner._apply(consumer, _batch(*(orjson.dumps({"n": n}) for n in range(3))))  # type: ignore[arg-type]
    submitted = _submissions(producer)
    ids = [f"trigger:orders:shop.orders:2:{o}" for o in (10, 11, 12)]
    assert [key for key, _ in submitted] == [i.encode() for i in ids]
    assert [(s.workflow_id, s.input, s.definition, s.definition_version, s.tenant)
            for _, s in submitted] == [(i, {"n": n}, "ship", 2, None)
                                       for n, i in enumerate(ids)]
    assert submitted[0][1].spec == SPEC and submitted[0][1].at_ms == 1_722_000_000_000
    assert consumer.committed == [{TP: 13}]


async def test_a_batch_read_again_gives_the_same_records_to_produce() -> None:
    first, again = Producer(), Producer()
    batch = _batch(orjson.dumps({"n": 1}), orjson.dumps({"n": 2}))
    await _runner(first)._apply(Consumer(), batch)  # type: ignore[arg-type]
    await _runner(again)._apply(Consumer(), batch)  # type: ignore[arg-type]
    assert [(k, v) for _, k, v, _ in first.sent] == [(k, v) for _, k, v, _ in again.sent]


async def test_records_that_cannot_be_mapped_are_dead_lettered_with_their_reason() -> None:
    producer, consumer = Producer(), Consumer()
    runner = _runner(producer)
    await runner._apply(consumer, _batch(  # type: ignore[arg-type]
        b"{bad", orjson.dumps({"n": "three"}), orjson.dumps({"m": 1}), orjson.dumps({"n": 4})))
    dead = [(key, value, _headers(h)) for topic, key, value, h in producer.sent
            if topic == "hw.dlq"]
    assert [value for _, value, _ in dead] == [b"{bad", b'{"n":"three"}', b'{"m":1}']
    reasons = [h["reason"] for _, _, h in dead]
    assert reasons[0].startswith("trigger -/orders: record shop.orders[2]@10: value: not JSON")
    assert reasons[1].startswith("trigger -/orders: record shop.orders[2]@11: input: the "
                                 "input does not match the input_schema of definition ship@2")
    assert reasons[2] == ("trigger -/orders: record shop.orders[2]@12: input: ${value.n}: "
                          "value has no 'n'")
    assert all(h["trigger"] == "-/orders" and h["source-topic"] == "shop.orders"
               and h["source-partition"] == "2" for _, _, h in dead)
    assert [h["source-offset"] for _, _, h in dead] == ["10", "11", "12"]
    assert [s.workflow_id for _, s in _submissions(producer)] == [
        "trigger:orders:shop.orders:2:13"]
    assert consumer.committed == [{TP: 14}]


async def test_a_dead_letter_keeps_no_credential() -> None:
    producer = Producer()
    batch = {TP: [record(b"{bad", headers=(("authorization", b"Bearer x"), ("trace", b"1")))]}
    await _runner(producer)._apply(Consumer(), batch)  # type: ignore[arg-type]
    [(_, _, _, headers)] = producer.sent
    assert "authorization" not in _headers(headers) and _headers(headers)["trace"] == "1"


async def test_filtered_records_start_nothing_and_are_committed() -> None:
    producer, consumer = Producer(), Consumer()
    runner = _runner(producer, filter=[{"pointer": "/value/kind", "equals": "order"}])
    await runner._apply(consumer, _batch(orjson.dumps({"kind": "ping"})))  # type: ignore[arg-type]
    assert producer.sent == [] and consumer.committed == [{TP: 11}]


async def test_a_deleted_definition_dead_letters_the_records_naming_it() -> None:
    pool = DefinitionPool()
    pool.deleted = True
    producer = Producer()
    await _runner(producer, pool)._apply(Consumer(), _batch(orjson.dumps({"n": 1})))  # type: ignore[arg-type]
    [(topic, _, _, headers)] = producer.sent
    assert topic == "hw.dlq"
    assert "definition ship: definition ship was deleted" in _headers(headers)["reason"]


async def test_nothing_is_committed_unless_every_record_was_acknowledged() -> None:
    consumer = Consumer()
    with pytest.raises(OSError):
        await _runner(Producer(fail=OSError("broker gone")))._apply(  # type: ignore[arg-type]
            consumer, _batch(orjson.dumps({"n": 1})))
    pool = DefinitionPool()
    pool.fail = OSError("database gone")
    with pytest.raises(OSError):
        await _runner(Producer(), pool)._apply(consumer, _batch(orjson.dumps({"n": 1})))  # type: ignore[arg-type]
    assert consumer.committed == []


async def test_a_tenants_trigger_submits_as_its_tenant() -> None:
    producer = Producer()
    settings = trigger(tenant="acme", input={"n": "${value.n}"})
    plumbing = Plumbing(SETTINGS, producer, DefinitionPool(), (), 1.0)  # type: ignore[arg-type]
    await TriggerRunner(settings, "acme/orders", plumbing)._apply(  # type: ignore[arg-type]
        Consumer(), _batch(orjson.dumps({"n": 1})))
    [(_, submission)] = _submissions(producer)
    assert submission.tenant == "acme"
    assert submission.workflow_id.startswith("trigger:orders:")


async def test_the_submissions_spec_is_placed_as_the_gateways_submissions_are(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A node without a queue goes where the workers of its task are
    (``queues.admission.placed``, over the live registry), once per batch."""
    calls: list[dict[str, Any]] = []

    def placed(spec: dict[str, Any]) -> dict[str, Any]:
        calls.append(spec)
        return {**spec, "nodes": [{**n, "queue": "ship-q"} for n in spec["nodes"]]}

    monkeypatch.setattr("services.gateway.triggers.runner.placed", placed)
    producer = Producer()
    await _runner(producer)._apply(Consumer(), _batch(orjson.dumps({"n": 1}),  # type: ignore[arg-type]
                                                      orjson.dumps({"n": 2})))
    assert [s.spec["nodes"][0]["queue"] for _, s in _submissions(producer)] == ["ship-q"] * 2
    assert calls == [SPEC]


async def test_an_input_http_would_refuse_is_dead_lettered_too() -> None:
    """U+0000 (PostgreSQL cannot keep it) and integers past 64 bits, as at HTTP."""
    producer, consumer = Producer(), Consumer()
    settings = trigger(input={"n": "${value.n}", "s": "${value.s}"})
    plumbing = Plumbing(SETTINGS, producer, DefinitionPool(), (), 1.0)  # type: ignore[arg-type]
    runner = TriggerRunner(settings, "-/orders", plumbing)
    await runner._apply(consumer, _batch(  # type: ignore[arg-type]
        orjson.dumps({"n": 1, "s": "a\u0000b"}), b'{"n": 2, "s": 12345678901234567890123}',
        orjson.dumps({"n": 3, "s": "fine"})))
    reasons = [_headers(h)["reason"] for topic, _, _, h in producer.sent if topic == "hw.dlq"]
    assert len(reasons) == 2 and "input.s: contains U+0000" in reasons[0], reasons
    assert [s.input for _, s in _submissions(producer)][-1] == {"n": 3, "s": "fine"}
    assert consumer.committed == [{TP: 13}]
