"""Concurrency keys and rate limits on the real broker (docs/architecture.md §4m).

A worker of its own (``lim-q``, 16 slots, so that the limits and not the worker hold
the work back) over the session's stack:

- 20 runs of 4 customers, each a task of 0.5 s with ``concurrency: {key:
  "${input.customer}", limit: 2}``: at no instant do more than 2 of one customer run
  (from the tasks' own start and end marks, and from the coordinator's ``TaskStarted``
  and ``TaskSucceeded``), every run succeeds, and each customer's limiter holds nothing
  at the end;
- a burst of 100 runs of a task with ``rate_limit: {key, limit: 20, window_s: 2}``:
  the limiter never grants more than 20 in any 2 s (its ``PermitIssued`` times), and the
  rate the tasks started at is within 10 % of 10 a second.

``GET /v1/limits`` (and ``GET /v1/queues``' ``limits``) shows each customer's limiter:
its limit, nothing held or queued, 5 permits granted.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from stackkit import Stack, read_topic

from headwater.core import events as ev
from headwater.core.limits import limiter_id
from ops import localstack
from tests.polling import wait_until_async

QUEUE = "lim-q"
CUSTOMERS = ("acme", "globex", "initech", "umbrella")


@pytest.fixture(scope="module")
def limit_worker(stack: Stack) -> Iterator[localstack.Service]:
    """A worker of ``lim-q`` with 16 slots, stopped at the end."""
    worker = localstack.Service("worker-limits", (
        sys.executable, "-m", "services.worker", "--queue", QUEUE, "--tasks", "limit_tasks",
        "--concurrency", "16"))
    try:
        stack.start(worker)
        yield worker
    finally:
        stack.stop(worker)
        stack.services.remove(worker)


async def _submit(client: httpx.AsyncClient, wid: str, spec: dict[str, Any],
                  inp: dict[str, Any]) -> None:
    r = await client.post("/v1/workflows", json={"id": wid, "workflow": spec, "input": inp,
                                                 "queue_anyway": True})
    assert r.status_code == 202, r.text


async def _all_succeeded(client: httpx.AsyncClient, ids: list[str], timeout_s: float,
                         ) -> list[dict[str, Any]]:
    async def views() -> list[dict[str, Any]]:
        return [(await client.get(f"/v1/workflows/{w}")).json() for w in ids]
    done = await wait_until_async(views, timeout_s, f"{len(ids)} runs ended", until=lambda vs:
                                  all(v.get("status") in ("succeeded", "failed", "cancelled")
                                      for v in vs))
    assert [v["status"] for v in done] == ["succeeded"] * len(ids), done
    return done


async def _histories(stack: Stack, ids: list[str], limiters: dict[str, type],
                     count: int) -> dict[str, list[ev.HistoryEvent]]:
    """The events of the runs ``ids`` up to their ends, and of each limiter up to its
    ``count``-th event of the given type (a limiter never ends), by workflow id."""
    def done(records: list[Any]) -> bool:
        ended = {r.workflow_id for r in records if r.terminal}
        seen = {lid: sum(1 for r in records if r.workflow_id == lid
                         and isinstance(r.body, body)) for lid, body in limiters.items()}
        return ended >= set(ids) and all(n >= count for n in seen.values())
    records = await read_topic(stack.topics.events, done, 120)
    out: dict[str, list[ev.HistoryEvent]] = {}
    for r in records:
        out.setdefault(r.workflow_id, []).append(r)
    return out


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most spans open at one instant (an end before a start at the same time)."""
    marks = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans],
                   key=lambda m: (m[0], m[1]))
    most = now = 0
    for _, step in marks:
        now += step
        most = max(most, now)
    return most


