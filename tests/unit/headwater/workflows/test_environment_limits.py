"""The test environment passes the records between held attempts and their limiters as
the coordinator does (``headwater/testing/permits.py``): a spec with a concurrency key or a
rate limit runs to its end, its attempts held and granted in the history, and the units
a task reports reach its rate limiter."""

from __future__ import annotations

from typing import Any

from headwater import TaskContext, task
from headwater.core import events as ev
from headwater.core.limits import limiter_id
from headwater.testing import Environment


@task(name="envlim.call", queue="cpu")
def call(ctx: TaskContext, i: int) -> int:
    ctx.report_units(3)
    return i * 2


def spec() -> dict[str, Any]:
    return {"name": "envlim", "nodes": [
        {"id": "m", "kind": "map", "task": "envlim.call", "queue": "cpu",
         "over": "${input.items}", "input": {"i": "${item}"},
         "concurrency": {"key": "${input.customer}", "limit": 2},
         "rate_limit": {"key": "api", "limit": 10, "window_s": 60, "units": 5}}],
        "output": "${nodes.m.output}"}


async def test_a_limited_map_runs_to_its_end() -> None:
    env = Environment()
    out = await env.run(spec(), {"items": [1, 2, 3, 4], "customer": "acme"})
    assert out == [2, 4, 6, 8]
    conc = env.history(limiter_id("concurrency", "acme"))
    assert max(e.body.holding for e in conc if isinstance(e.body, ev.PermitIssued)) == 2
    rate = env.history(limiter_id("rate", "api"))
    released = [e.body for e in rate if isinstance(e.body, ev.PermitReleased)]
    assert [b.units for b in released] == [3, 3, 3, 3]  # reported: 3 of the 5 asked
