"""A child id already taken, on the real broker: a workflow submitted on its own as
``<parent>:c:1`` before the parent exists (straight on Kafka: the gateway refuses the id).
The parent's first child attempt fails at once (``ChildWorkflowConflict``: its
``ChildSubmitted`` is dead-lettered and the attempt reported failed, without any node
timeout), its retry runs ``<parent>:c:2``; the parent's cancels of ``:c:1`` name the
parent and leave the stranger untouched, and so does cancelling the parent while its
second child runs."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
from stackkit import BOOTSTRAP, Stack, read_topic, submit_to_kafka
from test_kafka_submission import wait_status

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from services.common.topic_reader import TopicReader
from tests.polling import holds_for_async, scaled

STRANGER = {"name": "stranger", "nodes": [{"id": "w", "kind": "wait", "signal": "s"}]}
LEAF = {"name": "leaf", "nodes": [{"id": "x", "task": "e2e.digest",
                                   "input": {"value": "${input.v}"}}],
        "output": "${nodes.x.output}"}
RETRY = {"max_attempts": 2, "backoff_base": 0.2}
UNTOUCHED_S = 3.0
"""Seconds the stranger is watched after the parent's cancels were sent."""


def _parent(child: dict[str, Any]) -> dict[str, Any]:
    return {"name": "parent", "nodes": [{"id": "c", "kind": "workflow", "workflow": child,
                                         "input": {"v": 1}, "retry": RETRY}],
            "output": "${nodes.c.output}"}


async def _submit(client: httpx.AsyncClient, workflow_id: str, spec: dict[str, Any]) -> None:
    response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec,
                                                         "input": {}})
    assert response.status_code == 202, response.text


async def _events_until(stack: Stack, done: Any) -> list[ev.HistoryEvent]:
    """The events topic from its beginning, once ``done(records)`` holds."""
    return await read_topic(stack.topics.events, done, scaled(90))


async def _stranger(stack: Stack, client: httpx.AsyncClient, wid: str) -> list[str]:
    """Submit the stranger under ``wid`` straight on Kafka (the gateway takes no id of a
    child's form: 422); its event types once it waits."""
    refused = await client.post("/v1/workflows", json={"id": wid, "workflow": STRANGER})
    assert refused.status_code == 422 and "child workflows" in refused.text, refused.text
    await submit_to_kafka(stack, ev.WorkflowSubmitted(wid, STRANGER, {},
                                                      int(time.time() * 1000)))
    records = await _events_until(stack, lambda rs: any(
        r.workflow_id == wid and isinstance(r.body, ev.WaitStarted) for r in rs))
    return [r.type for r in records if r.workflow_id == wid]


async def _cancels_of(stack: Stack, wid: str, count: int) -> list[ev.CancelRequested]:
    """The first ``count`` cancels of ``wid`` on ``control`` (other records there may be
    anything: JSON signals, or garbage other tests produced)."""
    def decoded(records: list[Any]) -> list[ev.CancelRequested]:
        out = []
        for r in records:
            if r.key != wid.encode():
                continue
            try:
                record = codec.decode(r.value)
            except DecodeError:
                continue
            if isinstance(record, ev.CancelRequested):
                out.append(record)
        return out
    raw = await read_topic(stack.topics.control, lambda rs: len(decoded(rs)) >= count,
                           scaled(60), decode=False)
    return decoded(raw)


async def _left_alone(stack: Stack, client: httpx.AsyncClient, wid: str,
                      before: list[str], end_of: str) -> None:
    """The stranger keeps running, and its history is what it was before the parent:
    once the parent's terminal event is read, the stranger's records are read to the end
    offsets of then (its partition may be another: a read that stopped at the parent's
    end could have seen none of it yet)."""
    async def status() -> Any:
        return (await client.get(f"/v1/workflows/{wid}")).json().get("status")
    await holds_for_async(status, UNTOUCHED_S, f"{wid} keeps running",
                          holds=lambda s: s == "running")
    await _events_until(stack, lambda rs: any(
        r.workflow_id == end_of and r.terminal for r in rs))
    async with TopicReader(BOOTSTRAP) as reader:
        found = await reader.read_to_end(stack.topics.events,
                                         keep=lambda key: key == wid.encode())
    assert [codec.decode(r.value).type for r in found] == before


async def test_a_taken_child_id_fails_the_attempt_and_the_retry_runs(stack: Stack) -> None:
    parent = f"taken-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        before = await _stranger(stack, client, f"{parent}:c:1")
        assert before == ["WorkflowAccepted", "WaitStarted"]
        await _submit(client, parent, _parent(LEAF))
        done = await wait_status(stack, parent, timeout_s=90)
        assert done["status"] == "succeeded", done
        second = await wait_status(stack, f"{parent}:c:2")
        assert second["status"] == "succeeded" and done["output"] == second["output"]
        records = await _events_until(stack, lambda rs: any(
            r.workflow_id == parent and r.terminal for r in rs))
        failed = [r.body for r in records if r.workflow_id == parent
                  and isinstance(r.body, ev.TaskFailed)]
        assert [(f.attempt, f.error_type, f.retryable) for f in failed] == [
            (1, "ChildWorkflowConflict", True)], failed
        assert f"{parent}:c:1 was not started" in failed[0].error
        (cancel,) = await _cancels_of(stack, f"{parent}:c:1", 1)
        assert cancel.parent_id == parent
        await _left_alone(stack, client, f"{parent}:c:1", before, parent)


async def test_cancelling_the_parent_leaves_the_stranger_alone(stack: Stack) -> None:
    parent = f"taken-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        before = await _stranger(stack, client, f"{parent}:c:1")
        await _submit(client, parent, _parent(STRANGER))
        await _events_until(stack, lambda rs: any(
            r.workflow_id == f"{parent}:c:2" and isinstance(r.body, ev.WaitStarted)
            for r in rs))
        response = await client.post(f"/v1/workflows/{parent}/cancel", json={"reason": "stop"})
        assert response.status_code == 202, response.text
        for wid in (parent, f"{parent}:c:2"):
            status = await wait_status(stack, wid, timeout_s=60)
            assert status["status"] == "cancelled", (wid, status)
        cancels = await _cancels_of(stack, f"{parent}:c:1", 1)
        assert cancels and all(c.parent_id == parent for c in cancels)  # attempt 1's
        await _left_alone(stack, client, f"{parent}:c:1", before, parent)
