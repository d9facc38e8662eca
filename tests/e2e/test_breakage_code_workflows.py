"""Breakage: ``@workflow`` code and input a hostile or careless user gives, on the real
stack (the worker keeps one run's instance: ``HEADWATER_WORKFLOW_CACHE_SIZE=1``).

An input key the function has no parameter for is 422 at ``POST /v1/run`` and at the
workflow's path; input the function cannot take (sent where no schema checks it) fails
the run naming the fault; a step the core would refuse (a sleep of 10^12 s) fails the
function where it is issued; a decision forged on ``reports`` with a sleep past year
9999 is refused and the projection goes on; a workflow calling itself ever deeper fails
naming the child id limit; every statement the projector runs is one PostgreSQL can
prepare, so a run that sleeps is projected; cancelling a run with a child and a sleep in
flight cancels both; twenty runs at once through a cache of one run each end right; one
signal (and a copy of it under its id) is taken by one wait, not by every wait for its
name; the harness and the stack agree on where ``max_events`` fails a run; runs go on
after their worker is SIGKILLed (their next activations replay); runs started while two
code versions serve a queue (a rolling deploy whose newer code's steps run a task only
it has) all succeed, each on its own version's lane. What does not hold (``xfail``,
naming the fault): a gather of fewer steps than an activation may issue fails once its
decision outgrows the worker's 1 MiB output limit; a run whose results together
outgrow the 16 MiB record limit fails (the in-process harness runs it)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import break_flows
import httpx
import pytest
from breakkit import kill_and_restart, submit, wait_run
from stackkit import private_stack, produce

from headwater import codec
from headwater.core import events as ev
from headwater.core.kinds.code.decision import DECISION_ERROR
from headwater.errors import WorkflowFailed
from headwater.testing import Environment
from ops import localstack
from ops.sandbox import Sandbox, set_home
from services.common.clock import now_ms
from services.projector.writer import STATEMENTS
from tests.polling import scaled


@pytest.fixture(scope="module")
def code_stack(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Sandbox]:
    with private_stack(tmp_path_factory.mktemp("code-breakage"), 1,
                       {"HEADWATER_ANNOUNCE_S": "0.5", "HEADWATER_WORKFLOW_CACHE_SIZE": "1"},
                       more_tasks=("break_flows",)) as stack:
        yield stack


@pytest.fixture
def http(code_stack: Sandbox) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=code_stack.gateway, timeout=scaled(240)) as client:
        deadline = time.monotonic() + scaled(60)
        while client.get("/v1/definitions/bf.oversleep").status_code != 200:
            assert time.monotonic() < deadline, "the workflows were never registered"
            time.sleep(0.3)
        yield client


def rid(tag: str) -> str:
    return f"bf-{tag}-{uuid.uuid4().hex[:8]}"


def run_sync(http: httpx.Client, name: str, body: Any, timeout_s: float = 60) -> dict[str, Any]:
    """``POST /v1/run/{name}`` in the sync mode; the run's document once it ended."""
    workflow_id = rid(name.split(".")[-1])
    answer = http.post(f"/v1/run/{name}", params={"id": workflow_id,
                                                  "timeout": scaled(timeout_s)}, json=body)
    assert answer.status_code in (200, 202), answer.text
    return wait_run(http, workflow_id, timeout_s)


def attempts(doc: dict[str, Any], index: int) -> int:
    return max((t["attempt"] for t in doc["tasks"] if t["index"] == index), default=0)


@pytest.mark.parametrize("path", ["/v1/run/bf.add", "/bf/add"])
def test_an_input_key_the_function_has_no_parameter_for_is_422(http: httpx.Client,
                                                                path: str) -> None:
    answer = http.post(path, json={"a": 1, "bogus": 2})
    assert answer.status_code == 422, answer.text
    assert "bogus" in answer.json()["detail"], answer.text


