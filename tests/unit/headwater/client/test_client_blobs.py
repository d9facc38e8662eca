"""The client puts back the values a run holds by reference: ``get``, ``result``, a
waiting ``run`` and ``task`` fetch each blob (streamed; the references inside a blob too) unless
``resolve_blobs=False``. Against ``httpx.MockTransport``."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
import pytest

from headwater import blobs, errors
from headwater.client import AsyncClient, Client
from headwater.client.blobs import BlobFetch

WF = "wf-1"
INNER = orjson.dumps(["x" * 50] * 4)
INNER_REF = blobs.make_ref(blobs.digest_of(INNER), len(INNER))
OUTER = orjson.dumps({"summary": "short", "pages": INNER_REF})
OUTER_REF = blobs.make_ref(blobs.digest_of(OUTER), len(OUTER))
INPUT = orjson.dumps("i" * 300)
INPUT_REF = blobs.make_ref(blobs.digest_of(INPUT), len(INPUT))
STORED = {d[blobs.REF_KEY]: data for d, data in
          ((INNER_REF, INNER), (OUTER_REF, OUTER), (INPUT_REF, INPUT))}
RESOLVED_OUTPUT = {"summary": "short", "pages": ["x" * 50] * 4}


def href(ref: dict[str, Any]) -> dict[str, Any]:
    return {**ref, "href": f"/v1/workflows/{WF}/blobs/{ref[blobs.REF_KEY]}"}


DOC = {"id": WF, "name": "n", "status": "succeeded", "seq": 4, "error": "",
       "input": {"q": 1, "doc": href(INPUT_REF)}, "output": href(OUTER_REF)}


TASK = {"workflow_id": WF, "node": "a", "index": None, "task": "t", "queue": "cpu",
        "status": "succeeded", "input": {"doc": href(INPUT_REF)}, "output": href(OUTER_REF),
        "attempts": [{"attempt": 1, "status": "succeeded"}]}


class Gateway:
    """Serves the run's document and its blobs (``broken``: the bytes of another)."""

    def __init__(self, broken: bool = False) -> None:
        self.asked: list[str] = []
        self.broken = broken

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.asked.append(path)
        if path == f"/v1/workflows/{WF}":
            return httpx.Response(200, json=DOC)
        if path == f"/v1/workflows/{WF}/tasks/a/-":
            return httpx.Response(200, json=TASK)
        digest = path.rsplit("/", 1)[1]
        if path.startswith(f"/v1/workflows/{WF}/blobs/") and digest in STORED:
            data = b'"tampered"' if self.broken else STORED[digest]
            return httpx.Response(200, content=data,
                                  headers={"Content-Type": "application/json"})
        return httpx.Response(404, json={"type": "urn:headwater:problem:not-found",
                                         "title": "Not found", "status": 404})


def test_result_puts_back_the_output_following_references_inside_blobs() -> None:
    gateway = Gateway()
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as client:
        assert client.result(WF) == RESOLVED_OUTPUT
    blob_paths = [p for p in gateway.asked if "/blobs/" in p]
    assert blob_paths == [f"/v1/workflows/{WF}/blobs/{OUTER_REF['$blob']}",
                          f"/v1/workflows/{WF}/blobs/{INNER_REF['$blob']}"]  # not the input


def test_get_puts_back_input_and_output_and_keeps_the_document_raw() -> None:
    with Client("http://gw", transport=httpx.MockTransport(Gateway())) as client:
        run = client.get(WF)
    assert run.input == {"q": 1, "doc": "i" * 300}
    assert run.output == RESOLVED_OUTPUT
    assert run.raw["output"] == href(OUTER_REF)


def test_resolve_blobs_false_leaves_the_references() -> None:
    gateway = Gateway()
    with Client("http://gw", transport=httpx.MockTransport(gateway),
                resolve_blobs=False) as client:
        assert client.result(WF) == href(OUTER_REF)
        assert client.get(WF).input == DOC["input"]
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as client:
        assert client.get(WF, resolve_blobs=False).output == href(OUTER_REF)
    assert not [p for p in gateway.asked if "/blobs/" in p]


def test_a_blob_whose_bytes_are_not_its_digest_is_refused() -> None:
    with Client("http://gw", transport=httpx.MockTransport(Gateway(broken=True))) as client, \
            pytest.raises(errors.UnexpectedAnswer, match="digest"):
        client.result(WF)


def test_a_blob_the_gateway_does_not_serve_is_not_found() -> None:
    missing = blobs.make_ref("sha256:" + "0" * 64, 9)

    def gateway(request: httpx.Request) -> httpx.Response:
        if request.url.path == f"/v1/workflows/{WF}":
            return httpx.Response(200, json={**DOC, "output": href(missing)})
        return httpx.Response(404, json={"title": "Not found", "status": 404})
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as client, \
            pytest.raises(errors.NotFound):
        client.result(WF)


def test_the_async_client_puts_back_the_same() -> None:
    async def main() -> tuple[Any, Any, Any]:
        async with AsyncClient("http://gw", transport=httpx.MockTransport(Gateway())) as c:
            got = await c.get(WF)
            return await c.result(WF), got.input, (await c.get(WF, resolve_blobs=False)).output
    output, workflow_input, raw = asyncio.run(main())
    assert output == RESOLVED_OUTPUT
    assert workflow_input == {"q": 1, "doc": "i" * 300}
    assert raw == href(OUTER_REF)


def test_a_tasks_input_and_output_are_put_back_unless_told_not_to() -> None:
    gateway = Gateway()
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as client:
        task = client.task(WF, "a")
    assert task.input == {"doc": "i" * 300} and task.output == RESOLVED_OUTPUT
    assert task.raw["output"] == href(OUTER_REF)
    with Client("http://gw", transport=httpx.MockTransport(gateway),
                resolve_blobs=False) as client:
        assert client.task(WF, "a").output == href(OUTER_REF)

    async def run() -> Any:
        async with AsyncClient("http://gw", transport=httpx.MockTransport(gateway)) as client:
            return await client.task(WF, "a")

    found = asyncio.run(run())
    assert found.input == {"doc": "i" * 300} and found.output == RESOLVED_OUTPUT


def test_a_reference_with_a_path_is_put_back_as_the_part_it_names() -> None:
    value = {"page": href(blobs.select(OUTER_REF, ["pages", 2])),
             "summary": blobs.select(OUTER_REF, ["summary"]), "n": 1}
    fetch = BlobFetch(WF, value)
    asked = []
    for digest, call in fetch.calls():
        asked.append(call.path)
        fetch.take(digest, STORED[digest])
    assert fetch.value() == {"page": "x" * 50, "summary": "short", "n": 1}
    assert asked == [f"/v1/workflows/{WF}/blobs/{OUTER_REF['$blob']}",
                     f"/v1/workflows/{WF}/blobs/{INNER_REF['$blob']}"]
    missing = BlobFetch(WF, blobs.select(OUTER_REF, ["pages", 9]))
    for digest, _ in missing.calls():
        missing.take(digest, STORED[digest])
    with pytest.raises(blobs.BlobPathError, match=r"no pages\[9\] in the value"):
        missing.value()
