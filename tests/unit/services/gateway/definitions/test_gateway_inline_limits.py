"""Definitions naming definitions are inlined within a bound: at most
``MAX_INLINED_NODES`` nodes (and, at ``PUT``, ``HEADWATER_MAX_BODY_BYTES`` bytes) with
every child inlined, counted as they are inlined, so a small spec that would expand to
100,000 nodes is refused (422 naming the limit) after reading at most the limit; and a
record Kafka refuses as too large is 413 naming its size, never a retryable 503."""

from __future__ import annotations

import time
from typing import Any

import pytest
from aiokafka.errors import MessageSizeTooLargeError
from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from services.gateway.definitions.registry import MAX_INLINED_NODES, has_children, inline_children
from services.gateway.edge.problems import Problem


def fan(child: str | None, width: int = 10) -> dict[str, Any]:
    """A spec of ``width`` nodes, each a child run of ``child`` (None: a task)."""
    nodes = [{"id": f"n{i}", "kind": "workflow", "definition": child} if child else
             {"id": f"n{i}", "task": "t.a"} for i in range(width)]
    return {"name": "fan", "nodes": nodes}


class Registry(FakePool):
    """The registry's two reads (``definitions.registry.resolve``): ``level1`` .. ``level4``,
    each ten children of the next, ``level4`` ten tasks; counts the reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        name = args[0]
        if not name.startswith("level"):
            return await super().fetchrow(sql, *args)
        self.reads += 1
        if "definition_heads" in sql:
            return {"version": 1, "deleted": False}
        depth = int(name.removeprefix("level"))
        return {"spec": fan(f"level{depth + 1}" if depth < 4 else None),
                "input_schema": None}


async def test_an_expansion_over_the_node_limit_stops_at_the_limit() -> None:
    pool = Registry()
    started = time.monotonic()
    with pytest.raises(Problem) as raised:
        await inline_children(pool, fan("level1"))  # 10^5 nodes once inlined
    assert raised.value.status == 422
    assert f"over {MAX_INLINED_NODES} nodes (MAX_INLINED_NODES" in raised.value.detail
    assert raised.value.detail.startswith("nodes.n")  # names where it went over
    assert time.monotonic() - started < 2.0
    small = await inline_children(pool, fan("level3"))  # 10^3 nodes: fine
    assert len(small["nodes"]) == 10


async def test_an_expansion_over_the_byte_limit_is_refused() -> None:
    with pytest.raises(Problem) as raised:
        await inline_children(Registry(), fan("level3"), max_bytes=20_000)
    assert "over 20000 bytes (HEADWATER_MAX_BODY_BYTES)" in raised.value.detail
    inlined = await inline_children(Registry(), fan("level4"), max_bytes=20_000)
    assert len(inlined["nodes"][0]["workflow"]["nodes"]) == 10


def test_a_put_or_a_submission_that_expands_too_far_is_422_naming_the_limit(
        gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(Registry(), producer)
    doc = assert_problem(gw.client.put("/v1/definitions/big", json=fan("level1")), 422)
    assert any("MAX_INLINED_NODES" in e for e in doc["errors"]), doc
    doc = assert_problem(gw.client.post("/v1/workflows", json={"workflow": fan("level1")}),
                         422)
    assert "MAX_INLINED_NODES" in doc["detail"], doc
    assert producer.sent == []


class TooLarge(FakeProducer):
    """Refuses every record as the producer's ``max_request_size`` check does."""

    _max_request_size = 1000

    async def send_and_wait(self, topic: str, value: bytes, key: bytes,
                            headers: Any = None) -> None:
        raise MessageSizeTooLargeError(f"The message is {len(value)} bytes when serialized "
                                       "which is larger than the maximum request size")


def test_a_record_too_large_for_kafka_is_413_naming_its_size(gw: Gateway) -> None:
    pool = FakePool()
    gw.connect(pool, TooLarge())
    response = gw.client.post("/v1/workflows", json={
        "id": "wf-big", "workflow": {"name": "one", "nodes": [{"id": "a", "task": "t.a"}]},
        "queue_anyway": True})
    doc = assert_problem(response, 413)
    assert "bytes" in doc["detail"] and "1000" in doc["detail"], doc
    assert "HEADWATER_MAX_MESSAGE_BYTES" in doc["detail"], doc
    assert "retry-after" not in response.headers
    assert pool.rows == {}  # the claim is given back


def test_has_children_names_what_inline_children_would_change() -> None:
    task = {"id": "a", "kind": "task", "task": "t"}
    assert not has_children({"nodes": [task]})
    assert not has_children({"nodes": "not a list"}) and not has_children(None)
    assert has_children({"nodes": [task, {"id": "c", "kind": "workflow", "definition": "d"}]})
    assert has_children({"nodes": [{"id": "c", "kind": "workflow", "workflow": {"nodes": []}}]})
    assert not has_children({"nodes": [{"id": "c", "kind": "workflow"}]})  # neither: a fault