def test_input_the_function_cannot_take_fails_the_run_naming_it(http: httpx.Client) -> None:
    spec = http.get("/v1/definitions/bf.add").json()["workflow"]
    run = submit(http, spec, {"a": 1, "wf": 2})  # an inline spec: no schema checks it
    doc = wait_run(http, run, 60)
    assert doc["status"] == "failed", doc
    assert "multiple values for argument 'wf'" in doc["error"], doc["error"]
    assert attempts(doc, 0) == 1, doc["tasks"]  # the function failed: no retries


def test_a_step_the_core_would_refuse_fails_the_function_where_it_is_issued(
        http: httpx.Client) -> None:
    doc = run_sync(http, "bf.oversleep", {})
    assert doc["status"] == "failed", doc
    assert doc["error"].startswith("ValueError: sleep step: seconds must be"), doc["error"]
    assert attempts(doc, 0) == 1, doc["tasks"]


def test_a_forged_sleep_past_year_9999_is_refused_and_the_projection_goes_on(
        http: httpx.Client, code_stack: Sandbox) -> None:
    # a code run no worker serves, so that only the forger answers its activation
    spec = {"name": "forged", "nodes": [{"id": "main", "kind": "code", "task": "bf.nobody",
                                         "queue": "bf-nobody", "input": "${input}"}]}
    run = submit(http, spec, {})
    wait_run(http, run, 30, until=("running",))
    decision = {"steps": [{"op": "sleep", "step": 0, "until_ms": 10 ** 17}]}
    forged = ev.TaskSucceeded(run, "main", 0, 1, now_ms(), decision)
    asyncio.run(produce([(code_stack.topics.reports, run.encode(), codec.encode(forged))]))
    after = run_sync(http, "bf.add", {"a": 41})  # the projection still follows the runs
    assert after["status"] == "succeeded" and after["output"] == 42, after
    doc = http.get(f"/v1/workflows/{run}").json()
    activation = next(t for t in doc["tasks"] if t["index"] == 0)
    assert activation["error_type"] == DECISION_ERROR, activation
    assert "until_ms must be a whole number of ms" in activation["error"], activation
    assert not [t for t in doc["tasks"] if t["index"] == 1], doc["tasks"]  # no sleep


def test_a_workflow_calling_itself_ever_deeper_fails_naming_the_id_limit(
        http: httpx.Client) -> None:
    doc = run_sync(http, "bf.deep", {"depth": 40}, timeout_s=120)
    assert doc["status"] == "failed", doc
    deepest = http.get("/v1/workflows", params={"status": "failed", "name": "bf.deep",
                                                "limit": 100}).json()["items"]
    errors = [http.get(f"/v1/workflows/{w['id']}").json()["error"] for w in deepest
              if w["id"].startswith(doc["id"])]
    assert any("ChildIdTooLong" in e or "over the limit of 200" in e for e in errors), errors
    running = http.get("/v1/workflows", params={"status": "running", "name": "bf.deep"})
    assert running.json()["items"] == [], running.text


def test_postgresql_prepares_every_statement_the_projector_runs(code_stack: Sandbox) -> None:
    """A statement PostgreSQL cannot prepare (a parameter it deduces two types for)
    fails its whole batch on every retry: the projection of every run stops."""
    async def prepare() -> list[str]:
        conn = await asyncpg.connect(code_stack.dsn)
        refused = []
        try:
            for sql in STATEMENTS:
                try:
                    await conn.prepare(sql)
                except asyncpg.PostgresError as e:
                    refused.append(f"{type(e).__name__}: {e}: {sql[:100]}")
        finally:
            await conn.close()
        return refused
    assert asyncio.run(prepare()) == []


def test_a_sleep_is_projected_and_so_is_what_follows(http: httpx.Client) -> None:
    nap = run_sync(http, "bf.nap", {"seconds": 0.5})
    assert (nap["status"], nap["output"]) == ("succeeded", 0.5), nap
    sleep = next(t for t in nap["tasks"] if t["index"] == 1)
    assert (sleep["task"], sleep["status"]) == ("headwater.sleep", "succeeded"), sleep
    assert run_sync(http, "bf.add", {"a": 1})["output"] == 2


