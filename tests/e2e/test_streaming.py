"""Generator tasks on the real stack: each chunk reaches the gateway's SSE stream as a
``TaskOutputStreamed`` event while the task still runs, in order, and the output is the
list of chunks. The task holds its second chunk until the first has reached the test
(a gate file), so that "while it still runs" does not depend on how busy the machine is."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse
from stackkit import Stack

WORDS = ["the", "log", "is", "the", "headwater"]
PAUSE_S = 0.4


@pytest.mark.parametrize("task", ["e2e.stream", "e2e.astream"])
async def test_chunks_stream_over_sse_before_the_workflow_ends(stack: Stack, task: str,
                                                              tmp_path: Path) -> None:
    gate = tmp_path / "first-chunk-seen"
    spec = {"name": "stream", "nodes": [
        {"id": "s", "task": task, "input": {"words": WORDS, "pause": PAUSE_S,
                                            "gate": str(gate)}}]}
    workflow_id = f"stream-{uuid.uuid4().hex[:8]}"
    seen: list[tuple[float, str, dict[str, Any]]] = []
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec})
        assert response.status_code == 202, response.text
        async with aconnect_sse(client, "GET", f"/v1/workflows/{workflow_id}/events",
                                timeout=httpx.Timeout(60)) as source:
            async for sse in source.aiter_sse():
                if sse.data:
                    seen.append((time.monotonic(), sse.event, json.loads(sse.data)))
                    if sse.event == "TaskOutputStreamed":
                        gate.touch()  # the task goes on only once a chunk got here
        status = (await client.get(f"/v1/workflows/{workflow_id}")).json()

    types = [t for _, t, _ in seen]
    assert types[-1] == "WorkflowSucceeded", types
    chunks = [(at, d) for at, t, d in seen if t == "TaskOutputStreamed"]
    assert [d["chunk_seq"] for _, d in chunks] == list(range(len(WORDS)))
    assert [d["chunk"] for _, d in chunks] == WORDS
    assert types.index("TaskOutputStreamed") > types.index("TaskStarted")
    last_chunk = max(i for i, t in enumerate(types) if t == "TaskOutputStreamed")
    assert last_chunk < types.index("TaskSucceeded")
    # Streamed live, not delivered with the result: the first chunk came well before
    # the end (four more pauses of 0.4 s were still to come, after the gate).
    ended_at = seen[-1][0]
    assert ended_at - chunks[0][0] > 3 * PAUSE_S, [round(ended_at - at, 2) for at, _ in chunks]
    assert status["status"] == "succeeded"
    assert status["output"] == {"s": WORDS}
