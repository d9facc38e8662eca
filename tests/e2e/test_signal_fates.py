"""Signals' fates on the real broker: 12 copies of one signal (6 over HTTP at once while
the run waits, 6 produced to ``control`` after it ended) leave one consumption and no
dead letter; a signal sent to the ended run is refused, and reads back ``refused`` with
the coordinator's reason (the projector reads it back from the DLQ), which
``wait_signal`` reports; ``signal(..., wait=True)`` reports a consumption; an id never
sent is 404."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from stackkit import Stack, produce, read_topic
from test_kafka_submission import wait_status
from test_signals import recorded

from headwater import codec, errors
from headwater.client import AsyncClient
from headwater.core import events as ev
from tests.polling import scaled

SPEC = {"name": "one-wait", "nodes": [{"id": "approve", "kind": "wait", "signal": "approval",
                                       "fields": {"approved": "boolean"}}],
        "output": "${nodes.approve.output}"}


async def _waiting(hw: AsyncClient, stack: Stack, prefix: str) -> str:
    workflow_id = f"{prefix}-{uuid.uuid4().hex[:8]}"
    await hw.submit(SPEC, id=workflow_id)
    await recorded(stack, workflow_id, ev.WaitStarted)
    return workflow_id


def _signal(workflow_id: str, signal_id: str) -> bytes:
    return codec.encode(ev.SignalSent(workflow_id, "approval", int(time.time() * 1000),
                                      None, signal_id, {"approved": True}))


async def test_copies_are_absorbed_and_a_late_signal_is_refused_with_its_reason(
        stack: Stack) -> None:
    async with AsyncClient(stack.gateway) as hw:
        wid = await _waiting(hw, stack, "copies")
        answers = await asyncio.gather(*(hw.signal(wid, "approval", {"approved": True},
                                                   signal_id="dup-1") for _ in range(6)))
        assert {a["signal_id"] for a in answers} == {"dup-1"}
        status = await wait_status(stack, wid)
        assert status["status"] == "succeeded" and status["output"] == {"approved": True}

        # Six more copies once the run ended, then a signal it never took: in one
        # partition, in order, so the last one's dead letter comes after theirs.
        key = wid.encode()
        await produce([*((stack.topics.control, key, _signal(wid, "dup-1")) for _ in range(6)),
                       (stack.topics.control, key, _signal(wid, "late-1"))])

        def mine(records: list[Any]) -> list[Any]:
            return [r for r in records if r.key == key]

        def sentinel(records: list[Any]) -> bool:
            return any(codec.decode(r.value).signal_id == "late-1" for r in mine(records)
                       if r.value is not None)
        dead = mine(await read_topic(stack.topics.dlq, sentinel, scaled(60), decode=False))
        assert [codec.decode(r.value).signal_id for r in dead] == ["late-1"], [
            dict(r.headers).get("reason") for r in dead]
        reason = dict(dead[0].headers)["reason"].decode()
        assert "has already ended (succeeded)" in reason, reason

        taken = await hw.signal_fate(wid, "dup-1")
        assert (taken.status, taken.node, taken.taken) == ("consumed", "approve", True)
        assert taken.raw["received_at"] is not None  # the gateway's receipt
        started = time.monotonic()
        refused = await hw.wait_signal(wid, "late-1", timeout=scaled(30))
        print(f"\nthe refusal read back {time.monotonic() - started:.2f} s after its "
              "dead letter was seen")
        assert (refused.status, refused.applied, refused.taken) == ("refused", True, False)
        assert refused.reason == reason
        with pytest.raises(errors.NotFound):
            await hw.signal_fate(wid, "never-sent")

    history = await recorded(stack, wid, ev.WorkflowSucceeded)
    assert [type(e.body) for e in history].count(ev.SignalConsumed) == 1
    assert [type(e.body) for e in history].count(ev.SignalSent) == 1


async def test_signal_with_wait_reports_its_consumption(stack: Stack) -> None:
    async with AsyncClient(stack.gateway) as hw:
        wid = await _waiting(hw, stack, "waited")
        fate = await hw.signal(wid, "approval", {"approved": False}, signal_id="w-1",
                               wait=True)
        assert (fate.status, fate.node, fate.signal_id) == ("consumed", "approve", "w-1")
        assert fate.raw["at"] is not None