def test_cancelling_a_run_cancels_its_child_and_ends_its_sleep(http: httpx.Client) -> None:
    answer = http.post("/v1/run/bf.parent", json={}, headers={"Prefer": "respond-async"})
    run = answer.json()["id"]

    def in_flight() -> dict[str, Any]:
        doc = http.get(f"/v1/workflows/{run}").json()
        steps = {t["index"]: t for t in doc["tasks"] if t["index"] % 2 == 1}
        return steps if len(steps) == 2 and all(
            t["status"] == "running" for t in steps.values()) else {}

    deadline = time.monotonic() + scaled(60)
    while not in_flight():
        assert time.monotonic() < deadline, http.get(f"/v1/workflows/{run}").text
        time.sleep(0.3)
    child = f"{run}:main.1:1"
    wait_run(http, child, 30, until=("running",))
    assert http.post(f"/v1/workflows/{run}/cancel", json={}).status_code == 202
    assert wait_run(http, run, 60)["status"] == "cancelled"
    assert wait_run(http, child, 60)["status"] == "cancelled"
    deadline = time.monotonic() + scaled(30)
    while True:
        doc = http.get(f"/v1/workflows/{run}").json()
        steps = {t["index"]: t["status"] for t in doc["tasks"] if t["index"] % 2 == 1}
        if steps == {1: "cancelled", 3: "cancelled"} or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert steps == {1: "cancelled", 3: "cancelled"}, doc["tasks"]


def test_many_runs_at_once_through_a_cache_of_one_run_end_right(http: httpx.Client) -> None:
    runs = []
    for n in range(20):
        answer = http.post("/v1/run/bf.steps", json={"n": 4 + n % 3},
                           headers={"Prefer": "respond-async"})
        assert answer.status_code == 202, answer.text
        runs.append((answer.json()["id"], sum(range(4 + n % 3))))
    for run, expected in runs:
        doc = wait_run(http, run, 120)
        assert (doc["status"], doc["output"]) == ("succeeded", expected), doc


def signal(http: httpx.Client, run: str, fields: dict[str, Any], signal_id: str) -> None:
    sent = http.post(f"/v1/workflows/{run}/signals/go",
                     json={"fields": fields, "signal_id": signal_id})
    assert sent.status_code == 202, sent.text


def waits(http: httpx.Client, run: str) -> list[int]:
    """The indexes of the run's signal waits still running."""
    doc = http.get(f"/v1/workflows/{run}").json()
    return [t["index"] for t in doc["tasks"]
            if t["task"] == "headwater.signal" and t["status"] == "running"]


def test_one_signal_is_taken_by_one_wait_and_a_copy_by_none(http: httpx.Client) -> None:
    answer = http.post("/v1/run/bf.waiter", json={"n": 2}, headers={"Prefer": "respond-async"})
    run = answer.json()["id"]
    deadline = time.monotonic() + scaled(60)
    while waits(http, run) != [1]:
        assert time.monotonic() < deadline, http.get(f"/v1/workflows/{run}").text
        time.sleep(0.2)
    signal(http, run, {"k": 1}, "s-1")
    signal(http, run, {"k": 1}, "s-1")  # a copy: at-least-once delivery
    deadline = time.monotonic() + scaled(60)
    while waits(http, run) != [3]:  # the first wait took it; the second waits
        doc = http.get(f"/v1/workflows/{run}").json()
        assert doc["status"] == "running", f"one signal ended both waits: {doc['output']}"
        assert time.monotonic() < deadline, doc["tasks"]
        time.sleep(0.2)
    time.sleep(scaled(2))
    assert http.get(f"/v1/workflows/{run}").json()["status"] == "running"
    signal(http, run, {"k": 2}, "s-2")
    doc = wait_run(http, run, 60)
    assert (doc["status"], doc["output"]) == ("succeeded", [{"k": 1}, {"k": 2}]), doc


