"""Definitions and schedules scoped by tenant on the real stack: a gateway with auth on
(``HEADWATER_AUTH=on``, a keys file of tenants A and B and of every tenant) beside the
stack's (auth off), on the same Kafka and PostgreSQL. Tenant A's definition is unknown
to B (404 to read and to submit by name, 409 to register the same name); a shared one
runs for both, each run its submitter's; A's schedule is unknown to B, its name taken,
and the runs it starts are A's."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from stackkit import Stack
from test_shutdown import python

from ops import localstack
from ops.sandbox import free_port
from services.common.auth.tokens import bearer, new_key
from tests.polling import scaled, wait_until

SPEC: dict[str, Any] = {"name": "tenant-run", "nodes": [
    {"id": "a", "task": "e2e.sleep", "input": {"seconds": 0.05}}], "output": "${nodes.a.output}"}
WHO = ("A", "B", "*")


@pytest.fixture(scope="module")
def authed(stack: Stack, tmp_path_factory: pytest.TempPathFactory,
           ) -> Iterator[dict[str, httpx.Client]]:
    """Clients of an auth-on gateway by who they are (``A``, ``B``: admin tokens of those
    tenants; ``*``: an admin token of every tenant), and ``off``: the stack's gateway."""
    keys = {who: new_key(who, "admin") for who in WHO}
    path: Path = tmp_path_factory.mktemp("auth") / "keys"
    path.write_text("".join(line + "\n" for _, line in keys.values()))
    port = free_port()
    gateway = localstack.Service("gateway-auth", python("services.gateway"))
    pid = stack.start(gateway, {"HEADWATER_GATEWAY_PORT": str(port), "HEADWATER_AUTH": "on",
                                "HEADWATER_AUTH_KEYS_FILE": str(path),
                                "HEADWATER_TOKEN": keys["*"][0]})
    url = f"http://127.0.0.1:{port}"
    clients = {who: httpx.Client(base_url=url, timeout=30,
                                 headers={"Authorization": bearer(keys[who][0])})
               for who in WHO}
    clients["off"] = httpx.Client(base_url=stack.gateway, timeout=30)
    try:
        localstack.wait_ready(f"{url}/ready", scaled(60), [pid])
        yield clients
    finally:
        for client in clients.values():
            client.close()
        stack.stop(gateway)
        stack.services.remove(gateway)


def _name(what: str) -> str:
    return f"{what}-{uuid.uuid4().hex[:8]}"


def _ended(client: httpx.Client, workflow_id: str) -> dict[str, Any]:
    doc: dict[str, Any] = wait_until(
        lambda: client.get(f"/v1/workflows/{workflow_id}").json(), 60, f"{workflow_id} ended",
        until=lambda d: d.get("status") in ("succeeded", "failed", "cancelled"))
    return doc


async def _tenants(dsn: str, name: str) -> tuple[Any, ...]:
    conn = await asyncpg.connect(dsn)
    try:
        head = await conn.fetchval("select tenant from definition_heads where name = $1", name)
        versions = await conn.fetch("select tenant from definitions where name = $1", name)
        return head, *(r["tenant"] for r in versions)
    finally:
        await conn.close()


def test_a_tenants_definition_is_invisible_to_another(stack: Stack,
                                                      authed: dict[str, httpx.Client]) -> None:
    a, b = authed["A"], authed["B"]
    mine = _name("tenant-a")
    assert a.put(f"/v1/definitions/{mine}", json={"workflow": SPEC}).status_code == 201
    assert asyncio.run(_tenants(stack.dsn, mine)) == ("A", "A")
    hidden = b.get(f"/v1/definitions/{mine}")
    assert (hidden.status_code, hidden.json()["detail"]) == (404, f"no definition {mine}")
    assert b.get(f"/v1/definitions/{mine}?version=1").status_code == 404
    assert mine not in {d["name"] for d in b.get("/v1/definitions?limit=500").json()["items"]}
    submitted = b.post("/v1/workflows", json={"definition": mine})
    assert (submitted.status_code, submitted.json()["detail"]) == (404, f"no definition {mine}")
    taken = b.put(f"/v1/definitions/{mine}", json={"workflow": SPEC})
    assert taken.status_code == 409 and "taken" in taken.json()["detail"], taken.text
    assert b.delete(f"/v1/definitions/{mine}").status_code == 404
    run = a.post("/v1/workflows", json={"definition": mine})
    assert run.status_code == 202, run.text
    done = _ended(a, run.json()["id"])
    assert (done["status"], done["tenant"], done["output"]) == ("succeeded", "A", 0.05)
    assert b.get(f"/v1/workflows/{run.json()['id']}").status_code == 404
    assert authed["off"].get(f"/v1/definitions/{mine}").status_code == 200  # auth off: all


