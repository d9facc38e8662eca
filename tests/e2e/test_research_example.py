"""The research example (a ``@workflow`` in Python code) on the real broker and
database, on the input of ``make hybrid`` (this machine's installed packages): the
runner submits its spec document, follows it and approves it; a second run is rejected
over HTTP. Each run's history, read from the events topic and folded through
``headwater.core.evolve``, gives the output ``headwater.testing.Environment`` gives for
the same input in this process."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stackkit import Stack, history

from examples.hybrid.publishing import PUBLISH_DIR_SETTING
from examples.hybrid.tasks import QUEUE as HYBRID_QUEUE
from examples.hybrid.tasks import TASKS_MODULE
from examples.research import flows, runner
from examples.research.progress import waits_for
from headwater import blobs
from headwater.client import AsyncClient
from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.state import WorkflowState
from headwater.core.status import WorkflowStatus
from headwater.testing import Environment
from ops import localstack
from ops.cli.queues import wait_for_workers
from tests.polling import scaled

HOLD_S = 1.0


@pytest.fixture(scope="module")
def research_workers(stack: Stack) -> Iterator[None]:
    """Workers for the hybrid tasks' queue and the workflows' queue in the session's
    sandbox, stopped and taken off its list of processes afterwards. Ready once the
    gateway knows them (a queue without a live worker is refused)."""
    services = [localstack.Service(f"worker-{queue}-1", (
        sys.executable, "-m", "services.worker", "--queue", queue, "--tasks", module))
        for queue, module in ((HYBRID_QUEUE, TASKS_MODULE), (flows.QUEUE, flows.FLOWS_MODULE))]
    for service in services:
        stack.start(service)
    for queue in (HYBRID_QUEUE, flows.QUEUE):
        wait_for_workers(stack.gateway, queue, scaled(60))
    yield
    for service in services:
        stack.stop(service)
        stack.services.remove(service)


@pytest.fixture
def same_as_workers(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process publishes where the sandbox's workers do, and decides as they do."""
    monkeypatch.setenv(PUBLISH_DIR_SETTING, str(stack.home / "published"))
    monkeypatch.delenv("HEADWATER_EXAMPLE_MODEL_URL", raising=False)


def real_input(question: str | None = None) -> dict[str, Any]:
    """``make hybrid``'s input (``examples/hybrid/input.json``), held ``HOLD_S``."""
    doc = json.loads(runner.INPUT.read_text())
    return {**doc, "hold_s": HOLD_S, **({"question": question} if question else {})}


def folded(records: list[ev.HistoryEvent]) -> WorkflowState:
    """The run's events from the topic, once each in seq order, folded from nothing."""
    state: WorkflowState | None = None
    for event in sorted({r.seq: r for r in records}.values(), key=lambda r: r.seq):
        state = evolve(state, event)
    assert state is not None
    return state


async def in_harness(workflow_id: str, given: dict[str, Any],
                     approval: dict[str, Any]) -> tuple[Any, WorkflowState]:
    """The same run in this process: its output and its state."""
    env = Environment()
    run = await env.start(flows.research, given, id=workflow_id)
    await env.signal(run, "approval", approval)
    return await env.result(run), env.state(run)


def steps(state: WorkflowState) -> list[tuple[str, str, Any]]:
    """The steps the function issued: op, name and input, in issue order."""
    code = state.nodes["main"].code
    assert code is not None
    return [(s["op"], s.get("name", ""), s.get("input")) for s in code["steps"]]


async def test_the_runner_approves_and_the_history_folds_to_the_harness_result(
        stack: Stack, research_workers: None, same_as_workers: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    workflow_id = f"research-{uuid.uuid4().hex[:8]}"
    code = await asyncio.to_thread(runner.main, [
        "--approve", "--note", "checked by the e2e suite", "--id", workflow_id,
        "--hold", str(HOLD_S), "--gateway", stack.gateway, "--no-worker"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "the function: wait for signal 'approval'" in out and "sent approval" in out
    assert "decide: step 0:" in out and "child workflow research.search" in out
    assert "the timer fired" in out and "workflow        succeeded" in out
    state = folded(await history(stack, workflow_id))
    assert state.status is WorkflowStatus.SUCCEEDED
    output = state.output
    assert output["published"] is True and output["note"] == "checked by the e2e suite"
    published = Path(output["path"])
    assert published == stack.home / "published" / f"{workflow_id}.md"
    assert "gzip" in [c["package"] for c in output["citations"]]  # Essential on Debian
    expected, harness = await in_harness(workflow_id, real_input(), {
        "approved": True, "note": "checked by the e2e suite"})
    assert output == expected
    assert steps(state) == steps(harness)
    # The documents (half a megabyte of a Debian system's packages) went by reference:
    # the child's input in the history holds one, as in the harness.
    [child] = [i for op, name, i in steps(state) if name == "research.search"]
    assert blobs.is_ref(child["corpus"]) and child["corpus"]["bytes"] > 256 * 1024, child


async def test_a_rejected_run_folds_to_the_harness_result(
        stack: Stack, research_workers: None, same_as_workers: None) -> None:
    given = real_input("decompress gz files")
    approval = {"approved": False, "note": "not now"}
    async with AsyncClient(stack.gateway) as hw:
        workflow_id = (await hw.submit(runner.spec(), input=given)).id
        async for event in hw.events(workflow_id):
            assert not event.terminal, event.data
            if event.type == "TaskSucceeded" and waits_for(event.data.get("output"),
                                                           "approval"):
                break
        await hw.signal(workflow_id, "approval", approval)
    state = folded(await history(stack, workflow_id))
    assert state.status is WorkflowStatus.SUCCEEDED
    assert state.output["published"] is False and state.output["note"] == "not now"
    assert "gzip" in [c["package"] for c in state.output["citations"]]
    expected, harness = await in_harness(workflow_id, given, approval)
    assert state.output == expected
    assert steps(state) == steps(harness)
