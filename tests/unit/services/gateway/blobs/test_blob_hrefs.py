"""A run's documents show each reference with its ``href`` (``blobs.hrefs``), and a
submission's or a signal's value keeps its small parts inline (``blobs.payloads``)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from headwater import blobs
from services.common.blobs.claims import Claims
from services.gateway.blobs import hrefs, payloads
from services.gateway.edge.problems import Problem

DIGEST = blobs.digest_of(b'"large"')
REF = blobs.make_ref(DIGEST, 7)


def test_a_document_without_a_reference_is_encoded_once_and_not_walked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    doc = {"input": {"a": [1, 2, "blob"]}, "output": None, "tasks": [{"output": "x"}]}
    with monkeypatch.context() as m:
        m.setattr(hrefs, "with_hrefs", lambda *_: pytest.fail("walked"))
        assert hrefs.dumps(doc, "wf-1") == orjson.dumps(doc)
    mentions = {"input": "$blob", "output": {"$blob": 1}}  # walked, nothing to add
    assert hrefs.dumps(mentions, "wf-1") == orjson.dumps(mentions)


def test_each_reference_gets_the_href_of_the_run_shown() -> None:
    doc = {"input": {"small": 1, "big": REF}, "tasks": [{"output": [REF, 2]}],
           "output": {**REF, "href": "/v1/workflows/other/blobs/" + DIGEST}}
    shown = orjson.loads(hrefs.dumps(doc, "wf-1"))
    href = f"/v1/workflows/wf-1/blobs/{DIGEST}"
    assert shown["input"] == {"small": 1, "big": {**REF, "href": href}}
    assert shown["tasks"] == [{"output": [{**REF, "href": href}, 2]}]
    assert shown["output"] == {**REF, "href": href}  # the run shown, whatever it held
    assert doc["input"]["big"] == REF  # the document itself is left as it was


def test_a_dict_that_looks_like_a_reference_but_is_not_one_is_left() -> None:
    not_refs = [{"$blob": "sha256:nothex", "bytes": 1}, {"$blob": DIGEST, "bytes": True},
                {"$blob": DIGEST, "bytes": 1, "more": 2}]
    assert orjson.loads(hrefs.dumps(not_refs, "wf-1")) == not_refs


class Store:
    """What ``payloads.offload`` stores, by digest and run."""

    def __init__(self) -> None:
        self.put_calls: list[tuple[str, bytes, str]] = []

    async def put(self, digest: str, data: bytes, workflow_id: str) -> None:
        self.put_calls.append((digest, data, workflow_id))


def claims_with(store: Store, threshold: int) -> Claims:
    async def opener() -> Any:
        return store
    return Claims(opener, threshold)


def test_a_small_value_is_the_same_object_and_opens_no_store() -> None:
    store = Store()
    value = {"a": "x" * 100}
    out = asyncio.run(payloads.offload(claims_with(store, 1024), None,  # type: ignore[arg-type]
                                       value, payloads.Owner("wf-1", None)))
    assert out is value
    assert store.put_calls == []


def test_a_large_part_is_stored_as_the_runs_before_it_is_a_reference() -> None:
    store = Store()
    value = {"small": 1, "doc": "y" * 5000}
    out = asyncio.run(payloads.offload(claims_with(store, 1024), None,  # type: ignore[arg-type]
                                       value, payloads.Owner("wf-1", "acme")))
    data = orjson.dumps("y" * 5000)
    assert out == {"small": 1, "doc": blobs.make_ref(blobs.digest_of(data), len(data))}
    assert store.put_calls == [(blobs.digest_of(data), data, "wf-1")]


def test_a_reference_with_a_path_keeps_it_and_its_count_with_its_href() -> None:
    part = {**REF, "path": [3, "text"]}
    listed = {**REF, "items": 4}
    shown = orjson.loads(hrefs.dumps({"input": {"t": part, "all": listed}}, "wf-1"))
    href = f"/v1/workflows/wf-1/blobs/{DIGEST}"
    assert shown["input"] == {"t": {**part, "href": href}, "all": {**listed, "href": href}}


def test_a_path_reference_passed_on_is_checked_and_adopted_by_its_digest() -> None:
    part = {**REF, "path": ["doc", 0], "href": "/v1/workflows/other/blobs/" + DIGEST}
    value, found, passed = payloads._offloaded({"d": part, "n": 1}, 1000)
    assert passed == [DIGEST] and found == {}
    assert value == {"d": {**REF, "path": ["doc", 0]}, "n": 1}


def test_a_path_reference_in_a_spec_is_refused() -> None:
    spec = {"name": "s", "nodes": [{"id": "a", "task": "t", "input": {
        "d": {**REF, "path": ["x"]}}}]}
    with pytest.raises(Problem) as info:
        payloads.refuse_in_spec(spec)
    assert info.value.status == 422 and "workflow.nodes[0].input.d" in str(info.value.detail)


@pytest.mark.parametrize("inline", [True, False])
def test_a_small_bodys_value_is_walked_on_the_loop_else_in_a_thread(
        inline: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    on_loop: list[bool] = []
    walk = payloads._offloaded

    def watched(value: Any, threshold: int) -> Any:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:
            on_loop.append(False)
        return walk(value, threshold)

    monkeypatch.setattr(payloads, "_offloaded", watched)
    store, value = Store(), {"small": 1, "doc": "y" * 5000}
    out = asyncio.run(payloads.offload(claims_with(store, 1024), None,  # type: ignore[arg-type]
                                       value, payloads.Owner("wf-1", None), inline=inline))
    data = orjson.dumps("y" * 5000)
    assert out == {"small": 1, "doc": blobs.make_ref(blobs.digest_of(data), len(data))}
    assert on_loop == [inline]
