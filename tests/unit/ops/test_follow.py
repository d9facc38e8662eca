"""The CLI's live view of a workflow (``headwater submit --follow``): what it shows of
waits, sleeps, conditions, child workflows and loops, fed the events of machine-made
histories as the SSE stream gives them (the body's fields as JSON)."""

from __future__ import annotations

import kind_histories
import orjson
from machine_harness import T0, WF
from rich.console import Console

from headwater.core import events as ev
from headwater.core.ids import child_id
from ops.cli.follow import FollowState


def follow(history: list[ev.HistoryEvent]) -> tuple[FollowState, list[str]]:
    state, notes = FollowState(), []
    for e in history:
        note = state.apply(e.type, e.seq, orjson.loads(orjson.dumps(e.body)))
        if note:
            notes.append(note)
    return state, notes


def test_a_wait_a_sleep_and_conditions_are_followed() -> None:
    state, notes = follow(kind_histories.waited().history)
    assert notes[:4] == ["approve: waiting on signal approval until 1970-01-01 00:17:40 UTC",
                         "signal approval received", "approve: took signal approval",
                         "approve: succeeded"]
    assert "pause: sleeping until 1970-01-01 00:16:45 UTC" in notes
    assert "refund: when is false" in notes and "ship: when is true" in notes
    assert state.status == "succeeded" and state.nodes["pause"].detail == ""


def test_the_table_shows_what_a_node_is_doing_now() -> None:
    state, _ = follow(kind_histories.sleeping().history)
    assert state.nodes["pause"].status == "running"
    assert state.nodes["pause"].detail == "sleeping until 1970-01-01 00:16:45 UTC"
    console = Console(width=120, record=True)
    console.print(state.render())
    assert "sleeping until 1970-01-01 00:16:45 UTC" in console.export_text()


def test_signals_for_items_and_discarded_ones_are_named() -> None:
    _, notes = follow(kind_histories.per_item().history)
    assert "approve[0]: waiting on signal approval" in notes
    assert "signal approval[1] received" in notes
    assert "approve[1]: took signal approval" in notes
    assert "signal approval[0] discarded: wait approve has already succeeded" in notes


def test_each_loop_step_names_its_tool() -> None:
    state, notes = follow(kind_histories.looped().history)
    assert [n for n in notes if "loop step" in n] == ["agent: loop step 0: search",
                                                      "agent: loop step 1: finish"]
    assert state.nodes["agent"].attempts == 3


def test_a_child_started_and_a_childs_link_are_shown() -> None:
    _, child_notes = follow(kind_histories.child().history)
    assert child_notes[0] == "child of p (c attempt 1)"
    parent = kind_histories.PARENT
    dispatched = ev.HistoryEvent(WF, 2, ev.TaskDispatched(WF, "c", None, 1, "workflow", "cpu",
                                                          {"q": 1}, T0))
    started = ev.HistoryEvent(WF, 3, ev.TaskStarted(WF, "c", None, 1, T0 + 5,
                                                    child_id(WF, "c", None, 1)))
    state, notes = follow([ev.HistoryEvent(WF, 1, ev.WorkflowAccepted(WF, T0, parent, None)),
                           dispatched, started])
    assert notes == [f"c: child workflow {WF}:c:1 started"]
    assert state.nodes["c"].detail == f"child {WF}:c:1 running"
    _, plain = follow([ev.HistoryEvent(WF, 2, ev.TaskDispatched(WF, "a", None, 1, "t.a", "cpu",
                                                                None, T0)),
                       ev.HistoryEvent(WF, 3, ev.TaskStarted(WF, "a", None, 1, T0, "w1"))])
    assert plain == []


def test_a_restart_is_a_line_of_its_own_and_the_nodes_start_over() -> None:
    """``restart_on_failure``: the lost attempt's restart is printed with its reason, and
    the view's nodes go back to pending, so the second ``succeeded`` of a node reads as
    the new generation's."""
    from machine_harness import fired, ok, run, spec, started, submit, task

    doc = spec(task("a"), task("b", "a", heartbeat_timeout=2), restart_on_failure=True)
    history = run([submit(doc), started("a"), ok("a", "A", at=T0 + 60),
                   ev.TaskStarted(WF, "b", None, 1, T0 + 70, "worker-9"),
                   fired("lease:b:1", T0 + 2070)]).history
    state, notes = follow(history)
    line = next(n for n in notes if n.startswith("restarted"))
    assert "generation 2" in line and "b attempt 1 was lost" in line and "worker-9" in line
    assert notes.index(line) > notes.index("a: succeeded")
    assert state.nodes["a"].status == "running" and state.nodes["a"].attempts == 1
    assert state.nodes["b"].status == "pending"
