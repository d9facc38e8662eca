"""Inputs that used to break the gateway, against the real PostgreSQL and Kafka.

Before the fix: U+0000 and integers beyond 64 bits were a bare 500 (and the keep-alive
connection was dropped after it), NaN and 1e400 were stored as null, NUL in the path
or query and forged cursors were a 500, ``Last-Event-ID: ²`` was a 500, and a claim
whose record was never produced (the gateway died in between) never started.
"""

from __future__ import annotations

import base64
import http.client
import json
import uuid
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import orjson
import pytest
from httpx_sse import aconnect_sse
from stackkit import Stack
from test_kafka_submission import wait_status

from services.gateway.runs.submit import body_hash

SPEC: dict[str, Any] = {"name": "faults", "nodes": [
    {"id": "a", "task": "e2e.flaky", "input": {"succeed_on": 1, "value": "${input.v}"}}]}
SPEC_JSON = json.dumps(SPEC)


def with_spec(spec_json: str, rest: str = "") -> str:
    """A submission body from raw JSON text (to send what ``json.dumps`` would not)."""
    return '{"workflow": ' + spec_json + rest + "}"


BAD_BODIES = [
    (with_spec(SPEC_JSON, ', "input": {"v": {"b": [0, 1, 2, "x\\u0000"]}}'),
     "input.v.b[3]: contains U+0000"),
    (with_spec(SPEC_JSON, ', "input": {"a\\u0000": 1}'),
     'input["a\\u0000"]: the key contains U+0000'),
    (with_spec(SPEC_JSON.replace('"faults"', '"fa\\u0000ults"')),
     "workflow.name: contains U+0000"),
    (with_spec(SPEC_JSON.replace('"e2e.flaky"', '"e2e.fl\\u0000aky"')),
     "workflow.nodes[0].task: contains U+0000"),
    (with_spec(SPEC_JSON, ', "tenant": "t\\u0000"'), "tenant: contains U+0000"),
    (with_spec(SPEC_JSON, ', "input": {"v": 123456789012345678901234567890}'),
     "input.v: integer outside the signed 64-bit range"),
    (with_spec(SPEC_JSON.replace('"succeed_on": 1', '"succeed_on": 99999999999999999999')),
     "workflow.nodes[0].input.succeed_on: integer outside the signed 64-bit range"),
    (with_spec(SPEC_JSON, ', "input": {"v": NaN}'),
     "input.v: not a finite number (NaN or infinity)"),
    (with_spec(SPEC_JSON, ', "input": {"v": [Infinity]}'),
     "input.v[0]: not a finite number (NaN or infinity)"),
    (with_spec(SPEC_JSON, ', "input": {"v": 1e400}'),
     "input.v: not a finite number (NaN or infinity)"),
]


def test_bad_values_are_422_on_a_connection_that_stays_open(stack: Stack) -> None:
    url = urlsplit(stack.gateway)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    try:
        conn.connect()
        sock = conn.sock
        for body, fault in BAD_BODIES:
            conn.request("POST", "/v1/workflows", body=body.encode(),
                         headers={"content-type": "application/json"})
            response = conn.getresponse()
            doc = json.loads(response.read())
            assert response.status == 422, (fault, doc)
            assert response.getheader("content-type") == "application/problem+json"
            assert doc["detail"] == fault
            assert response.getheader("connection") != "close"
        conn.request("GET", "/health")
        assert conn.getresponse().status == 200
        assert conn.sock is sock, "one keep-alive connection throughout"
    finally:
        conn.close()


def cursor_of(doc: object) -> str:
    """A cursor encoding ``doc`` (the gateway's encoding, forged)."""
    return base64.urlsafe_b64encode(orjson.dumps(doc)).decode()


@pytest.mark.parametrize(("url", "title"), [
    ("/v1/workflows/a%00b", "Bad request"),
    ("/v1/workflows/a%00b/events", "Bad request"),
    ("/v1/workflows?name=a%00", "Bad request"),
    ("/v1/workflows?tenant=a%00", "Bad request"),
    ("/v1/workflows?cursor=" + cursor_of(["2024-01-01T00:00:00+00:00", "a\x00b"]), "Bad cursor"),
    ("/v1/workflows?cursor=" + cursor_of(["0001-01-01T00:00:00+23:59", "x"]), "Bad cursor"),
    ("/v1/workflows?cursor=" + cursor_of(["9999-12-31T23:59:59-23:59", "x"]), "Bad cursor"),
])
async def test_nul_and_forged_cursors_are_400(stack: Stack, url: str, title: str) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.get(url)
        assert response.status_code == 400, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["title"] == title


async def test_last_event_id_must_be_a_seq_number(stack: Stack) -> None:
    workflow_id = f"leid-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={
            "id": workflow_id, "workflow": SPEC, "input": {"v": 1}})
        assert response.status_code == 202, response.text
        assert (await wait_status(stack, workflow_id))["status"] == "succeeded"
        events = f"/v1/workflows/{workflow_id}/events"
        for bad in ("²".encode("latin-1"), b"99999999999999999999", b"-1"):
            response = await client.get(events, headers={"Last-Event-ID": bad})
            assert response.status_code == 400, (bad, response.text)
            assert response.headers["content-type"] == "application/problem+json"
        async with aconnect_sse(client, "GET", events,
                                headers={"Last-Event-ID": "1"}) as source:
            seqs = [int(sse.id) async for sse in source.aiter_sse() if sse.data]
        assert seqs and seqs[0] == 2, seqs


async def test_a_retry_heals_a_claim_whose_record_was_never_produced(stack: Stack) -> None:
    # What a gateway killed between claiming the id and producing leaves behind.
    workflow_id = f"orphan-{uuid.uuid4().hex[:8]}"
    workflow_input = {"v": "healed"}
    conn = await asyncpg.connect(stack.dsn)
    try:
        await conn.execute(
            "insert into workflows (workflow_id, name, tenant, status, seq, spec, input,"
            " body_hash, created_at, updated_at) values ($1, $2, null, 'accepted', 0,"
            " $3::jsonb, $4::jsonb, $5, now(), now())",
            workflow_id, SPEC["name"], json.dumps(SPEC), json.dumps(workflow_input),
            body_hash(SPEC, workflow_input, None))
    finally:
        await conn.close()
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={
            "id": workflow_id, "workflow": SPEC, "input": workflow_input})
        assert response.status_code == 200, response.text
    status = await wait_status(stack, workflow_id, timeout_s=60)
    assert status["status"] == "succeeded", status
    assert status["output"] == {"a": {"attempt": 1, "value": "healed"}}
