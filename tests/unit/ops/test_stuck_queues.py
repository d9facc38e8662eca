"""``headwater stuck`` lists attempts waiting on a queue that cannot take them (no live
worker, or none serving the task), once the workers' announcements are given."""

from __future__ import annotations

from machine_harness import T0, run, spec, started, submit, task

from headwater.core import events as ev
from ops.history import Recorded
from ops.stuck import scan, unserved

GPU = spec(task("a", queue="gpu"), task("b", "a"))


def recorded(events: list[ev.HistoryEvent]) -> list[Recorded]:
    return [Recorded(e, i, e.body.at_ms) for i, e in enumerate(events)]


def test_an_attempt_on_a_queue_without_live_workers_is_listed() -> None:
    state = run([submit(GPU)]).state
    assert state is not None
    assert unserved(state, {"cpu": {"t.a"}}) == ("task a/1 waits on queue gpu, which has no "
                                                 "live worker")
    assert unserved(state, {"gpu": {"t.other"}}) == (
        "task a/1 waits on queue gpu, whose live workers do not serve task t.a")
    assert unserved(state, {"gpu": {"t.a"}}) is None
    running = run([submit(GPU), started("a")]).state
    assert running is not None and unserved(running, {}) is None  # a worker has it


def test_scan_lists_them_only_when_given_the_workers() -> None:
    histories = {"wf": recorded(run([submit(GPU)]).history)}
    assert scan(histories, T0 + 60_000).stuck == []
    (stuck,) = scan(histories, T0 + 60_000, serving={}).stuck
    assert stuck.workflow_id == "wf" and "no live worker" in stuck.reason
    assert scan(histories, T0 + 60_000, serving={"gpu": {"t.a"}}).stuck == []