@pytest.mark.xfail(strict=True, reason="an activation's decision is its TaskSucceeded, held "
                   "to the worker's 1 MiB output limit: a gather of 5,500 tasks (about 195 "
                   "bytes a step) fails the run with OutputTooLargeError, under the 10,000 "
                   "steps an activation may issue")
def test_a_gather_under_the_step_limit_runs(http: httpx.Client) -> None:
    doc = run_sync(http, "bf.wide", {"n": 5500}, timeout_s=600)
    assert doc["status"] == "succeeded", doc["error"]


def test_a_run_whose_results_together_outgrow_a_record_runs(http: httpx.Client) -> None:
    """20 results of 1,000 KiB: an activation's dispatch carries every result so far, so
    the 17th activation sent to a worker would be 17.4 MB, over the 16 MiB record limit.
    With the instance kept every activation after the first is carried by the step's
    report (a continuation), and no dispatch carries the journal. (A run that must be
    replayed past that point, on another worker or after a restart, still fails with
    'a record of ... bytes exceeds the limit'.)"""
    doc = run_sync(http, "bf.blobs", {"n": 20, "kib": 1000}, timeout_s=300)
    assert doc["status"] == "succeeded", doc["error"]


@pytest.mark.parametrize("n", [8, 9])
def test_the_harness_and_the_stack_agree_on_max_events(http: httpx.Client, n: int) -> None:
    """``bf.capped`` (``max_events=40``): 8 steps fit, 9 do not, in both (each step's
    report carries the next activation: 5 events a step)."""
    doc = run_sync(http, "bf.capped", {"n": n})
    env = Environment()

    async def in_harness() -> str:
        try:
            await env.run(break_flows.capped, n=n)
        except WorkflowFailed as e:
            return f"failed: {e.error}"
        return "succeeded"
    harness = asyncio.run(in_harness())
    stack = doc["status"] if doc["status"] == "succeeded" else f"failed: {doc['error']}"
    assert harness == stack, (harness, stack)
    assert len(env.history("test-1")) == doc["seq"], doc["seq"]


def test_runs_go_on_after_their_worker_is_killed(http: httpx.Client,
                                                code_stack: Sandbox) -> None:
    """The worker's instances are lost with it: the next activations replay."""
    runs = []
    for n in range(4):
        answer = http.post("/v1/run/bf.slow_steps", json={"n": 12 + n},
                           headers={"Prefer": "respond-async"})
        runs.append((answer.json()["id"], sum(range(12 + n))))
    time.sleep(scaled(2))
    kill_and_restart(code_stack, "worker-cpu-1")
    for run, expected in runs:
        doc = wait_run(http, run, 180)
        assert (doc["status"], doc["output"]) == ("succeeded", expected), doc


def test_runs_started_while_two_code_versions_serve_a_queue_succeed(
        http: httpx.Client, code_stack: Sandbox) -> None:
    newer = localstack.Service("worker-cpu-v2", (sys.executable, "-m", "services.worker",
                                                 "--queue", "cpu", "--tasks", "break_flows_v2"))
    before = os.environ.get("HEADWATER_HOME")
    set_home(str(code_stack.home))
    try:
        code_stack.start(newer)
    finally:
        set_home(before)
    try:
        deadline = time.monotonic() + scaled(60)
        while http.get("/v1/definitions/bf.steps").json()["version"] < 2:
            assert time.monotonic() < deadline, "the newer code was never registered"
            time.sleep(0.3)
        runs = [http.post("/v1/run/bf.steps", json={"n": 6},
                          headers={"Prefer": "respond-async"}).json()["id"]
                for _ in range(10)]
        ended = [wait_run(http, run, 120) for run in runs]
        failed = [(d["id"], d["error"][:200]) for d in ended if d["status"] != "succeeded"]
        assert failed == [], f"{len(failed)} of 10 failed: {failed[:2]}"
    finally:
        set_home(str(code_stack.home))
        try:
            code_stack.stop(newer)
        finally:
            set_home(before)
