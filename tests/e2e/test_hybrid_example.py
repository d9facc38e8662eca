"""The hybrid example on the real broker and database: the runner submits it, follows
it over SSE and approves it; a second run is rejected over HTTP and takes the other
branch. Both classify this machine's real packages (``/var/lib/dpkg/status``) and ask
about compression, which gzip (an Essential package of every Debian system) answers."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from httpx_sse import aconnect_sse
from stackkit import Stack, history

from examples.hybrid import runner
from examples.hybrid.tasks import QUEUE, TASKS_MODULE
from headwater.core import events as ev
from ops import localstack
from ops.cli.queues import wait_for_workers
from tests.polling import scaled

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hybrid"
MAX_STEPS = 6
CLASSIFIED_BY: list[str] = []
"""The run of this module that classified the packages first (the approved one, when it
ran): the later one takes every batch's classes from the cache (``cache: {ttl: 7d}``)."""


@pytest.fixture(scope="module")
def hybrid_worker(stack: Stack) -> Iterator[localstack.Service]:
    """A worker for the example's queue in the session's sandbox, stopped and taken off
    its list of processes afterwards (later tests count the stack's workers). Ready once
    the gateway knows it (its announcement): before, the example's tasks get 400."""
    service = localstack.Service("worker-hybrid-1", (
        sys.executable, "-m", "services.worker", "--queue", QUEUE, "--tasks", TASKS_MODULE))
    stack.start(service)
    wait_for_workers(stack.gateway, QUEUE, scaled(60))
    yield service
    stack.stop(service)
    stack.services.remove(service)


def bodies(records: list[ev.HistoryEvent], body: type) -> list[Any]:
    return [r.body for r in records if isinstance(r.body, body)]


def check_loop(records: list[ev.HistoryEvent]) -> None:
    """The research loop decided within its bound, with the example's tools, and ended
    by finishing with the answer it drafted."""
    steps = [b for b in bodies(records, ev.LoopStepDecided) if b.node == "research"]
    assert [s.step for s in steps] == list(range(len(steps))) and len(steps) <= MAX_STEPS
    assert {s.tool for s in steps[:-1]} <= {"search", "read", "answer"}
    assert steps[-1].finish and steps[-2].tool == "answer"
    streamed = [b for b in bodies(records, ev.TaskOutputStreamed) if b.node == "research"]
    assert len(streamed) >= len(steps)  # each decision streams its reason


async def test_the_runner_approves_and_publishes(stack: Stack, hybrid_worker: Any,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    workflow_id = f"hybrid-{uuid.uuid4().hex[:8]}"
    code = await asyncio.to_thread(runner.main, [
        "--approve", "--note", "checked by the e2e suite", "--id", workflow_id,
        "--gateway", stack.gateway, "--no-worker"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "approval: waiting for signal 'approval'" in out and "sent approval" in out
    assert "research step 0:" in out and "workflow        succeeded" in out
    records = await history(stack, workflow_id)
    check_loop(records)
    CLASSIFIED_BY.append(workflow_id)
    output = records[-1].body.output
    assert output["published"] is True and output["note"] == "checked by the e2e suite"
    published = Path(output["path"])
    assert published.parent == stack.home / "published"
    assert published.read_text().startswith(f"# {output['question']}\n")
    assert "gzip" in [c["package"] for c in output["citations"]]  # Essential on Debian
    assert output["machine"]["packages"] > 50
    conditions = {b.node: b.value for b in bodies(records, ev.ConditionEvaluated)}
    assert conditions == {"publish": True, "shelve": False}
    finished = {b.node: b.status for b in bodies(records, ev.NodeFinished)}
    assert finished["shelve"] == "skipped" and finished["report"] == "succeeded"


async def test_a_rejected_answer_is_shelved(stack: Stack, hybrid_worker: Any) -> None:
    spec = yaml.safe_load((EXAMPLE / "workflow.yaml").read_text())
    given = {**json.loads((EXAMPLE / "input.json").read_text()),
             "question": "decompress gz files"}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={"workflow": spec, "input": given})
        assert response.status_code == 202, response.text
        workflow_id = response.json()["id"]
        async with aconnect_sse(client, "GET", f"/v1/workflows/{workflow_id}/events",
                                timeout=httpx.Timeout(scaled(120))) as source:
            async for sse in source.aiter_sse():
                if sse.event == "WaitStarted":
                    break
                assert sse.event not in ("WorkflowFailed", "WorkflowCancelled"), sse.data
        response = await client.post(f"/v1/workflows/{workflow_id}/signals/approval",
                                     json={"fields": {"approved": False, "note": "not now"}})
        assert response.status_code == 202, response.text
    records = await history(stack, workflow_id)
    check_loop(records)
    output = records[-1].body.output
    assert output["published"] is False and output["note"] == "not now"
    # gzip is an Essential package: every Debian system has it.
    assert "gzip" in [c["package"] for c in output["citations"]]
    finished = {b.node: b.status for b in bodies(records, ev.NodeFinished)}
    assert finished["publish"] == "skipped" and finished["shelve"] == "succeeded"
    assert finished["report"] == "succeeded"
    if CLASSIFIED_BY:  # the same packages were classified by the approved run
        hits = [b for b in bodies(records, ev.TaskCached) if b.node == "classify"]
        looked = [b for b in bodies(records, ev.TaskLookedUp) if b.node == "classify"]
        assert looked and len(hits) == len(looked), (len(hits), len(looked))
        assert {h.source["workflow_id"] for h in hits} == {CLASSIFIED_BY[0]}
        assert not [b for b in bodies(records, ev.TaskDispatched) if b.node == "classify"]
