"""A code workflow's history stays bounded on the real stack: ``cv.loop`` (a
``@workflow`` with ``max_events=300``) runs 1,000 task steps, continuing as new every 50
steps, and ends with the sum of 0..999 in 20 generations. The core compares a
generation's events with the cap when an activation issues steps: at each such point
every generation on the events topic is within it (299 at most, at the last step's
dispatch); what follows the last one (that step's start and end, the ending
activation's dispatch, start and decision: 5 events) takes a generation past it, to 303
(the first 304 with the run's acceptance, the last 305 with its end; 6 events a step: an
activation's dispatch, start and decision, and its task's).
The same loop that never continues as new fails with ``HistoryTooLong`` named in the
run's error. The time the 1,000 steps took is printed (per step)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from code_kit import Workers, code_stack, ended, served, start_run
from stackkit import Stack, history

from headwater.core import events as ev
from tests.polling import scaled

STEPS, EVERY, CAP = 1000, 50, 300


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack with one ``cv`` worker on the code v1."""
    with code_stack(tmp_path_factory.mktemp("code-history")) as own:
        Workers(own).deploy("v1")
        yield own


def generations(events: list[ev.HistoryEvent]) -> list[list[ev.HistoryEvent]]:
    """The run's events cut at each ``WorkflowRestarted`` (which opens a generation)."""
    cut: list[list[ev.HistoryEvent]] = [[]]
    for e in events:
        if isinstance(e.body, ev.WorkflowRestarted):
            cut.append([])
        cut[-1].append(e)
    return cut


def last_step_dispatch(events: list[ev.HistoryEvent]) -> int:
    """The place of the generation's last step's ``TaskDispatched`` (where the core
    last compared the generation's events with ``max_events``)."""
    return max(i for i, e in enumerate(events) if isinstance(e.body, ev.TaskDispatched)
               and e.body.index is not None and e.body.index % 2 == 1)


async def test_a_long_loop_continues_as_new_under_its_cap(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        found = await served(client, "cv.loop", "v1")
        assert found["workflow"]["nodes"][0]["max_events"] == CAP, found
        began = time.monotonic()
        wid = await start_run(client, "cv.loop", {"total": STEPS, "every": EVERY})
        doc = await ended(client, wid, timeout_s=600)
        took = time.monotonic() - began
        assert doc["status"] == "succeeded", (doc["error"], stack.logs())
        assert doc["output"] == {"done": STEPS, "acc": sum(range(STEPS)),
                                 "generations": STEPS // EVERY}, doc["output"]
        assert doc["generation"] == STEPS // EVERY, doc["generation"]

        events = await history(stack, wid)
        cut = generations(events)
        assert len(cut) == STEPS // EVERY, [len(g) for g in cut]
        counted = [[e for e in g if not isinstance(e.body, ev.WorkflowRestarted)] for g in cut]
        checked = [last_step_dispatch(g) + 1 for g in counted]
        assert all(n <= CAP for n in checked), checked
        # After the last check: the last step's start and end, and the ending activation's
        # dispatch and decision (continue_as_new; in the last generation, finish, and the
        # node's and the run's end), which the step's report carried (a continuation: no
        # worker started it).
        after = [len(g) - n for g, n in zip(counted, checked, strict=True)]
        assert after == [4] * (len(cut) - 1) + [6], after
        restarts = [e.body for e in events if isinstance(e.body, ev.WorkflowRestarted)]
        assert all(r.continued for r in restarts), restarts
        assert [r.input["done"] for r in restarts] == list(range(EVERY, STEPS, EVERY))
        steps = [e for e in events if isinstance(e.body, ev.TaskSucceeded)
                 and e.body.index is not None and e.body.index % 2 == 1]
        assert len(steps) == STEPS, len(steps)
        first, last = events[0].body, events[-1].body
        assert isinstance(first, ev.WorkflowAccepted) and isinstance(last, ev.WorkflowSucceeded)
        on_record = (last.at_ms - first.at_ms) / 1000
        print(f"\n{STEPS} code steps in {on_record:.1f} s by the history "
              f"({1000 * on_record / STEPS:.1f} ms a step; {took:.1f} s as the client saw "
              f"it); {len(events)} events in {len(cut)} generations, at most "
              f"{max(len(g) for g in counted)} counted in one, {max(checked)} when its "
              f"last step was issued")
        assert took < scaled(600)


async def test_the_same_loop_without_continuing_fails_too_long(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await served(client, "cv.loop", "v1")
        wid = await start_run(client, "cv.loop", {"total": STEPS})
        doc = await ended(client, wid, timeout_s=300)
        assert doc["status"] == "failed", doc
        assert "HistoryTooLong" in doc["error"] and "max_events of 300" in doc["error"], \
            doc["error"]
        events = await history(stack, wid)
        assert not any(isinstance(e.body, ev.WorkflowRestarted) for e in events)
        assert CAP < len(events) < CAP + 20, len(events)
