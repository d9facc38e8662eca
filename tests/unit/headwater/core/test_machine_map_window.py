"""A map's window: the default in-flight bound and the most one step dispatches
(``headwater.core.kinds.map``), with the real constants and with small ones."""

from __future__ import annotations

from typing import Any

import pytest
from machine_harness import Run, cancel, check_history, fail, map_node, ok, run, spec, submit, task

from headwater.core import events as ev
from headwater.core.kinds import map as map_kind


def _map(*, width: int, **extra: Any) -> tuple[dict[str, Any], list[Any]]:
    """A map over ``input.items`` (``width`` numbers) with a fan-in after it."""
    doc = spec(map_node("m", "${input.items}", **extra),
               task("fan", "m", input={"all": "${nodes.m.output}"}))
    return doc, list(range(width))


def _dispatched(events: list[ev.HistoryEvent], node: str = "m") -> list[int | None]:
    """The item indexes of the ``TaskDispatched`` events of ``node``, in order."""
    return [e.body.index for e in events
            if isinstance(e.body, ev.TaskDispatched) and e.body.node == node]


def _step(done: Run, item: ev.Input) -> list[ev.HistoryEvent]:
    """Step ``item`` on ``done`` in place; the events it recorded."""
    more = run([item], done.state)
    done.state = more.state
    done.history.extend(more.history)
    return more.history


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """A default bound of 4 and at most 2 dispatches a step."""
    monkeypatch.setattr(map_kind, "DEFAULT_MAP_CONCURRENCY", 4)
    monkeypatch.setattr(map_kind, "STEP_DISPATCHES", 2)


def test_a_map_without_max_concurrency_dispatches_one_steps_window_first() -> None:
    """A step raises the children in flight by ``STEP_DISPATCHES`` (1,000) at most, up to
    ``DEFAULT_MAP_CONCURRENCY`` (4,000): the first step sends 1,000, the next one as
    many again."""
    doc, items = _map(width=2_500)
    done = run([submit(doc, {"items": items})])
    assert _dispatched(done.history) == list(range(map_kind.STEP_DISPATCHES))
    assert done.state is not None
    node = done.state.nodes["m"]
    assert (node.running, node.next_index, node.total) == (1_000, 1_000, 2_500)
    assert _dispatched(_step(done, ok("m", "r0", index=0))) == list(range(1_000, 2_000))
    assert _dispatched(_step(done, fail("m", index=7, retryable=False))) == []  # map failed
    check_history(done.history, done.state)


def test_the_rest_go_out_as_items_finish_and_the_results_keep_input_order(small: None) -> None:
    doc, items = _map(width=10)
    done = run([submit(doc, {"items": items})])
    assert _dispatched(done.history) == [0, 1]  # the step's window, below the bound of 4
    assert _dispatched(_step(done, ok("m", 0, index=0))) == [2, 3]
    assert _dispatched(_step(done, ok("m", 10, index=1))) == [4, 5]  # up to the bound
    assert _dispatched(_step(done, ok("m", 30, index=3))) == [6]  # one slot, one item
    for i in (2, 4, 5, 6):
        _step(done, ok("m", i * 10, index=i))
    assert done.state is not None and done.state.nodes["m"].next_index == 10
    for i in (7, 8, 9):
        _step(done, ok("m", i * 10, index=i))
    assert done.state.nodes["m"].status.value == "succeeded"
    assert done.state.outputs["m"] == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90]
    fan = [e.body for e in done.history
           if isinstance(e.body, ev.TaskDispatched) and e.body.node == "fan"]
    assert [b.input for b in fan] == [{"all": [i * 10 for i in range(10)]}]
    check_history(done.history, done.state)


def test_an_explicit_max_concurrency_above_the_window_is_reached_as_items_finish(
        small: None) -> None:
    doc, items = _map(width=12, max_concurrency=6)
    done = run([submit(doc, {"items": items})])
    assert _dispatched(done.history) == [0, 1]
    assert _dispatched(_step(done, ok("m", index=0))) == [2, 3]
    assert _dispatched(_step(done, ok("m", index=1))) == [4, 5]
    assert _dispatched(_step(done, ok("m", index=2))) == [6, 7]  # 5 in flight
    assert _dispatched(_step(done, ok("m", index=3))) == [8, 9]
    assert done.state is not None and done.state.nodes["m"].running == 6  # max_concurrency
    assert _dispatched(_step(done, ok("m", index=4))) == [10]  # a slot for a slot
    check_history(done.history, done.state)


def test_an_explicit_max_concurrency_below_the_bound_is_unchanged(small: None) -> None:
    doc, items = _map(width=5, max_concurrency=1)
    done = run([submit(doc, {"items": items})])
    assert _dispatched(done.history) == [0]
    assert _dispatched(_step(done, ok("m", index=0))) == [1]
    assert _dispatched(_step(done, ok("m", index=1))) == [2]
    check_history(done.history, done.state)


