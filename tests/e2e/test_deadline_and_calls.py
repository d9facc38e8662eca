"""A run's deadline and ``ctx.call`` children on the real stack (the session's): a run
whose deadline passes while a task, a child workflow and a ``ctx.call`` child of a task
run fails with ``DeadlineExceeded`` in its document, its attempts and both children
cancelled; a caller's cancel reaches the run its task called, whose document names the
caller (``via: "call"``) while the caller's lists it among its children."""

from __future__ import annotations

import uuid
from typing import Any

from stackkit import Stack

from headwater.client import AsyncClient
from tests.polling import wait_until_async

SLEEPY: dict[str, Any] = {"name": "sleepy", "nodes": [
    {"id": "nap", "task": "e2e.sleep", "input": {"seconds": 60}}]}
TERMINAL = ("succeeded", "failed", "cancelled")


async def _doc(hw: AsyncClient, wid: str) -> dict[str, Any]:
    try:
        return (await hw.get(wid)).raw
    except Exception as e:  # not projected yet
        return {"status": None, "error": str(e)}


async def _ended(hw: AsyncClient, wid: str, what: str) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        return await _doc(hw, wid)
    return await wait_until_async(read, 60, what, until=lambda d: d["status"] in TERMINAL)


async def _called_child(hw: AsyncClient, parent: str, node: str) -> dict[str, Any]:
    """The ``ctx.call`` child of ``node`` once the caller's document lists it running."""
    async def read() -> dict[str, Any]:
        doc = await _doc(hw, parent)
        calls = [c for c in doc.get("children", []) if c["via"] == "call" and c["node"] == node]
        return calls[0] if calls else {}
    return await wait_until_async(read, 60, f"{parent}'s called child",
                                  until=lambda c: c.get("status") == "running")


async def test_a_deadline_fails_the_run_and_cancels_its_attempts_and_children(
        stack: Stack) -> None:
    sleepy = f"sleepy-{uuid.uuid4().hex[:8]}"
    async with AsyncClient(stack.gateway) as hw:
        await hw.definitions.put(sleepy, SLEEPY)
        spec = {"name": "bounded", "deadline": "6s", "nodes": [
            {"id": "slow", "task": "e2e.sleep", "input": {"seconds": 60}},
            {"id": "kid", "kind": "workflow", "workflow": SLEEPY},
            {"id": "caller", "task": "e2e.call_one", "input": {"definition": sleepy}}]}
        wid = (await hw.submit(spec)).id
        called = await _called_child(hw, wid, "caller")
        doc = await _ended(hw, wid, "the run past its deadline")
        assert doc["status"] == "failed", doc
        assert doc["error"].startswith("DeadlineExceeded: the run's deadline "), doc["error"]
        assert doc["deadline"] is not None and doc["deadline"][:4] == doc["created_at"][:4]
        tasks = {t["node"]: t for t in doc["tasks"]}
        assert {tasks[n]["status"] for n in ("slow", "kid", "caller")} == {"cancelled"}
        kid = await _ended(hw, f"{wid}:kid:1", "the child workflow")
        call = await _ended(hw, called["workflow_id"], "the ctx.call child")
    assert kid["status"] == "cancelled" and kid["parent"]["via"] == "workflow"
    assert call["status"] == "cancelled", call
    assert "DeadlineExceeded" in call["error"], call["error"]
    assert (call["parent"]["workflow_id"], call["parent"]["node"], call["parent"]["via"]) == (
        wid, "caller", "call")


async def test_a_callers_cancel_reaches_the_run_its_task_called(stack: Stack) -> None:
    sleepy = f"sleepy-{uuid.uuid4().hex[:8]}"
    async with AsyncClient(stack.gateway) as hw:
        await hw.definitions.put(sleepy, SLEEPY)
        wid = (await hw.submit({"name": "caller", "nodes": [
            {"id": "ask", "task": "e2e.call_one", "input": {"definition": sleepy}}]})).id
        called = await _called_child(hw, wid, "ask")
        assert called["workflow_id"] == f"{wid}:ask:call.0"
        child = await _doc(hw, called["workflow_id"])
        assert child["parent"] == {"workflow_id": wid, "node": "ask", "index": None,
                                   "attempt": 1, "via": "call",
                                   "links": child["parent"]["links"]}
        await hw.cancel(wid, "operator")
        parent = await _ended(hw, wid, "the cancelled caller")
        child = await _ended(hw, called["workflow_id"], "the called run")
    assert parent["status"] == "cancelled"
    assert child["status"] == "cancelled", child
    assert child["error"] == f"parent {wid} cancelled: operator"
