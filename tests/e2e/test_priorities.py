"""Priorities on the real broker: one worker of concurrency 1 per queue, saturated.

Ordered: 40 ``low`` runs then 10 ``high`` ones of a 0.15 s task; the median wait of the
high ones (dispatch to start, both on the coordinator's clock, from the history) is a
fraction of the low ones'. No starvation: on a queue whose worker ages dispatches fast
(``HEADWATER_PRIORITY_AGING_S=0.5``), 8 ``low`` runs, then ``high`` ones submitted for
12 s, faster than the worker runs them: every low one starts while high ones keep
coming. ``GET /v1/queues`` shows the backlog per band meanwhile. From the CLI:
``headwater run NAME --priority high`` and ``headwater submit --priority high`` record
the run at the number ``high`` stands for.

The session's stack and gateway (submitted with ``queue_anyway``: the workers are the
test's own); the workers look for priority topics every half second
(``HEADWATER_LANES_S``), and a first run of each band warms them up (the coordinator
creates a band's topic with its first dispatch).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from stackkit import Stack, read_topic
from typer.testing import CliRunner

from headwater.core import events as ev
from headwater.core.priority import as_number
from ops import localstack
from ops.cli.app import app
from tests.polling import scaled, wait_until_async

NAP_S = 0.15
FAST = {"HEADWATER_ANNOUNCE_S": "0.5", "HEADWATER_LANES_S": "0.5"}


def _worker(name: str, queue: str) -> localstack.Service:
    return localstack.Service(name, (sys.executable, "-m", "services.worker", "--queue", queue,
                                     "--tasks", "priority_tasks", "--concurrency", "1"))


@pytest.fixture(scope="module")
def workers(stack: Stack) -> Iterator[None]:
    """One worker of ``prio-q`` (aging as by default) and one of ``prio-age-q`` (aging
    0.5 s a band), stopped and taken off the stack's processes at the end."""
    started = [_worker("worker-prio", "prio-q"), _worker("worker-prio-aged", "prio-age-q")]
    try:
        stack.start(started[0], FAST)
        stack.start(started[1], {**FAST, "HEADWATER_PRIORITY_AGING_S": "0.5"})
        yield
    finally:
        for s in started:
            stack.stop(s)
            stack.services.remove(s)


def _spec(task: str, queue: str) -> dict[str, Any]:
    return {"name": "prio", "nodes": [{"id": "nap", "task": task, "queue": queue,
                                       "input": {"s": NAP_S}}]}


async def _timings(stack: Stack, ids: set[str]) -> dict[str, tuple[int, int]]:
    """Each run's ``(dispatched at, started at)``, ms, once every one of ``ids`` ended."""
    def done(records: list[Any]) -> bool:
        return ids <= {r.workflow_id for r in records if r.terminal}

    records = await read_topic(stack.topics.events, done, scaled(180))
    out: dict[str, list[int]] = {}
    for r in records:
        if r.workflow_id in ids and isinstance(r.body, ev.TaskDispatched | ev.TaskStarted):
            out.setdefault(r.workflow_id, [0, 0])[
                isinstance(r.body, ev.TaskStarted)] = r.body.at_ms
    return {w: (d, s) for w, (d, s) in out.items()}


async def test_high_priority_runs_go_first_and_low_ones_are_not_starved(
        stack: Stack, workers: None) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        async def submit(task: str, queue: str, priority: str, wid: str) -> str:
            answer = await client.post("/v1/workflows", json={
                "id": wid, "workflow": _spec(task, queue), "priority": priority,
                "queue_anyway": True})
            assert answer.status_code == 202, answer.text
            return wid

        async def finished(wid: str) -> dict[str, Any]:
            done = await wait_until_async(lambda: client.get(f"/v1/workflows/{wid}"), 120,
                                          f"{wid} succeeded", until=lambda r:
                                          r.json()["status"] == "succeeded")
            return dict(done.json())

        # Warm up: each band's topic created and read by its queue's worker.
        warm = [await submit(task, queue, band, f"warm-{queue}-{band}")
                for task, queue in (("prio.nap", "prio-q"), ("prio.nap_aged", "prio-age-q"))
                for band in ("low", "high")]
        views = [await finished(w) for w in warm]
        assert [v["priority"] for v in views] == [2, 8, 2, 8]

        # Ordered: 40 low, then 10 high, on a saturated queue.
        lows = await asyncio.gather(*(submit("prio.nap", "prio-q", "low", f"low-{i}")
                                      for i in range(40)))
        highs = [await submit("prio.nap", "prio-q", "high", f"high-{i}") for i in range(10)]
        shown = await client.get("/v1/queues")
        by_band = next(q for q in shown.json()["queues"]
                       if q["queue"] == "prio-q")["backlog_by_priority"]
        times = await _timings(stack, set(lows) | set(highs))
        low_wait = statistics.median(s - d for w, (d, s) in times.items() if w in lows)
        high_wait = statistics.median(s - d for w, (d, s) in times.items() if w in highs)
        print(f"\nsaturated queue, concurrency 1, {NAP_S} s tasks: p50 wait of 10 high "
              f"runs {high_wait:.0f} ms, of 40 low runs {low_wait:.0f} ms; backlog by "
              f"priority just after submitting: {by_band}")
        assert high_wait * 3 < low_wait, (high_wait, low_wait)
        assert set(by_band) <= {"2", "8"}, by_band

        # No starvation: high runs keep coming faster than the worker runs them.
        aged = await asyncio.gather(*(submit("prio.nap_aged", "prio-age-q", "low",
                                             f"aged-low-{i}") for i in range(8)))
        stream: list[str] = []
        until = time.monotonic() + 12
        while time.monotonic() < until:
            stream += await asyncio.gather(*(submit(
                "prio.nap_aged", "prio-age-q", "high", f"aged-high-{len(stream) + j}")
                for j in range(2)))
            await asyncio.sleep(0.2)
        times = await _timings(stack, set(aged) | set(stream))
        last_high_dispatched = max(times[w][0] for w in stream)
        low_starts = sorted(times[w][1] - times[w][0] for w in aged)
        print(f"aging 0.5 s a band: {len(stream)} high runs over 12 s; the 8 low runs "
              f"started after {low_starts} ms; the last low one "
              f"{(last_high_dispatched - max(times[w][1] for w in aged)) / 1000:.1f} s "
              "before the last high one was dispatched")
        assert max(times[w][1] for w in aged) < last_high_dispatched


async def test_the_cli_runs_and_submits_at_the_priority_given(
        stack: Stack, workers: None, tmp_path: Any) -> None:
    spec = {**_spec("prio.nap", "prio-q"), "name": "prio-cli"}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        stored = await client.put("/v1/definitions/prio-cli", json={"workflow": spec})
        assert stored.status_code in (200, 201), stored.text
        (tmp_path / "prio.yaml").write_text(yaml.safe_dump(spec))
        for command in (["run", "prio-cli", "--id", "cli-run-high", "--timeout", "60"],
                        ["submit", str(tmp_path / "prio.yaml"), "--id", "cli-submit-high"]):
            result = await asyncio.to_thread(CliRunner().invoke, app, [
                *command, "--priority", "high", "--gateway", stack.gateway],
                env={"COLUMNS": "300"})
            assert result.exit_code == 0, result.output
        for wid in ("cli-run-high", "cli-submit-high"):
            done = await wait_until_async(lambda w=wid: client.get(f"/v1/workflows/{w}"), 120,
                                          f"{wid} succeeded", until=lambda r:
                                          r.json()["status"] == "succeeded")
            assert done.json()["priority"] == as_number("high") == 8, done.json()
