"""Bulk operations on the real broker and PostgreSQL (the session's stack): 200 waiting
runs labelled ``team=<t>`` and 5 labelled otherwise; a dry run of a bulk cancel by the
label counts 200 and shows a sample; the cancel, recorded as one operation, ends all
200 (its counts say so, each run's history names the operation) and leaves the other 5
running; the same id again answers the same operation; a bulk signal then ends the 5
(the signal's id the same for every send). A bulk rerun of 3 cancelled runs starts 3
reruns that carry the labels; a bulk cancel by the label then cancels the reruns and
skips their sources. A bulk pause of 3 runs by label marks each paused by the
operation, and a bulk resume clears it."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
from stackkit import Stack

from tests.polling import wait_until_async

WAITING: dict[str, Any] = {"name": "bulk", "nodes": [
    {"id": "hold", "kind": "wait", "signal": "go", "timeout": 3600}]}


async def _ids(client: httpx.AsyncClient, *params: tuple[str, str]) -> set[str]:
    response = await client.get("/v1/workflows", params=[*params, ("limit", "500")])
    assert response.status_code == 200, response.text
    return {item["id"] for item in response.json()["items"]}


async def _operation(client: httpx.AsyncClient, operation_id: str) -> dict[str, Any]:
    async def state() -> dict[str, Any]:
        return dict((await client.get(f"/v1/operations/{operation_id}")).json())
    return await wait_until_async(state, 60, f"operation {operation_id} done",
                                  until=lambda doc: doc.get("state") == "done")


def test_a_bulk_cancel_by_label(stack: Stack) -> None:
    asyncio.run(_bulk_cancel(stack))


async def _bulk_cancel(stack: Stack) -> None:
    team = f"b{uuid.uuid4().hex[:8]}"
    gate = asyncio.Semaphore(16)
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        async def submit(wid: str, labels: dict[str, str]) -> None:
            async with gate:
                response = await client.post("/v1/workflows", json={
                    "id": wid, "workflow": WAITING, "labels": labels})
            assert response.status_code == 202, response.text

        targets = {f"{team}-{i}" for i in range(200)}
        others = {f"{team}-other-{i}" for i in range(5)}
        await asyncio.gather(*(submit(w, {"team": team}) for w in targets),
                             *(submit(w, {"team": f"{team}-x", "of": team}) for w in others))

        async def running() -> set[str]:
            return await _ids(client, ("label", f"of:{team}"), ("status", "running")) | (
                await _ids(client, ("label", f"team:{team}"), ("status", "running")))
        await wait_until_async(running, 90, "the 205 runs projected as running",
                               until=lambda found: found == targets | others)

        cancel = {"action": "cancel", "filter": {"label": [f"team:{team}"]},
                  "reason": "bulk test"}
        dry = await client.post("/v1/operations", json={**cancel, "dry_run": True})
        assert dry.status_code == 200, dry.text
        assert dry.json()["matched"] == 200 and len(dry.json()["sample"]) == 10
        assert (dry.json()["to_act_on"], dry.json()["by_status"]) == (200, {"running": 200})
        assert set(dry.json()["sample"]) <= targets
        assert await _ids(client, ("label", f"team:{team}"), ("status", "cancelled")) == set()

        started = await client.post("/v1/operations", json={**cancel, "id": f"op-{team}"})
        assert started.status_code == 202, started.text
        assert started.json()["matched"] == 200
        done = await _operation(client, f"op-{team}")
        assert done["counts"] == {"done": 200, "skipped": 0, "failed": 0}, done
        assert done["progress"] == 200 and done["reasons"] == []

        async def cancelled() -> set[str]:
            return await _ids(client, ("label", f"team:{team}"), ("status", "cancelled"))
        await wait_until_async(cancelled, 60, "the 200 runs cancelled",
                               until=lambda found: found == targets)
        one = (await client.get(f"/v1/workflows/{team}-7")).json()
        assert one["error"] == f"bulk operation op-{team}: bulk test"
        assert await _ids(client, ("label", f"of:{team}"), ("status", "running")) == others

        again = await client.post("/v1/operations", json={**cancel, "id": f"op-{team}"})
        assert again.status_code == 200 and again.json()["counts"]["done"] == 200
        other = await client.post("/v1/operations", json={
            **cancel, "id": f"op-{team}", "filter": {"label": [f"of:{team}"]}})
        assert other.status_code == 409, other.text

        signal = await client.post("/v1/operations", json={
            "action": "signal", "filter": {"label": [f"of:{team}"]},
            "signal": {"name": "go", "fields": {}}})
        assert signal.status_code == 202, signal.text
        signalled = await _operation(client, signal.json()["id"])
        assert signalled["counts"] == {"done": 5, "skipped": 0, "failed": 0}, signalled

        async def succeeded() -> set[str]:
            return await _ids(client, ("label", f"of:{team}"), ("status", "succeeded"))
        await wait_until_async(succeeded, 60, "the 5 others signalled to their end",
                               until=lambda found: found == others)


def test_a_bulk_rerun_keeps_the_labels_and_skips_what_is_running(stack: Stack) -> None:
    asyncio.run(_bulk_rerun(stack))


async def _bulk_rerun(stack: Stack) -> None:
    team = f"r{uuid.uuid4().hex[:8]}"
    sources = {f"{team}-{i}" for i in range(3)}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        for wid in sorted(sources):
            response = await client.post("/v1/workflows", json={
                "id": wid, "workflow": WAITING, "labels": {"rr": team}})
            assert response.status_code == 202, response.text

        async def running() -> set[str]:
            return await _ids(client, ("label", f"rr:{team}"), ("status", "running"))
        await wait_until_async(running, 60, "the 3 runs running",
                               until=lambda found: found == sources)
        cancel = await client.post("/v1/operations", json={
            "action": "cancel", "filter": {"label": [f"rr:{team}"]}})
        assert (await _operation(client, cancel.json()["id"]))["counts"]["done"] == 3

        async def cancelled() -> set[str]:
            return await _ids(client, ("label", f"rr:{team}"), ("status", "cancelled"))
        await wait_until_async(cancelled, 60, "the 3 cancelled",
                               until=lambda found: found == sources)
        rerun = await client.post("/v1/operations", json={
            "action": "rerun", "filter": {"label": [f"rr:{team}"]}})
        assert rerun.status_code == 202, rerun.text
        done = await _operation(client, rerun.json()["id"])
        assert done["counts"] == {"done": 3, "skipped": 0, "failed": 0}, done
        reruns = await wait_until_async(running, 60, "the 3 reruns running, labelled",
                                        until=lambda found: len(found) == 3)
        assert not reruns & sources
        for wid in reruns:
            doc = (await client.get(f"/v1/workflows/{wid}")).json()
            assert doc["rerun_of"] in sources and doc["labels"] == {"rr": team}

        tried = (await client.post("/v1/operations", json={
            "action": "cancel", "filter": {"label": [f"rr:{team}"]}, "dry_run": True})).json()
        assert (tried["matched"], tried["to_act_on"]) == (6, 3), tried  # 3 ended: skipped
        cleanup = await client.post("/v1/operations", json={
            "action": "cancel", "filter": {"label": [f"rr:{team}"]}})
        counted = (await _operation(client, cleanup.json()["id"]))["counts"]
        assert counted == {"done": 3, "skipped": 3, "failed": 0}, counted


def test_a_bulk_pause_then_resume_by_label(stack: Stack) -> None:
    asyncio.run(_bulk_pause(stack))


async def _bulk_pause(stack: Stack) -> None:
    team = f"p{uuid.uuid4().hex[:8]}"
    runs = {f"{team}-{i}" for i in range(3)}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        for wid in sorted(runs):
            response = await client.post("/v1/workflows", json={
                "id": wid, "workflow": WAITING, "labels": {"pp": team}})
            assert response.status_code == 202, response.text

        async def running() -> set[str]:
            return await _ids(client, ("label", f"pp:{team}"), ("status", "running"))
        await wait_until_async(running, 60, "the 3 runs running",
                               until=lambda found: found == runs)

        async def paused() -> dict[str, Any]:
            return {wid: (await client.get(f"/v1/workflows/{wid}")).json()["paused"]
                    for wid in runs}
        pause = await client.post("/v1/operations", json={
            "action": "pause", "filter": {"label": [f"pp:{team}"]}, "reason": "maintenance",
            "id": f"op-{team}"})
        assert pause.status_code == 202, pause.text
        done = await _operation(client, f"op-{team}")
        assert done["counts"] == {"done": 3, "skipped": 0, "failed": 0}, done
        marks = await wait_until_async(paused, 60, "the 3 runs paused",
                                       until=lambda found: all(found.values()))
        assert {(m["by"], m["reason"]) for m in marks.values()} == {
            (f"operation:op-{team}", "maintenance")}

        resume = await client.post("/v1/operations", json={
            "action": "resume", "filter": {"label": [f"pp:{team}"]}})
        assert (await _operation(client, resume.json()["id"]))["counts"]["done"] == 3
        await wait_until_async(paused, 60, "the 3 runs resumed",
                               until=lambda found: not any(found.values()))
        signal = await client.post("/v1/operations", json={
            "action": "signal", "filter": {"label": [f"pp:{team}"]},
            "signal": {"name": "go", "fields": {}}})
        assert (await _operation(client, signal.json()["id"]))["counts"]["done"] == 3

        async def succeeded() -> set[str]:
            return await _ids(client, ("label", f"pp:{team}"), ("status", "succeeded"))
        await wait_until_async(succeeded, 60, "the 3 runs signalled to their end",
                               until=lambda found: found == runs)
