"""Labels in the client: ``submit`` sends them in the body, ``run`` as ``?label=k:v``,
``list`` filters by them (``?label=k:v``, ``?label=k`` for any value), and a run's
document shows them."""

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
