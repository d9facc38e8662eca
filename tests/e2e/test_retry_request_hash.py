"""Retries are recognised by the hash of the request as it came (``workflows.request_hash``,
written by the gateway's claim), on the real stack: a spec whose child names a
definition is the same run after that definition changed or was deleted; a claim that
lost its id to a submission straight on Kafka is not; and a database made before the
column existed gets it, once.

Before the fix a retry after the run was accepted was compared with the hash of the
body accepted, re-derived from the request: the caller's retry below was 409 after the
child's new version and 422 after its deletion.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import asyncpg
import httpx
from stackkit import Stack, submit_to_kafka
from test_kafka_submission import wait_status

from headwater.core import events as ev
from headwater.core.idempotency import body_hash
from services.common.db import init_connection
from services.common.schema import SCHEMA


def sleeper(name: str, nodes: int = 1) -> dict[str, Any]:
    return {"name": name, "nodes": [
        {"id": f"n{i}", "task": "e2e.sleep", "input": {"seconds": "${input.s}"}}
        for i in range(nodes)]}


async def row_of(stack: Stack, workflow_id: str) -> Any:
    conn = await asyncpg.connect(stack.dsn)
    try:
        await init_connection(conn)
        return await conn.fetchrow("select seq, body_hash, request_hash from workflows"
                                   " where workflow_id = $1", workflow_id)
    finally:
        await conn.close()


async def test_a_spec_naming_a_definition_is_the_same_run_after_it_changed(
        stack: Stack) -> None:
    child = f"child-{uuid.uuid4().hex[:8]}"
    caller = {"name": "caller", "nodes": [
        {"id": "c", "kind": "workflow", "definition": child, "input": {"s": 0.1}}]}
    body = {"id": f"caller-{uuid.uuid4().hex[:8]}", "workflow": caller, "input": {"k": 1}}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        put = await client.put(f"/v1/definitions/{child}", json={"workflow": sleeper(child)})
        assert put.status_code == 201, put.text
        first = await client.post("/v1/workflows", json=body)
        assert first.status_code == 202, first.text
        assert (await wait_status(stack, body["id"]))["status"] == "succeeded"
        row = await row_of(stack, body["id"])
        assert row["request_hash"] == body_hash(caller, {"k": 1}, None)
        assert row["body_hash"] != row["request_hash"]  # the projector's: of the child inlined

        put = await client.put(f"/v1/definitions/{child}",
                               json={"workflow": sleeper(child, 2)})
        assert put.status_code == 201, put.text
        again = await client.post("/v1/workflows", json=body)
        assert (again.status_code, again.json()["status"]) == (200, "succeeded"), again.text
        assert (await client.delete(f"/v1/definitions/{child}")).status_code == 204
        again = await client.post("/v1/workflows", json=body)
        assert again.status_code == 200, again.text
        other = await client.post("/v1/workflows", json={**body, "input": {"k": 2}})
        assert other.status_code == 409 and "different submission" in other.json()["detail"]
        fresh = await client.post("/v1/workflows", json={**body, "id": f"{body['id']}-new"})
        assert fresh.status_code == 422 and "deleted" in fresh.text, fresh.text


async def test_a_claim_that_lost_its_id_to_kafka_is_not_the_run(stack: Stack) -> None:
    """The gateway claimed the id for one body; a submission straight on Kafka of
    another body under that id was accepted first (the claim's own record, produced
    later, would go to the dead letters). The projector clears the claim's request
    hash."""
    workflow_id = f"lost-{uuid.uuid4().hex[:8]}"
    claimed, won = sleeper("claimed"), sleeper("won")
    digest = body_hash(claimed, {"s": 0.1}, None)
    conn = await asyncpg.connect(stack.dsn)
    try:
        await conn.execute(
            "insert into workflows (workflow_id, name, tenant, status, seq, spec, input,"
            " body_hash, request_hash, created_at, updated_at) values ($1, 'claimed', null,"
            " 'accepted', 0, $2::jsonb, $3::jsonb, $4, $4, now(), now())",
            workflow_id, json.dumps(claimed), json.dumps({"s": 0.1}), digest)
    finally:
        await conn.close()
    await submit_to_kafka(stack, ev.WorkflowSubmitted(workflow_id, won, {"s": 0.1},
                                                      int(time.time() * 1000)))
    assert (await wait_status(stack, workflow_id))["status"] == "succeeded"
    row = await row_of(stack, workflow_id)
    assert row["seq"] > 0 and row["request_hash"] is None
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        lost = await client.post("/v1/workflows", json={"id": workflow_id,
                                                        "workflow": claimed,
                                                        "input": {"s": 0.1}})
        assert lost.status_code == 409, lost.text
        same = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": won,
                                                        "input": {"s": 0.1}})
        assert same.status_code == 200, same.text


async def test_a_database_of_an_older_version_gets_the_column_once(stack: Stack) -> None:
    schema = f"older_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(stack.dsn)
    try:
        await conn.execute(f"create schema {schema}")
        await conn.execute(f"set search_path = {schema}")
        await conn.execute(SCHEMA)
        await conn.execute("alter table workflows drop column request_hash")  # as before
        await conn.execute(
            "insert into workflows (workflow_id, status, seq, body_hash, created_at,"
            " updated_at) values ('claim', 'accepted', 0, 'h1', now(), now()),"
            " ('run', 'running', 4, 'h2', now(), now())")
        await conn.execute(SCHEMA)
        rows = await conn.fetch("select workflow_id, request_hash from workflows")
        assert {r["workflow_id"]: r["request_hash"] for r in rows} == {
            "claim": "h1", "run": None}  # a claim held its request's hash in body_hash
        await conn.execute("update workflows set request_hash = 'kept'")
        await conn.execute(SCHEMA)  # again: nothing changes
        assert {r["request_hash"] for r in await conn.fetch(
            "select request_hash from workflows")} == {"kept"}
    finally:
        await conn.execute(f"drop schema if exists {schema} cascade")
        await conn.close()
