"""A run records the definition it was resolved from, on the real Kafka and PostgreSQL:
submissions naming a definition produced straight to Kafka (Avro and JSON), and a child
of a resolved workflow node, show it in ``GET /v1/workflows/{id}``, and the listing
finds them by definition (``name`` or ``name@version``) and creation time, page by
page."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import orjson
from stackkit import Stack, produce, submit_to_kafka
from test_kafka_submission import wait_status

from headwater.core import events as ev

NAP = {"name": "nap", "nodes": [{"id": "z", "kind": "sleep", "duration": 0.05}]}


def _now_ms() -> int:
    return int(time.time() * 1000)


async def _list(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await client.get("/v1/workflows", params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_a_runs_definition_is_shown_and_listed(stack: Stack) -> None:
    tag = uuid.uuid4().hex[:8]
    name, kid = f"defpipe-{tag}", f"defkid-{tag}"
    first, second, inline, parent = (f"dp-{tag}-{n}" for n in ("1", "2", "i", "p"))
    await submit_to_kafka(stack, ev.WorkflowSubmitted(first, NAP, None, _now_ms(),
                                                      definition=name, definition_version=1))
    one = await wait_status(stack, first)
    assert one["status"] == "succeeded", one
    assert one["definition"] == {"name": name, "version": 1}
    doc = {"workflow_id": second, "spec": NAP, "at_ms": _now_ms(), "definition": name,
           "definition_version": 2}  # JSON on Kafka names it too
    await produce([(stack.topics.submissions, second.encode(), orjson.dumps(doc))],
                  headers=[("content-type", b"application/json")])
    node = {"id": "c", "kind": "workflow", "workflow": NAP, "definition": f"{kid}@5",
            "definition_version": 5}
    await submit_to_kafka(
        stack, ev.WorkflowSubmitted(inline, NAP, None, _now_ms()),
        ev.WorkflowSubmitted(parent, {"name": "p", "nodes": [node]}, None, _now_ms()))
    two = await wait_status(stack, second)
    assert two["definition"] == {"name": name, "version": 2}
    assert (await wait_status(stack, inline))["definition"] is None
    assert (await wait_status(stack, parent))["status"] == "succeeded"
    child = await wait_status(stack, f"{parent}:c:1")
    assert child["definition"] == {"name": kid, "version": 5}

    async with httpx.AsyncClient(base_url=stack.gateway, timeout=10) as client:
        listed = await _list(client, definition=name)
        assert [w["id"] for w in listed["items"]] == [second, first]  # newest first
        assert listed["items"][0]["definition"] == {"name": name, "version": 2}
        assert [w["id"] for w in (await _list(client, definition=f"{name}@1"))["items"]] == [
            first]
        page = await _list(client, definition=name, limit=1)
        assert [w["id"] for w in page["items"]] == [second] and page["next_cursor"]
        page = await _list(client, definition=name, limit=1, cursor=page["next_cursor"])
        assert [w["id"] for w in page["items"]] == [first] and page["next_cursor"] is None
        after = await _list(client, definition=name, created_after=one["created_at"])
        assert [w["id"] for w in after["items"]] == [second]
        before = await _list(client, definition=name, created_before=two["created_at"])
        assert [w["id"] for w in before["items"]] == [first]
        window = await _list(client, created_after=one["created_at"],
                             created_before=two["created_at"], limit=500)
        assert first not in {w["id"] for w in window["items"]}
        assert second not in {w["id"] for w in window["items"]}
        bad = await client.get("/v1/workflows", params={"created_after": "yesterday"})
        assert bad.status_code == 422, bad.text
        assert bad.headers["content-type"].startswith("application/problem+json")
        assert bad.json()["errors"][0].startswith("query.created_after: must be an RFC 3339")