async def test_a_concurrency_key_holds_two_per_customer(
        stack: Stack, limit_worker: localstack.Service) -> None:
    tag = f"c{int(time.time() * 1000) % 10**8}"
    spec = {"name": "per-customer", "nodes": [
        {"id": "work", "task": "lim.hold", "queue": QUEUE,
         "input": {"customer": "${input.customer}", "seconds": 0.5},
         "concurrency": {"key": "${input.customer}", "limit": 2}}],
        "output": "${nodes.work.output}"}
    ids = [f"lim-{tag}-{i}" for i in range(20)]
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await asyncio.gather(*(_submit(client, wid, spec, {"customer": f"{tag}-{CUSTOMERS[i % 4]}"})
                               for i, wid in enumerate(ids)))
        views = await _all_succeeded(client, ids, 180)
        marks: dict[str, list[tuple[float, float]]] = {}
        for v in views:
            out = v["output"]
            marks.setdefault(out["customer"], []).append((out["start"], out["end"]))
        assert sorted(len(m) for m in marks.values()) == [5, 5, 5, 5]
        most = {c: _most_at_once(m) for c, m in marks.items()}
        assert set(most.values()) == {2}, most  # the limit held, and was used
        histories = await _histories(stack, ids, {limiter_id("concurrency", c): ev.PermitReleased
                                                  for c in marks}, 5)
        coordinator: dict[str, list[tuple[float, float]]] = {}
        for wid, v in zip(ids, views, strict=True):
            events = histories[wid]
            start = next(e.body.at_ms for e in events if isinstance(e.body, ev.TaskStarted))
            end = next(e.body.at_ms for e in events if isinstance(e.body, ev.TaskSucceeded))
            assert any(isinstance(e.body, ev.TaskHeld) for e in events), wid
            coordinator.setdefault(v["output"]["customer"], []).append((start, end))
        assert {c: _most_at_once(m) for c, m in coordinator.items()} == {c: 2 for c in marks}
        for c in marks:
            events = histories[limiter_id("concurrency", c)]
            issued = [e.body for e in events if isinstance(e.body, ev.PermitIssued)]
            assert len(issued) == 5 and max(b.holding for b in issued) == 2
            released = [e.body for e in events if isinstance(e.body, ev.PermitReleased)]
            assert len(released) == 5 and released[-1].holding == 0
            assert released[-1].queued == 0
        async def limits() -> list[dict[str, Any]]:
            doc = (await client.get("/v1/limits", params={"limit": 500})).json()
            return [i for i in doc["items"] if i["key"].startswith(f"{tag}-")]
        shown = await wait_until_async(limits, 60, "the 4 limiters projected", until=lambda
                                       items: len(items) == 4 and all(
                                           i["granted"] == 5 for i in items))
        assert {(i["kind"], i["limit"], i["holding"], i["queued"]) for i in shown} == {
            ("concurrency", 2, 0, 0)}
        queues = (await client.get("/v1/queues")).json()
        assert {i["limiter"] for i in shown} <= {i["limiter"] for i in queues["limits"]}
        one = (await client.get(f"/v1/workflows/{shown[0]['limiter']}")).json()
        assert one["status"] == "running", one  # a limiter is a run that never ends
        spans = [m for ms in marks.values() for m in ms]
        print(f"\nconcurrency: 20 runs of 4 customers, limit 2: at most {most} at once; "
              f"all done in {max(e for _, e in spans) - min(s for s, _ in spans):.2f} s")


async def test_a_rate_limit_holds_under_a_burst(
        stack: Stack, limit_worker: localstack.Service) -> None:
    tag = f"r{int(time.time() * 1000) % 10**8}"
    key = f"api-{tag}"
    limit, window_s, burst = 20, 2.0, 100
    spec = {"name": "rated", "nodes": [
        {"id": "call", "task": "lim.call", "queue": QUEUE, "input": {"i": "${input.i}"},
         "rate_limit": {"key": key, "limit": limit, "window_s": window_s}}],
        "output": "${nodes.call.output}"}
    ids = [f"rate-{tag}-{i}" for i in range(burst)]
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await asyncio.gather(*(_submit(client, wid, spec, {"i": i})
                               for i, wid in enumerate(ids)))
        views = await _all_succeeded(client, ids, 180)
    starts = sorted(v["output"]["start"] for v in views)
    lid = limiter_id("rate", key)
    events = (await _histories(stack, ids, {lid: ev.PermitIssued}, burst))[lid]
    granted = sorted(e.body.at_ms for e in events if isinstance(e.body, ev.PermitIssued))
    assert len(granted) == burst
    window_ms = window_s * 1000
    busiest = max(sum(1 for u in granted if t <= u < t + window_ms) for t in granted)
    assert busiest == limit, busiest
    # After the first window's 20, the rest come 20 a window: (100 - 20) over 4 windows.
    rate = (burst - limit) / (starts[-1] - starts[0])
    expected = limit / window_s
    print(f"\nrate: {burst} runs, {limit} per {window_s:g} s: measured {rate:.2f}/s "
          f"(limit {expected:.2f}/s), the busiest {window_s:g} s of grants held {busiest}")
    assert abs(rate - expected) <= 0.1 * expected, rate


