"""``restart_on_failure`` at its edges: a worker still running an older generation's
attempt, a restart of a wide map, and a child workflow that waits for a signal.

Each test states what the feature promises (docs/specs.md, "Restart on failure";
``headwater.core.fencing``) and checks that it is kept."""

from __future__ import annotations

import pytest
from machine_harness import T0, WF, fired, map_node, ok, run, spec, started, submit, task

from headwater import codec
from headwater.core import events as ev
from headwater.core.fencing import stop_for
from headwater.core.spec import parse_spec
from headwater.errors import SpecError
from headwater.topics import Topics
from services.coordinator.records import encode_outputs

CHAIN = spec(task("a", heartbeat_timeout=2), task("b", "a", heartbeat_timeout=2),
             restart_on_failure=True)


def test_an_older_generations_attempt_still_running_is_told_to_stop() -> None:
    """``b`` attempt 1 is lost and the run restarts; generation 2 has dispatched only
    ``a``. The worker of ``b`` attempt 1 missed the ``TaskCancelled`` (it was cut off) and
    heartbeats again: fencing answers a report of an attempt that has ended with a stop
    (``fencing.stop_for``), as it does when the same lost attempt is retried instead.
    Here it answers nothing, so the old attempt runs on beside the new generation."""
    result = run([submit(CHAIN), started("a"), ok("a", "A", at=T0 + 60),
                  ev.TaskStarted(WF, "b", None, 1, T0 + 70, "worker-1"),
                  fired("lease:b:1", T0 + 2070)])
    state = result.state
    assert state is not None and state.generation == 2 and "b" not in state.tasks
    for report in (ev.TaskHeartbeated(WF, "b", None, 1, T0 + 3000),
                   ev.TaskProgressed(WF, "b", None, 1, T0 + 3001, 0.5, "half")):
        stop = stop_for(state, report)
        assert stop is not None, f"no stop for {type(report).__name__} of b attempt 1"
        assert (stop.node, stop.attempt) == ("b", 1)


def test_the_restart_of_a_wide_map_fits_the_record_limit_its_run_fits() -> None:
    """A map of 10,000 items whose every record fits a 1 MiB limit (a stock broker's
    ``message.max.bytes``; ``HEADWATER_MAX_MESSAGE_BYTES``) loses one item: the restart's
    records must fit too. ``WorkflowRestarted.dropped`` lists every task key (about
    100 bytes per item here), so the record is over 1 MiB, ``encode_outputs`` refuses
    it, and the coordinator dead-letters the lease's ``TimerFired`` and fails the run
    ("cannot apply TimerFired: ValueError: a record of 1079092 bytes exceeds the
    limit") instead of restarting it."""
    limit = 1 << 20
    node = "m" * 100
    doc = spec(map_node(node, "${input.xs}", heartbeat_timeout=2), restart_on_failure=True)
    before = run([submit(doc, {"xs": list(range(10_000))}),
                  ev.TaskStarted(WF, node, 0, 1, T0 + 50, "worker-1")])
    assert before.state is not None
    largest = max(len(codec.encode(e)) for e in before.history)
    assert largest < limit // 10, largest  # the run itself is far from the limit
    restarted = run([fired(f"lease:{node}[0]:1", T0 + 2050)], before.state)
    assert restarted.bodies(ev.WorkflowRestarted)
    encode_outputs(Topics("unit"), restarted.history, limit, restarted.state)


def test_a_spec_whose_child_waits_for_a_signal_cannot_restart() -> None:
    """A restart cancels the child of a ``workflow`` node and starts a new one under a
    new id (``<parent>:w:<attempt>``); a signal already sent to the old child is lost,
    and the new child waits for one nobody sends again, so its parent hangs. That is the
    reason a spec with a ``wait`` cannot use ``restart_on_failure`` (docs/specs.md), and it
    holds for a wait in a child (inline, or a definition the gateway inlined) as well:
    such a spec should be refused naming the wait, as a top-level one is."""
    child = {"name": "approve", "nodes": [{"id": "ok", "kind": "wait", "signal": "go"},
                                          {"id": "x", "task": "t.x", "needs": ["ok"]}]}
    doc = spec(task("a"), {"id": "w", "kind": "workflow", "workflow": child},
               restart_on_failure=True)
    with pytest.raises(SpecError) as caught:
        parse_spec(doc)
    assert any("restart_on_failure" in f and "wait" in f for f in caught.value.faults), (
        caught.value.faults)
