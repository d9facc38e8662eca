"""Payloads by reference at the gateway, on the real Kafka and PostgreSQL with auth on:
a 20 MB input and a 5 MB signal go by reference (their records stay small), the run's
document links each blob, ``GET .../blobs/{digest}`` streams it exactly to the run's
tenant (404 to another, 400 for a malformed digest), the client's ``result()`` puts the
value back, and projection retention followed by the collection deletes a purged run's
rows and then its blobs, keeping a blob another live run still refers to.

The tasks here take the small parts of the input (or pass a reference on), so these
runs do not need workers that resolve references; once workers resolve them the same
runs give the same answers (a passed reference's task returns the value, which is
stored again under the same digest)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import authkit
import httpx
import orjson
import pytest
from breakkit import wait_run
from stackkit import private_stack, read_topic

from headwater import blobs
from headwater.client import Client
from ops.sandbox import Sandbox
from services.common.blobs.collect import collect_once
from services.projector.retention import purge_once

KEYS = {"service": ("*", "submit"), "acme": ("acme", "submit"),
        "globex": ("globex", "submit")}
MB = 1024 * 1024
ECHO = "e2e.flaky"
"""Returns ``{"attempt", "value"}``: the value it was given, here a reference passed on."""


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    return authkit.write_keys(tmp_path_factory.mktemp("keys"), KEYS)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, services: None,
          tokens: tuple[dict[str, str], Path]) -> Iterator[Sandbox]:
    with private_stack(tmp_path_factory.mktemp("blobs"), 1,
                       authkit.secured_env(*tokens)) as sandbox:
        yield sandbox


@pytest.fixture
def http(stack: Sandbox,
         tokens: tuple[dict[str, str], Path]) -> Iterator[dict[str, httpx.Client]]:
    clients = authkit.clients(stack.gateway, tokens[0], timeout=120)
    yield clients
    for client in clients.values():
        client.close()


def echo_spec() -> dict[str, Any]:
    """One task given the input's small part and its large one (passed on)."""
    return {"name": "blobs", "nodes": [{"id": "t", "task": ECHO, "retry": {"max_attempts": 1},
                                        "input": {"succeed_on": 1, "value": {
                                            "small": "${input.small}",
                                            "doc": "${input.doc}"}}}],
            "output": "${nodes.t.output.value}"}


