"""Labels and search on the real broker and PostgreSQL (the session's stack): runs
submitted with labels (inline, and of a definition whose spec gives labels, overridden
by key by the run's ``?label=``) are projected with them and found by
``GET /v1/workflows?label=k:v`` (all of several, a key with any value), combined with
``status``; a run's document shows its labels; a bad label is a 422 naming it."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
from stackkit import Stack

from tests.polling import wait_until_async

WAITING: dict[str, Any] = {"name": "labelled", "nodes": [
    {"id": "hold", "kind": "wait", "signal": "go", "timeout": 3600}]}


async def _ids(client: httpx.AsyncClient, *params: tuple[str, str]) -> set[str]:
    response = await client.get("/v1/workflows", params=[*params, ("limit", "500")])
    assert response.status_code == 200, response.text
    return {item["id"] for item in response.json()["items"]}


def test_runs_are_found_by_their_labels(stack: Stack) -> None:
    asyncio.run(_found_by_labels(stack))


async def _found_by_labels(stack: Stack) -> None:
    team = f"t{uuid.uuid4().hex[:8]}"  # labels of this test's runs alone
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        ids: dict[str, set[str]] = {"prod": set(), "dev": set()}
        for i in range(5):
            env = "prod" if i < 3 else "dev"
            wid = f"{team}-{i}"
            response = await client.post("/v1/workflows", json={
                "id": wid, "workflow": WAITING, "labels": {"team": team, "env": env}})
            assert response.status_code == 202, response.text
            ids[env].add(wid)
        name = f"labelled-{team}"
        put = await client.put(f"/v1/definitions/{name}", json={"workflow": {
            **WAITING, "labels": {"team": team, "env": "prod", "owner": "ana"}}})
        assert put.status_code in (200, 201), put.text
        ran = await client.post(f"/v1/run/{name}", params=[("label", "env:dev"),
                                                            ("id", f"{team}-def")],
                                headers={"Prefer": "respond-async"})
        assert ran.status_code == 202, ran.text
        ids["dev"].add(f"{team}-def")
        everyone = ids["prod"] | ids["dev"]

        async def projected() -> set[str]:
            return await _ids(client, ("label", f"team:{team}"), ("status", "running"))
        await wait_until_async(projected, 60, "the labelled runs projected as running",
                               until=lambda found: found == everyone)
        assert await _ids(client, ("label", f"team:{team}"), ("label", "env:prod")) == ids[
            "prod"]
        assert await _ids(client, ("label", f"team:{team}"), ("label", "env:dev")) == ids["dev"]
        assert await _ids(client, ("label", f"team:{team}"), ("label", "owner")) == {
            f"{team}-def"}
        assert await _ids(client, ("label", f"team:{team}"), ("status", "failed")) == set()
        assert await _ids(client, ("label", f"team:{team}x")) == set()

        doc = (await client.get(f"/v1/workflows/{team}-def")).json()
        assert doc["labels"] == {"team": team, "env": "dev", "owner": "ana"}
        listed = (await client.get("/v1/workflows", params={"label": f"team:{team}",
                                                            "limit": 1})).json()
        assert listed["items"][0]["labels"]["team"] == team and listed["next_cursor"]

        bad = await client.post("/v1/workflows", json={"workflow": WAITING,
                                                       "labels": {"team": "a b"}})
        assert bad.status_code == 422, bad.text
        assert bad.json()["errors"] == [
            "labels: team: value 'a b' must be a string of 0 to 128 of A-Z a-z 0-9 . _ - : @ /"]
        for wid in everyone:  # leave nothing waiting an hour in the session's stack
            await client.post(f"/v1/workflows/{wid}/cancel", json={"reason": "test over"})
