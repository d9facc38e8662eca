"""The test environment passes large values by reference as the stack does: the history
holds references, task code and the test get real values, and a workflow that selects
into such a value fails here as it would there."""

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


async def test_selecting_into_a_reference_fails_the_run_saying_why() -> None:
    env = Environment(blob_threshold_bytes=THRESHOLD)
    with pytest.raises(WorkflowFailed, match="stored by reference"):
        await env.run(spec("${nodes.a.output.doc.0}"))
