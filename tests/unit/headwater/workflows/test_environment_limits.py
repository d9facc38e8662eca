"""The test environment passes the records between held attempts and their limiters as
the coordinator does (``headwater/core/kinds/limiter/routing.py``): a spec with a
concurrency key or a rate limit runs to its end, its attempts held and granted in the
history, and the units a task reports reach its rate limiter."""

from __future__ import annotations

from typing import Any

import pytest

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


async def test_a_request_over_the_limiters_bound_is_retried_until_it_fits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from headwater.core.kinds.limiter import rules

    monkeypatch.setattr(rules, "MAX_QUEUED", 2)
    env = Environment()
    doc = {"name": "envbound", "nodes": [
        {"id": "m", "kind": "map", "task": "envlim.call", "queue": "cpu",
         "over": "${input.items}", "input": {"i": "${item}"},
         "retry": {"max_attempts": 20},
         "concurrency": {"key": "bound", "limit": 1}}], "output": "${nodes.m.output}"}
    out = await env.run(doc, {"items": [1, 2, 3, 4, 5, 6]}, id="envbound-1")
    assert out == [2, 4, 6, 8, 10, 12]
    lid = limiter_id("concurrency", "bound")
    history = env.history(lid)
    refused = [e.body for e in history if isinstance(e.body, ev.PermitRefused)]
    assert len(refused) >= 3 and {b.queued for b in refused} == {2}
    assert max(e.body.queued for e in history if isinstance(e.body, ev.PermitRequested)) == 2
    failed = [e.body for e in env.history("envbound-1") if isinstance(e.body, ev.TaskFailed)]
    assert {b.error_type for b in failed} == {"LimitQueueFull"}
    assert len(failed) == len(refused)
