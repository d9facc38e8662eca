"""The new node kinds across crashes, on the real broker: a sleep survives a coordinator
SIGKILL and fires once; a parent whose coordinator dies right after starting a child
starts exactly one; cancelling a parent cancels its child and grandchild (waiting on a
signal) with no dispatch after the cancel; a 5-step loop is followed live over SSE."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
from httpx_sse import aconnect_sse
from stackkit import Stack, history, read_topic
from test_kafka_submission import wait_status

from headwater import codec
from headwater.core import events as ev
from headwater.core.ids import child_id
from ops import localstack
from ops.sandbox import home_kept, set_home
from tests.polling import scaled, wait_until_async

DIGEST = "e2e.digest"
TOOL_S = 0.4
"""Seconds each tool call of the loop test takes."""


def _coordinator(stack: Stack) -> localstack.Service:
    return next(s for s in stack.services if s.name == "coordinator")


def _kill(service: localstack.Service) -> None:
    """SIGKILL one of the stack's own processes by its pid, and wait for its end."""
    pid = int(service.pid_file.read_text())
    os.kill(pid, signal.SIGKILL)
    while localstack.alive(pid):
        time.sleep(0.05)


@contextlib.contextmanager
def _at(stack: Stack) -> Iterator[None]:
    """Inside: localstack finds ``stack``'s pid files (a module's own stack keeps them in
    its home, not the session's)."""
    with home_kept():
        set_home(str(stack.home))
        yield


async def _submit(client: httpx.AsyncClient, workflow_id: str, spec: dict[str, Any],
                  workflow_input: Any = None) -> None:
    response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec,
                                                         "input": workflow_input or {}})
    assert response.status_code == 202, response.text


async def _recorded(stack: Stack, workflow_id: str, body: type, timeout_s: float = 60,
                    ) -> list[ev.HistoryEvent]:
    """The workflow's history once it holds a ``body`` event."""
    def has(records: list[Any]) -> bool:
        return any(isinstance(r.body, body) for r in records
                   if r.workflow_id == workflow_id)
    records = await read_topic(stack.topics.events, has, timeout_s)
    return sorted((r for r in records if r.workflow_id == workflow_id), key=lambda r: r.seq)


async def test_a_sleep_across_a_coordinator_kill_fires_once(own: Stack) -> None:
    spec = {"name": "nap", "nodes": [
        {"id": "a", "task": DIGEST, "input": {"value": 1}},
        {"id": "nap", "kind": "sleep", "duration": 3, "needs": ["a"]},
        {"id": "b", "task": DIGEST, "input": {"value": 2}, "needs": ["nap"]}]}
    wid = f"nap-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=own.gateway, timeout=30) as client:
        await _submit(client, wid, spec)
        before = await _recorded(own, wid, ev.SleepStarted)
    coordinator = _coordinator(own)
    with _at(own):
        _kill(coordinator)
        own.start(coordinator)
    status = await wait_status(own, wid, timeout_s=120)
    assert status["status"] == "succeeded", status

    records = _by_seq(await history(own, wid))
    slept = [r.body for r in records if isinstance(r.body, ev.SleepStarted)]
    fired = [r.body for r in records if isinstance(r.body, ev.TimerFired)]
    nap_end = [r.body for r in records
               if isinstance(r.body, ev.NodeFinished) and r.body.node == "nap"]
    assert len(slept) == 1 and len(fired) == 1 and len(nap_end) == 1, records
    assert fired[0].timer_id == "sleep:nap"
    assert nap_end[0].status == "succeeded"
    assert nap_end[0].at_ms - slept[0].at_ms >= 3000
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    assert any(isinstance(r.body, ev.SleepStarted) for r in before)


async def test_a_parent_killed_after_starting_its_child_starts_exactly_one(own: Stack) -> None:
    coordinator = _coordinator(own)
    with _at(own):
        own.stop(coordinator)
        # Dies right after publishing its first batch (the parent's submission, whose
        # root node starts the child), before committing: the restart does it again.
        own.start(coordinator, {"HEADWATER_FAULTS": "coordinator.after_publish=1"})
        pid = int(coordinator.pid_file.read_text())
    child_spec = {"name": "kid", "nodes": [
        {"id": "x", "task": DIGEST, "input": {"value": "${input.v}"}}],
        "output": "${nodes.x.output}"}
    spec = {"name": "parent", "nodes": [
        {"id": "kid", "kind": "workflow", "workflow": child_spec, "input": {"v": 7}}],
        "output": "${nodes.kid.output}"}
    wid = f"parent-{uuid.uuid4().hex[:8]}"
    kid = child_id(wid, "kid", None, 1)
    async with httpx.AsyncClient(base_url=own.gateway, timeout=30) as client:
        await _submit(client, wid, spec)
    await wait_until_async(lambda: not localstack.alive(pid), 60, "the coordinator's death")
    with _at(own):
        own.start(coordinator, {"HEADWATER_FAULTS": ""})
    status = await wait_status(own, wid, timeout_s=120)
    assert status["status"] == "succeeded", status

    def two_submissions(records: list[Any]) -> bool:
        return sum(1 for r in records if r.workflow_id == kid) >= 2
    submitted = await read_topic(own.topics.submissions, two_submissions, 60)
    assert sum(1 for r in submitted if r.workflow_id == kid) >= 2  # the redo sent it again
    # The redo publishes the dead batch's records again: readers dedupe by seq.
    kid_history = _by_seq(await history(own, kid))
    accepted = [r for r in kid_history if isinstance(r.body, ev.WorkflowAccepted)]
    dispatched = [r for r in kid_history if isinstance(r.body, ev.TaskDispatched)]
    assert len(accepted) == 1 and len(dispatched) == 1, kid_history
    parent_history = _by_seq(await history(own, wid))
    assert sum(1 for r in parent_history if isinstance(r.body, ev.TaskDispatched)) == 1
    child_doc = (await _get(own, kid))
    assert child_doc["status"] == "succeeded"
    assert status["output"] == child_doc["output"]


