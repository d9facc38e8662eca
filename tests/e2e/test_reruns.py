"""Reruns and resets on the real broker (``POST /v1/workflows/{id}/rerun`` and
``/reset``): a failed map run again with its input fixed reuses the items that succeeded
(their tasks are not dispatched again: the task code leaves a mark per run), a reset runs
a node and what follows it again, and the runs are linked both ways."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from stackkit import Stack, history
from test_kafka_submission import wait_status
from typer.testing import CliRunner

from headwater import errors
from headwater.client import Client
from headwater.core import events as ev
from ops.cli.app import app

TEXTS = ["a b", "c", 5, "d e f", "g", "h i"]
"""A map's items: item 2 is not a string, so its task raises."""


def _spec() -> dict[str, Any]:
    return {"name": "words", "nodes": [
        {"id": "split", "kind": "map", "task": "e2e.words", "over": "${input.texts}",
         "retry": {"max_attempts": 1},
         "input": {"text": "${item}", "marks": "${input.marks}", "index": "${index}"}},
        {"id": "total", "task": "e2e.digest", "needs": ["split"],
         "input": {"value": "${nodes.split.output}"}}]}


def _marks(path: Path) -> Counter[int]:
    return Counter(int(line) for line in path.read_text().split())


async def _types(stack: Stack, workflow_id: str) -> list[Any]:
    return [r.body for r in sorted(await history(stack, workflow_id), key=lambda r: r.seq)]


async def test_a_failed_map_rerun_with_a_fixed_input_reuses_what_succeeded(
        stack: Stack, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    source = f"words-{uuid.uuid4().hex[:8]}"
    with Client(stack.gateway) as hw:
        hw.submit(_spec(), id=source, input={"texts": TEXTS, "marks": str(marks)})
        failed = await wait_status(stack, source)
        assert failed["status"] == "failed", failed
        assert _marks(marks) == Counter(range(6))  # every item ran once
        with_ = {"texts": [*TEXTS[:2], "five six", *TEXTS[3:]], "marks": str(marks)}
        answer = await asyncio.to_thread(hw.rerun, source, input=with_)
        assert answer.created and answer.status == "accepted"
        again = await wait_status(stack, answer.id)
        assert again["status"] == "succeeded", again
        # Only the failed item ran again: the others' outputs came from the source.
        assert _marks(marks) == Counter({0: 1, 1: 1, 2: 2, 3: 1, 4: 1, 5: 1})
        assert again["rerun_of"] == source and again["reset"] is None
        assert again["reused"] == {"nodes": [], "items": {"split": 5}}
        assert (await wait_status(stack, source))["reruns"] == [answer.id]
        bodies = await _types(stack, answer.id)
        assert sorted(b.index for b in bodies if isinstance(b, ev.TaskReused)) == [0, 1, 3, 4, 5]
        assert [(b.node, b.index) for b in bodies if isinstance(b, ev.TaskDispatched)] == [
            ("split", 2), ("total", None)]
        accepted = bodies[0]
        assert isinstance(accepted, ev.WorkflowAccepted) and accepted.rerun["of"] == source
        # The same id again is the same run; a run that has not ended is no source.
        assert not (await asyncio.to_thread(hw.rerun, source, input=with_, id=answer.id)).created
        try:
            await asyncio.to_thread(hw.rerun, answer.id)
            raise AssertionError("a rerun of a run that succeeded was accepted")
        except errors.Conflict as e:
            assert "succeeded" in str(e)

        # A reset to the fan-in: the map is reused whole, only 'total' runs again.
        result = await asyncio.to_thread(
            CliRunner().invoke, app, ["rerun", answer.id, "--from", "total", "--gateway",
                                      stack.gateway])
        assert result.exit_code == 0, result.output
        reset_id = result.output.split()[1]
        reset = await wait_status(stack, reset_id)
        assert reset["status"] == "succeeded", reset
        assert reset["output"] == again["output"] and reset["reset"] == "total"
        assert _marks(marks)[2] == 2  # no item ran a third time
        bodies = await _types(stack, reset_id)
        assert [b.node for b in bodies if isinstance(b, ev.NodeReused)] == ["split"]
        assert [b.node for b in bodies if isinstance(b, ev.TaskDispatched)] == ["total"]


async def test_a_reset_to_a_node_the_run_lacks_and_a_running_source_are_refused(
        stack: Stack) -> None:
    running = f"sleepy-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        spec = {"name": "sleepy", "nodes": [
            {"id": "s", "task": "e2e.sleep", "input": {"seconds": 30}}]}
        response = await client.post("/v1/workflows", json={"id": running, "workflow": spec})
        assert response.status_code == 202, response.text
        await wait_status(stack, running, until=("running",))
        response = await client.post(f"/v1/workflows/{running}/rerun", json={})
        assert response.status_code == 409, response.text
        assert "has not ended" in response.json()["detail"]
        await client.post(f"/v1/workflows/{running}/cancel", json={})
        await wait_status(stack, running)
        response = await client.post(f"/v1/workflows/{running}/reset", json={"node": "nope"})
        assert response.status_code == 422, response.text
        assert "nope" in response.json()["detail"]
        response = await client.post("/v1/workflows/no-such-run/rerun", json={})
        assert response.status_code == 404