def test_a_failing_item_fails_the_map_and_nothing_more_goes_out(small: None) -> None:
    doc, items = _map(width=10)
    done = run([submit(doc, {"items": items})])
    events = _step(done, fail("m", index=1, retryable=False))
    assert _dispatched(events) == []
    assert [e.body.index for e in events if isinstance(e.body, ev.TaskCancelled)] == [0]
    assert done.state is not None and done.state.status.value == "failed"
    check_history(done.history, done.state)


def test_a_retried_item_keeps_its_slot(small: None) -> None:
    doc, items = _map(width=10, max_concurrency=2, retry={"max_attempts": 3})
    done = run([submit(doc, {"items": items})])
    events = _step(done, fail("m", index=0))
    assert [e.type for e in events] == ["TaskFailed", "TimerScheduled"]  # slot kept
    assert done.state is not None and done.state.nodes["m"].running == 2
    check_history(done.history, done.state)


def test_with_continue_on_error_a_failed_item_frees_its_slot(small: None) -> None:
    doc, items = _map(width=6, continue_on_error=True)
    done = run([submit(doc, {"items": items})])
    assert _dispatched(_step(done, fail("m", index=0, retryable=False))) == [2, 3]
    for i in range(1, 6):
        _step(done, ok("m", i, index=i))
    assert done.state is not None
    node = done.state.nodes["m"]
    assert (node.status.value, node.failed, node.done) == ("failed", 1, 6)
    assert node.results is not None and node.results[1:] == [1, 2, 3, 4, 5]
    assert _dispatched(done.history, "fan") == [None]  # the fan-in still runs
    check_history(done.history, done.state)


def test_items_that_cannot_be_dispatched_do_not_use_the_window(small: None) -> None:
    doc = spec(task("m", input={"x": "${item.x}"}, kind="map", over="${input.items}",
                    continue_on_error=True))
    items: list[Any] = [1, 2, 3, {"x": 4}, {"x": 5}, {"x": 6}]
    done = run([submit(doc, {"items": items})])
    failed = [e.body.index for e in done.history if isinstance(e.body, ev.TaskFailed)]
    assert failed == [0, 1, 2]
    assert _dispatched(done.history) == [3, 4]  # still something in flight
    check_history(done.history, done.state)


def test_a_map_dispatched_whole_before_the_bound_finishes_as_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A workflow that was running when the bound came: every item already out."""
    doc, items = _map(width=8)
    monkeypatch.setattr(map_kind, "DEFAULT_MAP_CONCURRENCY", 100)
    monkeypatch.setattr(map_kind, "STEP_DISPATCHES", 100)
    done = run([submit(doc, {"items": items}), ok("m", 0, index=0)])
    assert _dispatched(done.history) == list(range(8))
    monkeypatch.setattr(map_kind, "DEFAULT_MAP_CONCURRENCY", 2)
    monkeypatch.setattr(map_kind, "STEP_DISPATCHES", 2)
    for i in range(1, 8):
        assert _dispatched(_step(done, ok("m", i, index=i))) == []
    assert done.state is not None and done.state.outputs["m"] == list(range(8))
    check_history(done.history, done.state)


def test_a_map_half_out_above_the_new_bound_waits_for_slots(
        monkeypatch: pytest.MonkeyPatch) -> None:
    doc, items = _map(width=12, max_concurrency=8)
    monkeypatch.setattr(map_kind, "STEP_DISPATCHES", 100)
    done = run([submit(doc, {"items": items})])
    assert _dispatched(done.history) == list(range(8))
    monkeypatch.setattr(map_kind, "STEP_DISPATCHES", 2)
    assert _dispatched(_step(done, ok("m", index=0))) == [8]  # a slot for a slot
    assert _dispatched(_step(done, cancel())) == []
    check_history(done.history, done.state)


def test_a_map_past_a_lowered_default_dispatches_again_below_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The default bound lowered (an upgrade) under a map with more children in flight:
    none is dispatched until fewer than the new bound are, then the window refills."""
    doc, items = _map(width=14)
    monkeypatch.setattr(map_kind, "DEFAULT_MAP_CONCURRENCY", 10)
    monkeypatch.setattr(map_kind, "STEP_DISPATCHES", 100)
    done = run([submit(doc, {"items": items})])
    assert _dispatched(done.history) == list(range(10))
    monkeypatch.setattr(map_kind, "DEFAULT_MAP_CONCURRENCY", 4)
    for i in range(7):  # 9, 8, ... 3 in flight: none above the new bound of 4
        sent = _dispatched(_step(done, ok("m", i, index=i)))
        assert sent == ([] if i < 6 else [10]), (i, sent)
    assert done.state is not None and done.state.nodes["m"].running == 4
    for i in range(7, 14):
        _step(done, ok("m", i, index=i))
    assert done.state.outputs["m"] == list(range(14))
    check_history(done.history, done.state)


@pytest.mark.parametrize(("max_concurrency", "running", "limit"), [
    (None, 0, 1_000), (None, 999, 1_999), (None, 3_500, 4_000), (None, 9_500, 4_000),
    (3, 0, 3),
    (5_000, 0, 1_000), (5_000, 999, 1_999), (5_000, 4_500, 5_000)])
def test_in_flight_limit(max_concurrency: int | None, running: int, limit: int) -> None:
    assert map_kind.in_flight_limit(max_concurrency, running) == limit
