"""Lanes on the real stack: a code run stays on the code version it started with.

Two workers serve the queue ``cv`` at once, one running v1 of ``cv.flow`` and one v3
(the change behind ``wf.patched``). A run begun on v1 has every activation and every
step run by the v1 worker, though the v3 worker takes dispatches of the same queue and
group; a run begun on v3 is the v3 worker's alone; a v1 run's child (``wf.call`` of the
``@workflow`` ``cv.kid``) records v1 and runs every activation and step on the v1
worker too. Then the v1 worker stops (SIGTERM,
by pid) while a v1 run waits for its signal: the v3 worker adopts the v1 lane (no live
worker announces v1) and finishes the run on the old path, no attempt
nondeterministic. ``GET /v1/queues`` counts the lanes in ``cv``'s backlog and shows no
queue of their own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from code_kit import (
    code_stack,
    cv_worker,
    document,
    ended,
    in_home,
    served,
    signal,
    start_run,
    waiting_for_signal,
)
from consumer_groups import wait_group_size
from stackkit import Stack

GO = {"ok": True}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack whose ``cv`` workers are this module's: v1 and v3 at once."""
    with code_stack(tmp_path_factory.mktemp("code-lanes")) as own:
        in_home(own, lambda: own.start(cv_worker("v1"), {"CV_CODE": "v1",
                                                         "HEADWATER_CODE_VERSION": "v1"}))
        yield own


def workers_of(doc: dict[str, Any], even: bool | None = None) -> set[str]:
    """The workers that ran the run's tasks (its activations only with ``even``, its
    steps only with ``even=False``), less the coordinator's own steps."""
    return {t["worker"] for t in doc["tasks"] if t["worker"]
            and not t["task"].startswith("headwater.")
            and (even is None or (t["index"] % 2 == 0) == even)}


async def test_a_run_stays_on_its_code_while_another_version_serves_the_queue(
        stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await served(client, "cv.flow", "v1")
        old = await start_run(client, "cv.flow", {"x": 1})
        await document(client, old, waiting_for_signal, "the v1 run waiting for go")
        in_home(stack, lambda: stack.start(cv_worker("v3"), {
            "CV_CODE": "v3", "HEADWATER_CODE_VERSION": "v3"}))
        await served(client, "cv.flow", "v3")
        new = await start_run(client, "cv.flow", {"x": 2})
        await document(client, new, waiting_for_signal, "the v3 run waiting for go")
        for wid in (old, new):
            await signal(client, wid, "go", GO)
        old_doc, new_doc = await ended(client, old), await ended(client, new)
    assert (old_doc["status"], new_doc["status"]) == ("succeeded", "succeeded"), (
        old_doc, new_doc, stack.logs())
    assert old_doc["output"]["code"] == "v1" and old_doc["output"]["b"] == 20, old_doc
    assert new_doc["output"]["code"] == "v3" and new_doc["output"]["b"] == 300, new_doc
    v1, v3 = workers_of(old_doc), workers_of(new_doc)
    assert len(v1) == 1 and next(iter(v1)).startswith("worker-cv-v1-"), old_doc["tasks"]
    assert len(v3) == 1 and next(iter(v3)).startswith("worker-cv-v3-"), new_doc["tasks"]
    assert len([t for t in old_doc["tasks"] if t["index"] % 2 == 0]) >= 5, old_doc["tasks"]


async def test_a_child_of_a_run_runs_on_its_parent_s_code(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await served(client, "cv.parent", "v1", number=1)
        in_home(stack, lambda: stack.start(cv_worker("v3"), {  # none if it runs already
            "CV_CODE": "v3", "HEADWATER_CODE_VERSION": "v3"}))
        for name in ("cv.kid", "cv.parent"):  # both workers live: v1's is version 1
            await served(client, name, "v3")
        # both take tasks.cv: a dispatch sent there would go to either
        await wait_group_size(stack.topics.worker_group("cv"), 2, "the v1 and v3 workers",
                              60, stable=True)
        # a parent begun on v1: the definition's version 1, which the v1 worker announced
        answer = await client.post("/v1/run/cv.parent@1", json={"x": 1},
                                   headers={"Prefer": "respond-async"})
        assert answer.status_code == 202, answer.text
        run = answer.json()["id"]
        doc = await ended(client, run)
        [child] = [c["workflow_id"] for c in doc["children"]]
        kid = await ended(client, child)
    assert doc["status"] == "succeeded", (doc, stack.logs())
    assert doc["output"] == {"kid": {"x": 4, "code": "v1"}, "code": "v1"}, doc
    activations = [t for t in kid["tasks"] if t["index"] % 2 == 0]
    assert len(activations) >= 4, kid["tasks"]
    ran = workers_of(kid)
    assert len(ran) == 1 and next(iter(ran)).startswith("worker-cv-v1-"), kid["tasks"]
    assert workers_of(doc, even=True) == ran, doc["tasks"]  # its step: the child


async def test_a_run_whose_code_stopped_is_adopted_by_the_new_code(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await served(client, "cv.flow", "v3")
        # a run begun on v1: the definition's version 1, which the v1 worker announced
        answer = await client.post("/v1/run/cv.flow@1", json={"x": 5},
                                   headers={"Prefer": "respond-async"})
        assert answer.status_code == 202, answer.text
        run = answer.json()["id"]
        waiting = await document(client, run, waiting_for_signal, "the v1 run waiting for go")
        assert workers_of(waiting) and all(w.startswith("worker-cv-v1-")
                                           for w in workers_of(waiting)), waiting["tasks"]
        queues = (await client.get("/v1/queues")).json()
        names = [q["queue"] for q in queues["queues"]]
        assert "cv" in names and not [n for n in names if "." in n], names

        in_home(stack, lambda: stack.stop(cv_worker("v1")))  # drains, then announces stopping
        stopped = time.monotonic()
        await signal(client, run, "go", GO)
        doc = await ended(client, run, timeout_s=60)
        waited = time.monotonic() - stopped
    assert doc["status"] == "succeeded", (doc, stack.logs())
    assert doc["output"] == {"a": 6, "b": 60, "squares": [0, 1, 4], "go": GO, "code": "v3"}, doc
    assert doc["nondeterministic"] is None, doc["nondeterministic"]
    before = {t["index"] for t in waiting["tasks"]}
    late = {t["worker"] for t in doc["tasks"] if t["index"] % 2 == 0
            and t["index"] not in before}
    assert late and all(w.startswith("worker-cv-v3-") for w in late), doc["tasks"]
    print(f"v1 worker stopped: the run ended {waited:.1f} s later on the v3 worker")
