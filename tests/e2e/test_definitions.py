"""The definitions registry on the real stack: versions, runs by name that record their
version, input schemas, delete (no new runs; a running one finishes), the tables
rebuilt from the compacted topic after they are lost, the bound on definitions naming
definitions; and ``headwater definitions``."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import yaml
from click.testing import Result
from stackkit import Stack
from test_kafka_submission import wait_status
from test_shutdown import python
from typer.testing import CliRunner

from headwater.core.definitions import digest
from ops import localstack
from ops.cli.app import app
from ops.sandbox import free_port
from tests.polling import scaled

SCHEMA = {"type": "object", "required": ["s"], "properties": {"s": {"type": "number"}}}


def spec(name: str, nodes: int = 1) -> dict[str, Any]:
    return {"name": name, "nodes": [
        {"id": f"n{i}", "task": "e2e.sleep", "input": {"seconds": "${input.s}"},
         **({"needs": [f"n{i - 1}"]} if i else {})} for i in range(nodes)]}


async def put(client: httpx.AsyncClient, name: str, body: Any, status: int) -> dict[str, Any]:
    response = await client.put(f"/v1/definitions/{name}", json=body)
    assert response.status_code == status, response.text
    return dict(response.json())


async def run(client: httpx.AsyncClient, ref: str, s: float, status: int = 202,
              workflow_id: str | None = None) -> dict[str, Any]:
    body = {"definition": ref, "input": {"s": s}, **({"id": workflow_id} if workflow_id else {})}
    response = await client.post("/v1/workflows", json=body)
    assert response.status_code == status, response.text
    return dict(response.json())


async def test_versions_runs_by_name_input_schema_and_delete(stack: Stack) -> None:
    name = f"greet-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        v1 = await put(client, name, {"workflow": spec(name), "input_schema": SCHEMA}, 201)
        assert v1["version"] == 1 and v1["links"]["self"] == f"/v1/definitions/{name}?version=1"
        again = await put(client, name, {"input_schema": SCHEMA, "workflow": spec(name)}, 200)
        assert (again["version"], again["digest"]) == (1, v1["digest"])
        v2 = await put(client, name, {"workflow": spec(name, 2), "input_schema": SCHEMA}, 201)
        assert v2["version"] == 2

        first = await run(client, f"{name}@1", 0.1)
        second = await run(client, name, 0.1, workflow_id=f"{name}-second")
        await put(client, name, {"workflow": spec(name, 3), "input_schema": SCHEMA}, 201)
        retried = await run(client, name, 0.1, 200, workflow_id=f"{name}-second")  # v3 now
        assert retried["id"] == second["id"]
        for run_id, version, nodes in ((first["id"], 1, 1), (second["id"], 2, 2)):
            done = await wait_status(stack, run_id)
            assert done["status"] == "succeeded", done
            assert done["definition"] == {"name": name, "version": version}, done
            assert len(done["nodes"]) == nodes

        shown = (await client.get(f"/v1/definitions/{name}")).json()
        assert (shown["version"], shown["latest"], shown["deleted"]) == (3, 3, False)
        old = (await client.get(f"/v1/definitions/{name}", params={"version": 1})).json()
        assert old["workflow"] == spec(name) and old["input_schema"] == SCHEMA
        listed = (await client.get("/v1/definitions", params={"limit": 500})).json()["items"]
        assert {"name": name, "version": 3} in [
            {"name": i["name"], "version": i["version"]} for i in listed]

        response = await client.post("/v1/workflows", json={"definition": name,
                                                            "input": {"s": "slow"}})
        assert response.status_code == 422
        assert [e for e in response.json()["errors"] if e.startswith("input.s: ")], response.text
        bad = await put(client, f"{name}-bad", {"workflow": spec(name),
                                                 "input_schema": {"type": "nope"}}, 422)
        assert any(e.startswith("input_schema.type: ") for e in bad["errors"]), bad
        bad = await put(client, f"{name}-bad", {"name": "x", "nodes": [{"id": "a"}]}, 422)
        assert any("workflow: " in e and "task" in e for e in bad["errors"]), bad
        assert (await client.get(f"/v1/definitions/{name}-bad")).status_code == 404

        await delete_while_one_runs(stack, client, name)


async def delete_while_one_runs(stack: Stack, client: httpx.AsyncClient, name: str) -> None:
    """Delete the definition while a run of it sleeps: new runs get 410, the running one
    finishes, the versions stay readable, and a PUT makes the name live again."""
    running = await run(client, name, 2.0, workflow_id=f"{name}-running")
    await wait_status(stack, running["id"], until=("running",))
    assert (await client.delete(f"/v1/definitions/{name}")).status_code == 204
    assert (await client.delete(f"/v1/definitions/{name}")).status_code == 204  # again
    refused = await run(client, name, 0.1, 410)
    assert refused["title"] == "Definition deleted" and "no new runs" in refused["detail"]
    await run(client, f"{name}@1", 0.1, 410)
    same = await run(client, name, 2.0, 200, workflow_id=f"{name}-running")  # a retry
    assert same["id"] == running["id"]
    assert (await client.get(f"/v1/definitions/{name}")).status_code == 410
    kept = (await client.get(f"/v1/definitions/{name}", params={"version": 3})).json()
    assert kept["deleted"] is True and kept["version"] == 3
    listed = (await client.get("/v1/definitions", params={"limit": 500})).json()["items"]
    assert name not in [i["name"] for i in listed]
    done = await wait_status(stack, running["id"], timeout_s=scaled(60))
    assert done["status"] == "succeeded" and done["definition"]["version"] == 3, done
    v4 = await put(client, name, {"workflow": spec(name, 3), "input_schema": SCHEMA}, 201)
    assert v4["version"] == 4
    await run(client, name, 0.1)


async def test_tables_lost_are_rebuilt_from_the_topic_and_children_are_inlined(
        stack: Stack) -> None:
    name = f"child-{uuid.uuid4().hex[:8]}"
    parent = f"parent-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await put(client, name, spec(name), 201)  # a bare spec
        await put(client, name, {"workflow": spec(name, 2), "input_schema": SCHEMA}, 201)
        await put(client, parent, {"name": parent, "nodes": [
            {"id": "call", "kind": "workflow", "definition": f"{name}@1",
             "input": {"s": 0.1}}]}, 201)
        assert (await client.delete(f"/v1/definitions/{parent}")).status_code == 204
        selfish = await put(client, f"{name}-self", {"name": "s", "nodes": [
            {"id": "me", "kind": "workflow", "definition": f"{name}-self"}]}, 422)
        assert any("nodes.me: definition: " in e for e in selfish["errors"]), selfish
        racing = await asyncio.gather(*(client.put(f"/v1/definitions/{name}-race",
                                                   json=spec(name)) for _ in range(8)))
        assert sorted(r.status_code for r in racing) == [200] * 7 + [201]
        assert {r.json()["version"] for r in racing} == {1}
        conn = await asyncpg.connect(stack.dsn)
        try:
            # A gateway that died after claiming a version, before producing it:
            healed = f"{name}-healed"
            await conn.execute(
                "insert into definitions (name, version, spec, input_schema, digest, state,"
                " created_at) values ($1, 1, $2::text::jsonb, null, $3, 'claimed', now())",
                healed, json.dumps(spec(name)), digest(spec(name), None))
            await conn.execute("insert into definition_heads values ($1, 1, false,"
                               " 'claimed', now())", healed)
            again = await put(client, healed, spec(name), 200)  # produced, then decided
            assert again["version"] == 1
            states = await conn.fetch("select state from definitions where name = $1"
                                      " union all select state from definition_heads"
                                      " where name = $1", healed)
            assert [r["state"] for r in states] == ["stored", "stored"]
            await conn.execute("truncate definitions, definition_heads")
        finally:
            await conn.close()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    gateway = localstack.Service(f"gateway-{name}", python("services.gateway"))
    pid = stack.start(gateway, {"HEADWATER_GATEWAY_PORT": str(port)})
    try:
        await asyncio.to_thread(localstack.wait_ready, f"{url}/ready", scaled(60), [pid])
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            shown = (await client.get(f"/v1/definitions/{name}")).json()
            assert (shown["version"], shown["input_schema"]) == (2, SCHEMA), shown
            first = (await client.get(f"/v1/definitions/{name}",
                                      params={"version": 1})).json()
            assert first["workflow"] == spec(name) and first["input_schema"] is None
            assert (await client.get(f"/v1/definitions/{parent}")).status_code == 410
            assert (await client.get(f"/v1/definitions/{name}-healed")).status_code == 200
            revived = await put(client, parent, {"name": parent, "nodes": [
                {"id": "call", "kind": "workflow", "definition": f"{name}@1",
                 "input": {"s": 0.1}}]}, 201)
            assert revived["version"] == 2  # numbering goes on after the rebuild
            started = await run(client, parent, 0)
    finally:
        stack.stop(gateway)
        stack.services.remove(gateway)
    done = await wait_status(stack, started["id"], timeout_s=scaled(60))
    assert done["status"] == "succeeded", done
    assert done["definition"] == {"name": parent, "version": 2}
    (child,) = done["children"]
    child_doc = await wait_status(stack, child["workflow_id"])
    assert child_doc["definition"] == {"name": name, "version": 1}, child_doc


def fan(child: str | None) -> dict[str, Any]:
    """Ten nodes, each a run of definition ``child`` (None: a task)."""
    return {"name": "fan", "nodes": [
        {"id": f"n{i}", "kind": "workflow", "definition": child} if child else
        {"id": f"n{i}", "task": "e2e.sleep", "input": {"seconds": 0}} for i in range(10)]}


async def test_definitions_naming_definitions_are_inlined_within_a_bound(stack: Stack) -> None:
    """Ten children of ten children ... (a few hundred bytes a level) would inline to
    more than ``MAX_INLINED_NODES`` (10,000) nodes: the ``PUT`` and a submission naming
    it are 422 naming the limit, at once (inlining stops there), not a record Kafka
    refuses."""
    tag = uuid.uuid4().hex[:8]
    levels = [f"fan{depth}-{tag}" for depth in range(4)]  # fan0 holds fan1 ... fan3 tasks
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=60) as client:
        for depth in (3, 2, 1):
            child = levels[depth + 1] if depth < 3 else None
            await put(client, levels[depth], {"workflow": fan(child)}, 201)  # 1,110 nodes
        started = asyncio.get_running_loop().time()
        refused = await put(client, levels[0], fan(levels[1]), 422)  # 11,110 nodes
        assert any("over 10000 nodes (MAX_INLINED_NODES" in e for e in refused["errors"])
        submitted = await client.post("/v1/workflows", json={"workflow": fan(levels[1])})
        assert submitted.status_code == 422, submitted.text
        assert "MAX_INLINED_NODES" in submitted.json()["detail"]
        assert asyncio.get_running_loop().time() - started < scaled(10)


def test_the_cli_applies_lists_shows_and_deletes(stack: Stack, tmp_path: Path) -> None:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    file = tmp_path / "greet.yaml"
    file.write_text(yaml.safe_dump({"workflow": spec(name), "input_schema": SCHEMA}))
    runner = CliRunner()

    def cli(*args: str) -> Result:
        return runner.invoke(app, ["definitions", *args, "--gateway", stack.gateway],
                             env={"COLUMNS": "200"})

    first = cli("apply", str(file))
    assert first.exit_code == 0 and f"{name} version 1" in first.output, first.output
    assert f"{name} version 1" in cli("apply", str(file)).output  # the same body
    file.write_text(yaml.safe_dump(spec(name, 2)))  # a bare spec
    assert f"{name} version 2" in cli("apply", str(file)).output
    listed = cli("list", "--json")
    assert {"name": name, "version": 2} in [
        {"name": d["name"], "version": d["version"]} for d in json.loads(listed.output)]
    shown = cli("show", name, "--version", "1")
    assert shown.exit_code == 0 and "version 1 of 2 (live)" in shown.output, shown.output
    assert yaml.safe_load(shown.output.split("\n", 1)[1])["input_schema"] == SCHEMA
    assert cli("delete", name).exit_code == 0
    gone = cli("show", name)
    assert gone.exit_code == 2 and "410" in gone.output and "deleted" in gone.output
    missing = cli("show", f"{name}-none")
    assert missing.exit_code == 1 and "404" in missing.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"name": name, "nodes": [{"id": "a"}]}))
    refused = cli("apply", str(bad))
    assert refused.exit_code == 2 and "422" in refused.output and "task" in refused.output
