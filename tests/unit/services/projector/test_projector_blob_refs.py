"""The projector notes every blob an event refers to as its run's (``INSERT_BLOB_REFS``),
so a parent holding its child's output, or a rerun its source's, keeps the blob while
its rows stay; the event's JSON is encoded once for both."""

from __future__ import annotations

import orjson

from headwater.blobs import make_ref
from headwater.core import events as ev
from services.projector.statements import INSERT_BLOB_REFS, INSERT_EVENT, core_plan

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64


def _succeeded(output: object) -> ev.HistoryEvent:
    body = ev.TaskSucceeded("wf-1", "n", None, 1, 1_000, output)
    return ev.HistoryEvent("wf-1", 3, body)


def test_an_event_carrying_references_notes_each_blob_once() -> None:
    e = _succeeded({"x": make_ref(A, 10), "y": [make_ref(B, 5), make_ref(A, 10)]})
    steps = core_plan(e)
    assert (INSERT_BLOB_REFS, ("wf-1", [A, B])) in steps
    [event_args] = [args for sql, args in steps if sql is INSERT_EVENT]
    assert isinstance(event_args[4], orjson.Fragment)
    assert orjson.loads(orjson.dumps(event_args[4])) == orjson.loads(orjson.dumps(e.body))


def test_an_event_without_references_writes_none() -> None:
    steps = core_plan(_succeeded({"x": "plain", "$blob": "not a reference"}))
    assert all(sql is not INSERT_BLOB_REFS for sql, _ in steps)


def test_a_dispatch_holding_path_references_notes_their_blobs() -> None:
    item = {"$blob": A, "bytes": 10, "path": [7, "text"]}
    body = ev.TaskDispatched("wf-1", "m", 7, 1, "t", "q", {"text": item,
                                                           "all": make_ref(B, 5, items=9)},
                             1_000)
    steps = core_plan(ev.HistoryEvent("wf-1", 4, body))
    assert (INSERT_BLOB_REFS, ("wf-1", [A, B])) in steps