def _by_seq(records: list[ev.HistoryEvent]) -> list[ev.HistoryEvent]:
    """One record per seq (the same body each time: the audit checks that), in order."""
    by_seq: dict[int, ev.HistoryEvent] = {}
    for r in records:
        assert by_seq.setdefault(r.seq, r) == r, (r, by_seq[r.seq])
    return [by_seq[k] for k in sorted(by_seq)]


async def _get(stack: Stack, workflow_id: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.get(f"/v1/workflows/{workflow_id}")
        assert response.status_code == 200, response.text
        return dict(response.json())


async def test_cancelling_a_parent_cancels_child_and_grandchild(stack: Stack) -> None:
    grandchild = {"name": "grandchild", "nodes": [
        {"id": "hold", "kind": "wait", "signal": "release"}]}
    child = {"name": "child", "nodes": [
        {"id": "g", "kind": "workflow", "workflow": grandchild}]}
    parent = {"name": "parent", "nodes": [
        {"id": "c", "kind": "workflow", "workflow": child}]}
    wid = f"cascade-{uuid.uuid4().hex[:8]}"
    cid = child_id(wid, "c", None, 1)
    gid = child_id(cid, "g", None, 1)
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await _submit(client, wid, parent)
        await _recorded(stack, gid, ev.WaitStarted)
        response = await client.post(f"/v1/workflows/{wid}/cancel", json={"reason": "stop"})
        assert response.status_code == 202, response.text
        cancelled_at = time.time() * 1000
    for workflow_id in (wid, cid, gid):
        status = await wait_status(stack, workflow_id, timeout_s=60)
        assert status["status"] == "cancelled", (workflow_id, status)
        records = await history(stack, workflow_id)
        late = [r for r in records if isinstance(r.body, ev.TaskDispatched)
                and r.body.at_ms > cancelled_at]
        assert not late, (workflow_id, late)
    child_doc = await _get(stack, cid)
    assert child_doc.get("parent", {}).get("workflow_id") == wid, child_doc


async def test_a_five_step_loop_is_followed_live_over_sse(stack: Stack) -> None:
    steps = 5
    spec = {"name": "agent", "nodes": [
        {"id": "agent", "kind": "loop", "decide": "e2e.decide", "max_steps": steps + 1,
         "tools": [{"name": "digest", "task": DIGEST}],
         "input": {"seed": "s", "steps": steps, "tool": "digest", "seconds": TOOL_S}}],
        "output": "${nodes.agent.output}"}
    wid = f"loop-{uuid.uuid4().hex[:8]}"
    seen: list[tuple[float, str, dict[str, Any]]] = []
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await _submit(client, wid, spec)
        async with aconnect_sse(client, "GET", f"/v1/workflows/{wid}/events",
                                timeout=httpx.Timeout(scaled(120))) as source:
            async for sse in source.aiter_sse():
                if sse.data:
                    seen.append((time.monotonic(), sse.event, json.loads(sse.data)))
    types = [t for _, t, _ in seen]
    assert types[-1] == "WorkflowSucceeded", types
    decided = [d for _, t, d in seen if t == "LoopStepDecided"]
    assert [d["step"] for d in decided] == list(range(steps + 1)), decided
    assert [d["finish"] for d in decided] == [False] * steps + [True]
    # Live: each step reached the stream as it was decided, not with the result (five
    # tools of TOOL_S each were still to run after the first).
    first_step = next(at for at, t, _ in seen if t == "LoopStepDecided")
    assert seen[-1][0] - first_step > (steps - 1) * TOOL_S, [
        (round(at - first_step, 2), t) for at, t, _ in seen]
    status = await _get(stack, wid)
    assert status["output"]["steps"] == steps
    assert codec.RECORD_TYPES["LoopStepDecided"] is ev.LoopStepDecided
