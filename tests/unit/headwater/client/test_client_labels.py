"""Labels in the client: ``submit`` sends them in the body, ``run`` as ``?label=k:v``,
``list`` filters by them (``?label=k:v``, ``?label=k`` for any value), and a run's
document shows them; ``list`` and an operation's filter take ``paused`` (False
included)."""

from __future__ import annotations

import json

import httpx

from headwater.client import AsyncClient, Client

SPEC = {"name": "n", "nodes": [{"id": "a", "task": "t"}]}


def test_labels_go_with_a_submission_a_run_and_a_listing() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "GET":
            return httpx.Response(200, json={"items": [
                {"id": "wf-1", "name": "n", "status": "running", "labels": {"team": "a"}}],
                "next_cursor": None})
        return httpx.Response(202, json={"id": "wf-1", "status": "accepted"})

    with Client("http://gw", transport=httpx.MockTransport(handler)) as hw:
        hw.submit(SPEC, id="wf-1", labels={"team": "a", "env": "dev"})
        hw.submit(SPEC, id="wf-2")
        hw.run("docs", mode="async", id="wf-1", labels={"team": "a", "ref": "x:y"})
        page = hw.list(labels={"team": "a", "env": None}, status="running")
    assert json.loads(seen[0].content)["labels"] == {"team": "a", "env": "dev"}
    assert "labels" not in json.loads(seen[1].content)
    assert seen[2].url.params.get_list("label") == ["team:a", "ref:x:y"]
    assert seen[3].url.params.get_list("label") == ["team:a", "env"]
    assert seen[3].url.params["status"] == "running"
    assert page.items[0].labels == {"team": "a"}


async def test_the_async_client_filters_by_labels_too() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"items": [], "next_cursor": None})

    async with AsyncClient("http://gw", transport=httpx.MockTransport(handler)) as hw:
        await hw.list(labels={"team": "a"})
    assert seen[0].url.params.get_list("label") == ["team:a"]


def test_a_bulk_operation_is_tried_started_under_one_id_and_read() -> None:
    seen: list[httpx.Request] = []
    doc = {"id": "op-1", "action": "cancel", "state": "running", "matched": 2,
           "progress": 0, "counts": {"done": 0, "skipped": 0, "failed": 0}, "reasons": []}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "POST" and json.loads(request.content).get("dry_run"):
            return httpx.Response(200, json={"dry_run": True, "matched": 2,
                                             "over_limit": False, "sample": ["a", "b"]})
        if len(seen) == 2:  # the first start is lost: tried again under the same id
            return httpx.Response(503, headers={"Retry-After": "0"}, json={
                "title": "Kafka unavailable", "status": 503})
        return httpx.Response(202 if request.method == "POST" else 200, json=doc)

    with Client("http://gw", transport=httpx.MockTransport(handler)) as hw:
        tried = hw.operations.dry_run("cancel", labels={"team": "a"}, status="running")
        started = hw.operations.start("cancel", reason="why", labels={"team": "a",
                                                                       "env": None})
        got = hw.operations.get("op-1")
    assert (tried.matched, tried.sample) == (2, ["a", "b"])
    assert json.loads(seen[0].content) == {"action": "cancel", "dry_run": True, "filter": {
        "status": "running", "label": ["team:a"]}}
    first, again = json.loads(seen[1].content), json.loads(seen[2].content)
    assert first == again and first["id"].startswith("op-")
    assert first["filter"] == {"label": ["team:a", "env"]} and first["reason"] == "why"
    assert started.id == "op-1" and not started.done and got.counts["done"] == 0
    assert seen[3].url.path == "/v1/operations/op-1"


def test_a_listing_and_an_operation_filter_by_paused() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "POST":
            return httpx.Response(200, json={"dry_run": True, "matched": 0,
                                             "over_limit": False, "sample": []})
        return httpx.Response(200, json={"items": [], "next_cursor": None})

    with Client("http://gw", transport=httpx.MockTransport(handler)) as hw:
        hw.list(paused=True)
        hw.list(paused=False, status="running")
        hw.list()
        hw.operations.dry_run("resume", paused=False, status="running")
    assert [r.url.params.get("paused") for r in seen[:3]] == ["true", "false", None]
    assert json.loads(seen[3].content)["filter"] == {"paused": False, "status": "running"}


async def test_the_async_client_filters_by_paused_too() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"items": [], "next_cursor": None})

    async with AsyncClient("http://gw", transport=httpx.MockTransport(handler)) as hw:
        await hw.list(paused=False)
    assert seen[0].url.params["paused"] == "false"