def test_a_shared_definition_runs_for_every_tenant(stack: Stack,
                                                   authed: dict[str, httpx.Client]) -> None:
    shared = _name("tenant-shared")
    assert authed["*"].put(f"/v1/definitions/{shared}",
                           json={"workflow": SPEC}).status_code == 201
    assert asyncio.run(_tenants(stack.dsn, shared)) == (None, None)
    for who in ("A", "B"):
        client = authed[who]
        assert client.get(f"/v1/definitions/{shared}").status_code == 200
        forbidden = client.put(f"/v1/definitions/{shared}", json={"workflow": SPEC})
        assert forbidden.status_code == 403, forbidden.text
        assert "token for every tenant" in forbidden.json()["detail"]
        run = client.post("/v1/workflows", json={"definition": shared})
        assert run.status_code == 202, run.text
        done = _ended(client, run.json()["id"])
        assert (done["status"], done["tenant"]) == ("succeeded", who)


def test_a_tenants_schedule_is_invisible_to_another_and_its_runs_are_its_own(
        authed: dict[str, httpx.Client]) -> None:
    a, b = authed["A"], authed["B"]
    mine, shared, schedule = _name("tenant-a"), _name("tenant-shared"), _name("tenant-sched")
    assert a.put(f"/v1/definitions/{mine}", json={"workflow": SPEC}).status_code == 201
    assert authed["*"].put(f"/v1/definitions/{shared}",
                           json={"workflow": SPEC}).status_code == 201
    body = {"cron": "* * * * * */2", "definition": mine}
    refused = b.put(f"/v1/schedules/{_name('tenant-sched')}", json=body)
    assert refused.status_code == 422, refused.text
    # Unknown to B; a "did you mean" may follow, naming only what B sees (the shared
    # definition's name is as random as this one's, and can come close enough).
    [error] = refused.json()["errors"]
    assert error.startswith(f"definition: no definition {mine}"), error
    assert error.count(mine) == 1 and error.removeprefix(
        f"definition: no definition {mine}") in ("", f" (did you mean '{shared}'?)"), error
    put = a.put(f"/v1/schedules/{schedule}", json=body)
    assert put.status_code == 201, put.text
    try:
        for method, path in (("GET", ""), ("DELETE", ""), ("POST", "/pause")):
            assert b.request(method, f"/v1/schedules/{schedule}{path}").status_code == 404
        taken = b.put(f"/v1/schedules/{schedule}", json={**body, "definition": shared})
        assert taken.status_code == 409, taken.text
        doc = wait_until(lambda: a.get(f"/v1/schedules/{schedule}").json(), 60,
                         "the schedule's first run", until=lambda d: d.get("runs"))
        run = _ended(a, doc["runs"][-1]["workflow_id"])
        assert (run["status"], run["tenant"]) == ("succeeded", "A")  # the schedule's tenant
        assert b.get(f"/v1/workflows/{run['id']}").status_code == 404
        listed = {who: {s["name"] for s in authed[who].get("/v1/schedules?limit=500").json()[
            "items"]} for who in ("A", "B", "*")}
        assert schedule in listed["A"] and schedule in listed["*"]
        assert schedule not in listed["B"]
    finally:
        assert a.delete(f"/v1/schedules/{schedule}").status_code == 204
