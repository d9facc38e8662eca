"""Submitting straight to Kafka, without the gateway, with a plain aiokafka producer."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml
from stackkit import Stack, history, produce, submit_to_kafka

from headwater.core import events as ev
from tests.polling import wait_until_async

SPEC = yaml.safe_load((Path(__file__).resolve().parents[2] / "examples" / "stdlib_search"
                       / "workflow.yaml").read_text())
SMALL_INPUT = {"query": "json encoder", "top_k": 3, "limit": 12}
TERMINAL = ("succeeded", "failed", "cancelled")


async def wait_status(stack: Stack, workflow_id: str, timeout_s: float = 60,
                      until: tuple[str, ...] = TERMINAL,
                      headers: dict[str, str] | None = None) -> dict[str, object]:
    """Poll the gateway until the workflow's status is one of ``until`` (terminal by
    default); return its document (``headers``: sent with each request, e.g. a token).

    Raises:
        WaitTimeout: not so within ``timeout_s`` (scaled, see ``tests/polling.py``).
    """
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=10, headers=headers) as client:
        async def status() -> dict[str, Any]:
            response = await client.get(f"/v1/workflows/{workflow_id}")
            if response.status_code != 200:
                return {"http_status": response.status_code, "body": response.text[:500]}
            return dict(response.json())

        return await wait_until_async(status, timeout_s, f"{workflow_id} {'/'.join(until)}",
                                      until=lambda doc: doc.get("status") in until,
                                      interval_s=0.2)


async def test_avro_submission_produced_to_kafka_succeeds(stack: Stack) -> None:
    workflow_id = f"kafka-{uuid.uuid4().hex[:8]}"
    record = ev.WorkflowSubmitted(workflow_id, SPEC, SMALL_INPUT, int(time.time() * 1000))
    await submit_to_kafka(stack, record)
    status = await wait_status(stack, workflow_id)
    assert status["status"] == "succeeded", status
    output = status["output"]
    assert isinstance(output, dict) and output["stats"]["modules"] == 12
    seqs = sorted(r.seq for r in await history(stack, workflow_id))
    assert seqs == list(range(1, len(seqs) + 1))


async def test_json_submission_with_content_type_header_succeeds(stack: Stack) -> None:
    workflow_id = f"json-{uuid.uuid4().hex[:8]}"
    doc = {"workflow_id": workflow_id, "spec": SPEC, "input": SMALL_INPUT,
           "at_ms": int(time.time() * 1000)}
    await produce([(stack.topics.submissions, workflow_id.encode(), orjson.dumps(doc))],
                  headers=[("content-type", b"application/json")])
    status = await wait_status(stack, workflow_id)
    assert status["status"] == "succeeded", status