async def test_units_a_task_reports_count_instead_of_those_asked(
        stack: Stack, limit_worker: localstack.Service) -> None:
    """Six runs each asking 50 units of 100 per 30 s: by what they ask, two a window (90
    s for six); each reports it used 5, so all six start in the first window."""
    tag = f"u{int(time.time() * 1000) % 10**8}"
    spec = {"name": "used", "nodes": [
        {"id": "call", "task": "lim.used", "queue": QUEUE,
         "input": {"i": "${input.i}", "units": 5},
         "rate_limit": {"key": f"tokens-{tag}", "limit": 100, "window_s": 30, "units": 50}}],
        "output": "${nodes.call.output}"}
    ids = [f"used-{tag}-{i}" for i in range(6)]
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await asyncio.gather(*(_submit(client, wid, spec, {"i": i})
                               for i, wid in enumerate(ids)))
        views = await _all_succeeded(client, ids, 25)
    starts = sorted(v["output"]["start"] for v in views)
    assert starts[-1] - starts[0] < 25, starts
    lid = limiter_id("rate", f"tokens-{tag}")
    events = (await _histories(stack, ids, {lid: ev.PermitReleased}, 6))[lid]
    assert {e.body.units for e in events if isinstance(e.body, ev.PermitReleased)} == {5}


async def test_a_defined_limit_governs_over_the_specs(
        stack: Stack, limit_worker: localstack.Service) -> None:
    """``PUT /v1/limits/{key}`` with a concurrency of 1 for a key whose spec says 3: six
    runs of 0.3 s never run two at once; the definition is in the limiter's history."""
    tag = f"d{int(time.time() * 1000) % 10**8}"
    key = f"pool-{tag}"
    spec = {"name": "defined", "nodes": [
        {"id": "work", "task": "lim.hold", "queue": QUEUE,
         "input": {"customer": key, "seconds": 0.3},
         "concurrency": {"key": key, "limit": 3}}], "output": "${nodes.work.output}"}
    ids = [f"def-{tag}-{i}" for i in range(6)]
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        put = await client.put(f"/v1/limits/{key}", json={"concurrency": {"limit": 1}})
        assert put.status_code == 202, put.text
        assert put.json()["limits"][0]["limiter"] == limiter_id("concurrency", key)
        bad = await client.put(f"/v1/limits/{key}", json={"concurrency": {"limit": 0}})
        assert bad.status_code == 422 and "limit must be an integer" in bad.text, bad.text
        await _submit(client, ids[0], spec, {})
        lid = limiter_id("concurrency", key)
        await asyncio.gather(*(_submit(client, wid, spec, {}) for wid in ids[1:]))
        views = await _all_succeeded(client, ids, 60)
    spans = [(v["output"]["start"], v["output"]["end"]) for v in views]
    assert _most_at_once(spans) == 1, spans
    events = (await _histories(stack, ids, {lid: ev.PermitReleased}, 6))[lid]
    first = [type(e.body).__name__ for e in events[:3]]
    assert first == ["WorkflowAccepted", "LimitDefined", "PermitRequested"], first
    assert max(e.body.holding for e in events if isinstance(e.body, ev.PermitIssued)) == 1
