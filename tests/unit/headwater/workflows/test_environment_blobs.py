"""The test environment passes large values by reference as the stack does: the history
holds references, task code and the test get real values, a selection through such a
value and a map over a list stored by reference give each task its part, and a path the
value has not fails here as it would there."""

from __future__ import annotations

from typing import Any

import pytest

from headwater import WorkflowContext, blobs, task, workflow
from headwater.core import events as ev
from headwater.errors import WorkflowFailed
from headwater.testing import Environment

THRESHOLD = 2048


@task(name="envblob.make", queue="cpu")
def make(n: int) -> dict[str, Any]:
    return {"doc": "d" * n, "n": n}


@task(name="envblob.size", queue="cpu")
def size(doc: str) -> int:
    return len(doc)


@workflow(name="envblob.flow", queue="cpu")
async def flow(wf: WorkflowContext, text: str) -> dict[str, Any]:
    note = await wf.signal("note")
    made = await wf.run("envblob.make", n=len(text))
    return {"size": await wf.run("envblob.size", doc=made["doc"]), "note": note,
            "text": text}


def spec(select: str) -> dict[str, Any]:
    return {"name": "envblob.spec", "nodes": [
        {"id": "a", "task": "envblob.make", "queue": "cpu", "input": {"n": 10_000}},
        {"id": "b", "task": "envblob.size", "queue": "cpu", "needs": ["a"],
         "input": {"doc": select}}]}


async def test_a_code_workflow_gets_real_values_and_the_history_references() -> None:
    env = Environment(blob_threshold_bytes=THRESHOLD)
    text = "t" * 10_000
    run = await env.start(flow, text=text)
    await env.signal(run, "note", {"body": "n" * 10_000})
    out = await env.result(run)
    assert out == {"size": 10_000, "note": {"body": "n" * 10_000}, "text": text}
    history = env.history(run)
    accepted = history[0].body
    assert isinstance(accepted, ev.WorkflowAccepted) and blobs.is_ref(accepted.input["text"])
    outputs = [e.body.output for e in history if isinstance(e.body, ev.TaskSucceeded)]
    assert any(blobs.is_ref(o.get("doc")) for o in outputs if isinstance(o, dict))


async def test_a_spec_workflow_passes_a_reference_whole() -> None:
    env = Environment(blob_threshold_bytes=THRESHOLD)
    assert await env.run(spec("${nodes.a.output.doc}")) == {"b": 10_000}


@task(name="envblob.texts", queue="cpu")
def texts(n: int) -> dict[str, Any]:
    return {"docs": [{"text": f"t{i}", "pad": "p" * 40} for i in range(n)], "n": n}


@task(name="envblob.length", queue="cpu")
def length(text: str) -> int:
    return len(text)


async def test_a_map_over_a_list_stored_by_reference_runs_each_item() -> None:
    env = Environment(blob_threshold_bytes=THRESHOLD)
    doc = {"name": "envblob.map", "nodes": [
        {"id": "a", "task": "envblob.texts", "queue": "cpu", "input": {"n": 300}},
        {"id": "m", "kind": "map", "task": "envblob.length", "queue": "cpu", "needs": ["a"],
         "over": "${nodes.a.output.docs}", "input": {"text": "${item.text}"}}]}
    run = await env.start(doc)
    out = await env.result(run)
    assert out["m"] == [len(f"t{i}") for i in range(300)]
    dispatched = [e.body for e in env.history(run) if isinstance(e.body, ev.TaskDispatched)
                  and e.body.node == "m"]
    assert dispatched[7].input["text"]["path"] == [7, "text"]


async def test_selecting_through_a_reference_gives_the_task_the_part() -> None:
    env = Environment(blob_threshold_bytes=THRESHOLD)
    doc = {"name": "envblob.part", "nodes": [
        {"id": "a", "task": "envblob.texts", "queue": "cpu", "input": {"n": 300}},
        {"id": "b", "task": "envblob.length", "queue": "cpu", "needs": ["a"],
         "input": {"text": "${nodes.a.output.docs.12.text}"}}]}
    assert (await env.run(doc))["b"] == 3


async def test_selecting_a_part_a_stored_value_has_not_fails_the_run_saying_why() -> None:
    env = Environment(blob_threshold_bytes=THRESHOLD)
    with pytest.raises(WorkflowFailed, match=r"no 0 in the value stored by reference .*str "
                                             r"has no key '0'"):
        await env.run(spec("${nodes.a.output.doc.0}"))
