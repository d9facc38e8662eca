"""The main job over HTTP: submit the stdlib-search example, follow it over SSE."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import yaml
from httpx_sse import aconnect_sse
from stackkit import Stack, history

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "stdlib_search"


async def test_example_runs_over_http_and_sse(stack: Stack) -> None:
    body = {"workflow": yaml.safe_load((EXAMPLE / "workflow.yaml").read_text()),
            "input": json.loads((EXAMPLE / "input.json").read_text())}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json=body)
        assert response.status_code == 202, response.text
        workflow_id = response.json()["id"]
        assert response.headers["location"] == f"/v1/workflows/{workflow_id}"
        # A just-accepted id is never 404.
        assert (await client.get(f"/v1/workflows/{workflow_id}")).status_code == 200

        seen: list[tuple[int, str, dict[str, Any]]] = []
        async with aconnect_sse(client, "GET", f"/v1/workflows/{workflow_id}/events",
                                timeout=httpx.Timeout(120)) as source:
            assert source.response.headers["content-type"].startswith("text/event-stream")
            async for sse in source.aiter_sse():
                if sse.data:  # heartbeats are comments: no data
                    seen.append((int(sse.id), sse.event, json.loads(sse.data)))
        # The stream closed by itself after the terminal event.
        assert seen[-1][1] == "WorkflowSucceeded", seen[-1]
        assert [s for s, _, _ in seen] == list(range(1, len(seen) + 1))

        output = seen[-1][2]["output"]
        hit_modules = [h["module"] for h in output["hits"]]
        assert {"argparse", "getopt"} & set(hit_modules[:3]), hit_modules
        assert output["stats"]["modules"] > 100
        status = (await client.get(f"/v1/workflows/{workflow_id}")).json()
        assert status["status"] == "succeeded"
        assert status["output"] == output
        extract = next(n for n in status["nodes"] if n["id"] == "extract")
        assert extract["total"] == output["stats"]["modules"] == extract["succeeded"]

        # Reconnecting with Last-Event-ID resumes after that event.
        tail: list[int] = []
        async with aconnect_sse(client, "GET", f"/v1/workflows/{workflow_id}/events",
                                headers={"Last-Event-ID": str(len(seen) - 3)}) as source:
            tail = [int(sse.id) async for sse in source.aiter_sse() if sse.data]
        assert tail == [len(seen) - 2, len(seen) - 1, len(seen)]

    records = await history(stack, workflow_id)
    seqs = [r.seq for r in records]
    assert sorted(seqs) == list(range(1, len(seen) + 1)), "seq 1..n on the events topic"
    assert len(seqs) == len(set(seqs)), "no duplicate in a fault-free run"
    assert [r.type for r in sorted(records, key=lambda r: r.seq)] == [t for _, t, _ in seen]

    conn = await asyncpg.connect(stack.dsn)
    try:
        row = await conn.fetchrow("select status, seq from workflows where workflow_id = $1",
                                  workflow_id)
    finally:
        await conn.close()
    assert (row["status"], row["seq"]) == ("succeeded", len(seen))


async def test_invalid_spec_gets_problem_json(stack: Stack) -> None:
    spec = {"name": "bad", "nodes": [
        {"id": "a", "task": "t", "needs": ["c"]}, {"id": "b", "task": "t", "needs": ["a"]},
        {"id": "c", "task": "t", "needs": ["b"]}, {"id": "d", "task": "t", "needs": ["nope"]},
        {"id": "d", "task": "t"}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={"workflow": spec})
        assert response.status_code == 422
        assert response.headers["content-type"] == "application/problem+json"
        errors = response.json()["errors"]
        assert any(e.startswith("cycle: ") for e in errors), errors
        assert any("unknown node 'nope'" in e for e in errors), errors
        assert any("duplicate node id 'd'" in e for e in errors), errors

        missing = await client.get("/v1/workflows/no-such-workflow")
        assert missing.status_code == 404
        assert missing.headers["content-type"] == "application/problem+json"

        # over HEADWATER_MAX_BODY_BYTES (4 MiB): a definition's body (a submission's may
        # reach HEADWATER_MAX_PAYLOAD_BYTES, its large values going by reference)
        big = await client.put("/v1/definitions/big", content=b"x" * (5 * 1024 * 1024))
        assert big.status_code == 413
        assert big.headers["content-type"] == "application/problem+json"
