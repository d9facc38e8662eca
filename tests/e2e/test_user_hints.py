"""What a new user's mistakes get on the real stack: the closest names for a misspelt
node (a spec's 422), a task no worker serves (the 400 of admission, from the workers'
announcements on Kafka) and a definition (404, over HTTP and from ``headwater run``,
which says nothing of retrying); and an inline spec whose ``${input...}`` the input
cannot resolve refused at submit (422, nothing claimed), while the same spec with an
input that resolves runs to the end."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
from stackkit import Stack
from test_kafka_submission import wait_status
from typer.testing import CliRunner

from ops.cli.app import app
from tests.polling import wait_until_async


def sleeper(name: str, seconds: Any, **node: Any) -> dict[str, Any]:
    return {"name": name, "nodes": [{"id": "nap", "task": "e2e.sleep",
                                     "input": {"seconds": seconds}, **node}]}


async def test_misspelt_names_get_the_closest_ones(stack: Stack) -> None:
    name = f"hints-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        spec = {"name": name, "nodes": [{"id": "count", "task": "e2e.sleep"},
                                        {"id": "b", "task": "e2e.sleep", "needs": ["cuont"]}]}
        invalid = await client.post("/v1/workflows", json={"workflow": spec})
        assert invalid.status_code == 422, invalid.text
        assert invalid.json()["errors"] == [
            "node 'b': needs unknown node 'cuont' (did you mean 'count'?)"]

        async def unserved() -> httpx.Response:  # 202 until the gateway trusts its registry
            return await client.post("/v1/workflows", json={
                "workflow": sleeper(name, 0, task="e2e.slep"), "input": None})
        refused = await wait_until_async(unserved, 60, "a 400 for a misspelt task",
                                         until=lambda r: r.status_code == 400)
        doc = refused.json()
        assert doc["type"] == "urn:headwater:problem:no-worker"
        assert doc["did_you_mean"][0] == "e2e.sleep", doc
        assert "no worker serves it anywhere (did you mean 'e2e.sleep'" in doc["detail"]

        put = await client.put(f"/v1/definitions/{name}", json=sleeper(name, 0))
        assert put.status_code == 201, put.text
        typo = name[:-2] + "yz"  # the last two characters replaced (swapped, "00" stayed)
        for method, url in (("GET", f"/v1/definitions/{typo}"), ("POST", f"/v1/run/{typo}")):
            missing = await client.request(method, url)
            assert missing.status_code == 404, missing.text
            assert missing.json()["did_you_mean"] == [name], missing.json()
            assert missing.json()["detail"] == f"no definition {typo} (did you mean '{name}'?)"

    result = await asyncio.to_thread(CliRunner().invoke, app, [
        "run", typo, "--gateway", stack.gateway], env={"COLUMNS": "300"})
    assert result.exit_code == 1, result.output
    assert result.stdout == (f"error: no definition {typo} (did you mean '{name}'?); nothing "
                             "was started (`headwater definitions list` lists the registered "
                             "ones)\n")
    assert "retrying" not in result.output


async def test_an_input_the_spec_cannot_resolve_is_refused_at_submit(stack: Stack) -> None:
    name = f"refs-{uuid.uuid4().hex[:8]}"
    spec = {"name": name, "nodes": [
        {"id": "nap", "task": "e2e.sleep", "input": {"seconds": "${input.delay}"}},
        {"id": "each", "kind": "map", "task": "e2e.sleep", "over": "${input.items}",
         "input": {"seconds": "${item}"}}],
        "output": {"slept": "${nodes.each.output}"}}
    refused_id, run_id = f"{name}-refused", f"{name}-ok"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        refused = await client.post("/v1/workflows", json={
            "id": refused_id, "workflow": spec, "input": {"dealy": 0, "items": {"a": 0}}})
        assert refused.status_code == 422, refused.text
        doc = refused.json()
        assert doc["type"] == "urn:headwater:problem:input-unresolved"
        assert doc["errors"] == [
            "node 'nap': input: ${input.delay}: the input has no key 'delay' (did you mean "
            "'dealy'?); it has dealy, items",
            "node 'each': over: ${input.items}: input.items is an object, not a list to "
            "fan out over"]
        assert (await client.get(f"/v1/workflows/{refused_id}")).status_code == 404

        accepted = await client.post("/v1/workflows", json={
            "id": run_id, "workflow": spec, "input": {"delay": 0, "items": [0, 0.01]}})
        assert accepted.status_code == 202, accepted.text
    done = await wait_status(stack, run_id)
    assert done["status"] == "succeeded" and done["output"] == {"slept": [0, 0.01]}, done