def submit(client: httpx.Client, workflow_input: Any, spec: dict[str, Any] | None = None) -> str:
    workflow_id = f"blob-{uuid.uuid4().hex[:10]}"
    body = orjson.dumps({"id": workflow_id, "workflow": spec or echo_spec(),
                         "input": workflow_input})
    response = client.post("/v1/workflows", content=body,
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 202, response.text[:500]
    return workflow_id


def test_a_20_mb_input_goes_by_reference_and_streams_back_to_its_tenant_only(
        stack: Sandbox, http: dict[str, httpx.Client],
        tokens: tuple[dict[str, str], Path]) -> None:
    doc = "x" * (20 * MB)
    workflow_id = submit(http["acme"], {"small": "hello", "doc": doc})
    run = wait_run(http["acme"], workflow_id, 120)
    assert run["status"] == "succeeded", run
    data = orjson.dumps(doc)
    digest = blobs.digest_of(data)
    href = f"/v1/workflows/{workflow_id}/blobs/{digest}"
    assert run["input"] == {"small": "hello",
                            "doc": {"$blob": digest, "bytes": len(data), "href": href}}

    records = asyncio.run(read_topic(stack.topics.submissions, lambda rs: any(
        r.key == workflow_id.encode() for r in rs), decode=False))
    mine = [r for r in records if r.key == workflow_id.encode()]
    assert len(mine) == 1 and len(mine[0].value) < 4096, len(mine[0].value)

    with http["acme"].stream("GET", href) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.headers["content-length"] == str(len(data))
        chunks = list(response.iter_bytes())
    assert b"".join(chunks) == data

    other = http["globex"].get(href)
    assert other.status_code == 404
    assert other.headers["content-type"] == "application/problem+json"
    assert http["globex"].get(f"/v1/workflows/{workflow_id}").status_code == 404
    bad = http["acme"].get(f"/v1/workflows/{workflow_id}/blobs/sha256:12ab")
    assert bad.status_code == 400 and bad.json()["title"] == "Bad digest"
    unknown = http["acme"].get(f"/v1/workflows/{workflow_id}/blobs/sha256:{'0' * 64}")
    assert unknown.status_code == 404

    # the client puts the value back: the output holds the reference passed on
    token = tokens[0]["acme"]
    with Client(stack.gateway, token, timeout=120) as client:
        assert client.result(workflow_id) == {"small": "hello", "doc": doc}
        assert client.get(workflow_id).input == {"small": "hello", "doc": doc}
    with Client(stack.gateway, token, timeout=120, resolve_blobs=False) as client:
        assert client.result(workflow_id)["doc"]["$blob"] == digest


def test_another_tenants_reference_is_not_taken_in_an_input(
        http: dict[str, httpx.Client]) -> None:
    doc = "s" * MB
    workflow_id = submit(http["acme"], {"small": "a", "doc": doc})
    data = orjson.dumps(doc)
    ref = blobs.make_ref(blobs.digest_of(data), len(data))
    refused = http["globex"].post("/v1/workflows", json={
        "id": f"blob-{uuid.uuid4().hex[:10]}", "workflow": echo_spec(),
        "input": {"small": "b", "doc": ref}})
    assert refused.status_code == 422, refused.text
    assert "reference" in refused.json()["detail"]
    passed = submit(http["acme"], {"small": "c", "doc": ref})  # its own: taken
    assert wait_run(http["acme"], passed, 120)["status"] == "succeeded"
    assert wait_run(http["acme"], workflow_id, 120)["status"] == "succeeded"


def test_a_5_mb_signal_goes_by_reference(stack: Sandbox, http: dict[str, httpx.Client]) -> None:
    spec = {"name": "upload", "nodes": [{"id": "w", "kind": "wait", "signal": "upload",
                                         "fields": {"doc": "any", "tag": "string"}}],
            "output": "${nodes.w.output}"}
    workflow_id = submit(http["acme"], {}, spec)
    wait_run(http["acme"], workflow_id, 60, until=("running",))
    doc = "p" * (5 * MB)
    sent = http["acme"].post(f"/v1/workflows/{workflow_id}/signals/upload",
                             content=orjson.dumps({"fields": {"doc": doc, "tag": "t"}}),
                             headers={"Content-Type": "application/json"})
    assert sent.status_code == 202, sent.text[:500]
    run = wait_run(http["acme"], workflow_id, 120)
    assert run["status"] == "succeeded", run
    data = orjson.dumps(doc)
    digest = blobs.digest_of(data)
    assert run["output"]["tag"] == "t"
    assert run["output"]["doc"] == {"$blob": digest, "bytes": len(data),
                                    "href": f"/v1/workflows/{workflow_id}/blobs/{digest}"}
    records = asyncio.run(read_topic(stack.topics.control, lambda rs: any(
        r.key == workflow_id.encode() for r in rs), decode=False))
    assert all(len(r.value) < 4096 for r in records if r.key == workflow_id.encode())
    assert http["acme"].get(run["output"]["doc"]["href"]).content == data


async def _age(dsn: str, workflow_id: str, column: str = "workflow_id") -> None:
    """Make the runs whose ``column`` is ``workflow_id`` look an hour old."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("update workflows set updated_at = now() - interval '1 hour'"
                           f" where {column} = $1", workflow_id)
    finally:
        await conn.close()


async def _retention(dsn: str) -> tuple[int, int]:
    conn = await asyncpg.connect(dsn)
    try:
        purged = await purge_once(conn, 600)
        collected, _ = await collect_once(conn, 0)
        return purged, collected
    finally:
        await conn.close()


async def _stored(dsn: str, *digests: str) -> dict[str, bool]:
    conn = await asyncpg.connect(dsn)
    try:
        found = {r["digest"] for r in await conn.fetch(
            "select digest from blobs where digest = any($1::text[])", list(digests))}
        chunks = {r["digest"] for r in await conn.fetch(
            "select distinct digest from blob_chunks where digest = any($1::text[])",
            list(digests))}
        assert found == chunks
        return {d: d in found for d in digests}
    finally:
        await conn.close()


def test_retention_deletes_a_purged_runs_rows_then_its_blobs_but_not_shared_ones(
        stack: Sandbox, http: dict[str, httpx.Client]) -> None:
    own, shared = "o" * (2 * MB), "h" * (2 * MB)
    gone = submit(http["acme"], {"small": "a", "doc": own, "shared": shared})
    live = submit(http["acme"], {"small": "b", "doc": shared})
    for workflow_id in (gone, live):
        assert wait_run(http["acme"], workflow_id, 120)["status"] == "succeeded"
    own_digest = blobs.digest_of(orjson.dumps(own))
    shared_digest = blobs.digest_of(orjson.dumps(shared))
    asyncio.run(_age(stack.dsn, gone))
    purged, collected = asyncio.run(_retention(stack.dsn))
    assert purged >= 1 and collected >= 1
    assert http["acme"].get(f"/v1/workflows/{gone}").status_code == 404
    assert asyncio.run(_stored(stack.dsn, own_digest, shared_digest)) == {
        own_digest: False, shared_digest: True}
    kept = http["acme"].get(f"/v1/workflows/{live}/blobs/{shared_digest}")
    assert kept.status_code == 200 and kept.content == orjson.dumps(shared)


def test_a_reference_in_a_spec_is_refused(http: dict[str, httpx.Client]) -> None:
    """A spec's literal values are not checked as an input's are: a reference to another
    tenant's blob there would hand its JSON to this tenant's task, which echoes it."""
    secret = "acme's own " * 100_000
    workflow_id = submit(http["acme"], {"small": "a", "doc": secret})
    assert wait_run(http["acme"], workflow_id, 120)["status"] == "succeeded"
    data = orjson.dumps(secret)
    ref = blobs.make_ref(blobs.digest_of(data), len(data))
    spec = {"name": "steal", "nodes": [{"id": "t", "task": ECHO, "input": {
        "succeed_on": 1, "value": ref}}], "output": "${nodes.t.output.value}"}
    refused = http["globex"].post("/v1/workflows", json={
        "id": f"blob-{uuid.uuid4().hex[:10]}", "workflow": spec, "input": {}})
    assert refused.status_code == 422, refused.text[:300]
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["errors"][0].startswith("workflow.nodes[0].input.value: a reference")


async def _refs(dsn: str, workflow_id: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("select digest from blob_refs where workflow_id = $1",
                                workflow_id)
        return [str(r["digest"]) for r in rows]
    finally:
        await conn.close()


def test_a_rerun_keeps_the_blobs_of_the_outputs_it_reuses(
        stack: Sandbox, http: dict[str, httpx.Client]) -> None:
    """A rerun reuses its source's large output by reference: once the source is purged
    and collected, the rerun's result still reads it."""
    size = 300_000 + uuid.uuid4().int % 100_000  # a blob of this test's alone
    spec = {"name": "reused", "nodes": [
        {"id": "m", "task": "e2e.big_output", "input": {"size": size}},
        {"id": "f", "task": ECHO, "needs": ["m"], "retry": {"max_attempts": 1},
         "input": {"succeed_on": "${input.ok}"}}],
        "output": {"m": "${nodes.m.output}", "f": "${nodes.f.output.attempt}"}}
    source = submit(http["acme"], {"ok": 2}, spec)
    assert wait_run(http["acme"], source, 120)["status"] == "failed"
    started = http["acme"].post(f"/v1/workflows/{source}/rerun", json={"input": {"ok": 1}})
    assert started.status_code == 202, started.text[:300]
    rerun = started.json()["id"]
    run = wait_run(http["acme"], rerun, 120)
    assert run["status"] == "succeeded", run
    digest = run["output"]["m"]["$blob"]
    assert asyncio.run(_refs(stack.dsn, rerun)) == [digest]
    asyncio.run(_age(stack.dsn, source))
    asyncio.run(_retention(stack.dsn))
    assert http["acme"].get(f"/v1/workflows/{source}").status_code == 404
    kept = http["acme"].get(run["output"]["m"]["href"])
    assert kept.status_code == 200 and kept.content == orjson.dumps("x" * size)


def test_an_id_given_back_after_kafka_refused_its_record_keeps_no_blob_reference(
        stack: Sandbox, http: dict[str, httpx.Client]) -> None:
    """A submission whose record Kafka refuses (a spec over the record limit) gives its
    id back; the blob its input stored must not stay noted as the id's, or whoever
    claims the id next (another tenant) reads it through that run."""
    workflow_id = f"blob-{uuid.uuid4().hex[:10]}"
    secret = "acme's other " * 100_000
    spec = echo_spec()
    spec["nodes"][0]["input"]["pad"] = "p" * (17 * MB)
    refused = http["acme"].post("/v1/workflows", content=orjson.dumps(
        {"id": workflow_id, "workflow": spec, "input": {"small": "a", "doc": secret}}),
        headers={"Content-Type": "application/json"})
    assert refused.status_code == 413, refused.text[:300]
    assert asyncio.run(_refs(stack.dsn, workflow_id)) == []
    taken = http["globex"].post("/v1/workflows", json={
        "id": workflow_id, "workflow": echo_spec(), "input": {"small": "b", "doc": 1}})
    assert taken.status_code == 202, taken.text[:300]
    digest = blobs.digest_of(orjson.dumps(secret))
    read = http["globex"].get(f"/v1/workflows/{workflow_id}/blobs/{digest}")
    assert read.status_code == 404


def test_a_parent_keeps_its_childs_large_output_after_the_child_is_purged(
        stack: Sandbox, http: dict[str, httpx.Client]) -> None:
    """The child stored its output's blob under its own id; the parent holds the
    reference in its rows (the projector notes it as the parent's), so purging the
    ended child while the parent waits must not collect the blob the parent uses next."""
    size = 300_000 + uuid.uuid4().int % 100_000
    name = f"leaf-{uuid.uuid4().hex[:8]}"
    child = {"name": name, "nodes": [{"id": "x", "task": "e2e.big_output",
                                      "input": {"size": size}}],
             "output": "${nodes.x.output}"}
    spec = {"name": "holder", "nodes": [
        {"id": "c", "kind": "workflow", "workflow": child, "input": {}},
        {"id": "w", "kind": "wait", "signal": "go", "needs": ["c"]},
        {"id": "d", "task": "e2e.digest", "needs": ["w"],
         "input": {"value": "${nodes.c.output}"}}],
        "output": {"c": "${nodes.c.output}", "d": "${nodes.d.output}"}}
    parent = submit(http["acme"], {}, spec)
    assert asyncio.run(_wait_named_ended(stack.dsn, name)), "the child did not end"
    asyncio.run(_age(stack.dsn, name, "name"))
    purged, _ = asyncio.run(_retention(stack.dsn))
    assert purged >= 1
    sent = http["acme"].post(f"/v1/workflows/{parent}/signals/go", json={"fields": {}})
    assert sent.status_code == 202, sent.text[:300]
    run = wait_run(http["acme"], parent, 120)
    assert run["status"] == "succeeded", run
    kept = http["acme"].get(run["output"]["c"]["href"])
    assert kept.status_code == 200 and kept.content == orjson.dumps("x" * size)


async def _wait_named_ended(dsn: str, name: str, timeout_s: float = 120) -> bool:
    conn = await asyncpg.connect(dsn)
    try:
        for _ in range(int(timeout_s * 4)):
            if await conn.fetchval("select count(*) from workflows where name = $1 and "
                                   "status = 'succeeded'", name):
                return True
            await asyncio.sleep(0.25)
        return False
    finally:
        await conn.close()
