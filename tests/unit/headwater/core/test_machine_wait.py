"""State-machine tables: ``wait`` nodes and signals.

The shape is A -> W (waits for ``approval``, 10 s timeout) -> B throughout, and a wait per
item of a list for the map cases. Every case also checks that folding the history
through ``evolve`` gives the whole state (the signals kept and the ids seen included).
"""

from __future__ import annotations

from typing import Any

import golden_codec as gc
import pytest
from machine_harness import (
    T0,
    WF,
    Case,
    cancel,
    check_case,
    check_history,
    fired,
    has,
    ok,
    replay,
    run,
    spec,
    submit,
    task,
)

from headwater.core import events as ev
from headwater.core.machine import inputs, step
from headwater.core.state import TimerState
from headwater.core.status import NodeStatus

FIELDS = {"approved": "boolean", "note": {"type": "string", "required": False}}


def wait(node_id: str = "w", *needs: str, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "kind": "wait", "signal": "approval", "fields": FIELDS,
            "needs": list(needs), "timeout": 10, **extra}


def signal(fields: Any = None, *, sid: str = "s1", index: int | None = None,
           at: int = T0 + 50, name: str = "approval") -> ev.SignalSent:
    return ev.SignalSent(WF, name, at, index, sid, {"approved": True} if fields is None
                         else fields)


def shape(**w_extra: Any) -> dict[str, Any]:
    return spec(task("a"), wait("w", "a", **w_extra), task("b", "w", input="${nodes.w.output}"))


PLAIN = shape()
ROUTED = spec(task("a"), wait("w", "a", on_error="h"), task("b", "w"), task("h"))
KEEP_GOING = shape(continue_on_error=True)
STARTED_AT = T0 + 100  # when ok("a") arrives
TIMEOUT = "wait:w"
DUE = STARTED_AT + 10_000
APPROVED = {"approved": True}
TAKEN = {"approved": True, "note": None}
"""A wait's output for ``APPROVED``: the optional field it left out is there, null."""
REJECTED = {"approved": False, "note": None}
AFTER_A: list[ev.Input] = [ok("a", "A")]
PER_ITEM = spec(task("list"), wait("w", "list", over="${nodes.list.output}"),
                task("b", "w", input="${nodes.w.output}"))
PER_ITEM_SOFT = spec(task("list"), wait("w", "list", over="${nodes.list.output}",
                                        continue_on_error=True),
                     task("b", "w", input="${nodes.w.output}"))
LISTED: list[ev.Input] = [ok("list", ["x", "y", "z"])]


def _timeout_error(index: int | None = None) -> dict[str, Any]:
    where = "approval" if index is None else f"approval[{index}]"
    return {"node": "w", "index": index, "attempts": 1, "type": "TimeoutError",
            "message": f"no signal {where} within 10 s"}


CASES = [
    Case("the wait starts when A succeeds, its timeout timer in state.timers",
         PLAIN, given=[], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("WaitStarted", {"node": "w", "index": None, "signal": "approval",
                                  "timeout_at_ms": DUE})],
         state={"nodes.w.status": "running", f"timers.{TIMEOUT}.fire_at_ms": DUE,
                f"timers.{TIMEOUT}.attempt": 0}),
    Case("a signal before its wait is recorded and kept",
         PLAIN, given=[], when=signal(),
         events=[("SignalSent", {"name": "approval", "signal_id": "s1"})],
         state={"signals": {"approval": [{"signal_id": "s1", "fields": APPROVED,
                                          "at_ms": T0 + 50}]},
                "signal_ids": ["s1"], "nodes.w.status": "pending"}),
    Case("a signal kept before its wait is taken when the wait starts",
         PLAIN, given=[signal()], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("WaitStarted", {"node": "w"}),
                 ("SignalConsumed", {"node": "w", "signal_id": "s1", "fields": TAKEN}),
                 ("NodeFinished", {"node": "w", "status": "succeeded"}),
                 ("TaskDispatched", {"node": "b", "input": TAKEN})],
         state={"signals": {}, "timers": {}, "outputs.w": TAKEN}),
    Case("a signal while the wait waits is taken at once; its timer goes",
         PLAIN, given=AFTER_A, when=signal(at=T0 + 200),
         events=[("SignalSent", {}), ("SignalConsumed", {"node": "w", "index": None}),
                 ("NodeFinished", {"node": "w", "status": "succeeded"}),
                 ("TaskDispatched", {"node": "b", "input": TAKEN})],
         state={"timers": {}, "signals": {}, "signal_ids": ["s1"]}),
    Case("the same signal id twice (taken): nothing",
         PLAIN, given=[*AFTER_A, signal(at=T0 + 200)], when=signal(at=T0 + 300),
         events=[]),
    Case("a second signal before its wait is discarded at once; the first stays kept",
         PLAIN, given=[signal()], when=signal({"approved": False}, sid="s2", at=T0 + 60),
         events=[("SignalDiscarded", {"signal_id": "s2", "name": "approval", "index": None,
                                      "reason": "signal s1 is already kept for wait w"})],
         state={"signals": {"approval": [{"signal_id": "s1", "fields": APPROVED,
                                          "at_ms": T0 + 50}]},
                "signal_ids": ["s1", "s2"], "nodes.w.status": "pending"}),
    Case("... a third too, and none is kept once the wait took the first",
         PLAIN, given=[signal(), signal(sid="s2", at=T0 + 60), signal(sid="s3", at=T0 + 70)],
         when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("WaitStarted", {"node": "w"}),
                 ("SignalConsumed", {"node": "w", "signal_id": "s1"}),
                 ("NodeFinished", {"node": "w", "status": "succeeded"}),
                 ("TaskDispatched", {"node": "b", "input": TAKEN})],
         state={"signals": {}, "signal_ids": ["s1", "s2", "s3"]}),
    Case("a second signal without an id before its wait is discarded too",
         PLAIN, given=[signal(sid="")], when=signal(sid="", at=T0 + 60),
         events=[("SignalDiscarded", {"signal_id": "",
                                      "reason": "a signal is already kept for wait w"})],
         state={"signal_ids": []}),
    Case("the same signal id twice (both before the wait): nothing",
         PLAIN, given=[signal()], when=signal(at=T0 + 60), events=[],
         state={"signal_ids": ["s1"]}),
    Case("another signal after the wait took one is discarded",
         PLAIN, given=[*AFTER_A, signal(at=T0 + 200)], when=signal(sid="s2", at=T0 + 300),
         events=[("SignalDiscarded", {"signal_id": "s2",
                                      "reason": "wait w has already succeeded"})],
         state={"signal_ids": ["s1", "s2"]}),
    Case("signal, then its timeout in the same batch: the timer was dropped, nothing",
         PLAIN, given=[*AFTER_A, signal(at=DUE)], when=fired(TIMEOUT, DUE), events=[]),
    Case("timeout, then the signal in the same batch: the signal is discarded",
         KEEP_GOING, given=[*AFTER_A, fired(TIMEOUT, DUE)], when=signal(at=DUE),
         events=[("SignalDiscarded", {"reason": "wait w has already failed"})]),
    Case("an early firing of the timeout changes nothing",
         PLAIN, given=AFTER_A, when=fired(TIMEOUT, DUE - 1), events=[]),
    Case("the timeout fails the wait into its error route; B is skipped",
         ROUTED, given=AFTER_A, when=fired(TIMEOUT, DUE),
         events=[("TimerFired", {}),
                 ("NodeFinished", {"node": "w", "status": "failed",
                                   "error": "TimeoutError: no signal approval within 10 s"}),
                 ("TaskDispatched", {"node": "h", "input": {"error": _timeout_error()}}),
                 ("NodeFinished", {"node": "b", "status": "skipped"})],
         state={"timers": {}, "nodes.w.failure": _timeout_error()}),
    Case("the timeout of a continue_on_error wait: B runs and sees the error",
         KEEP_GOING, given=AFTER_A, when=fired(TIMEOUT, DUE),
         events=[("TimerFired", {}), ("NodeFinished", {"node": "w", "status": "failed"}),
                 ("TaskDispatched", {"node": "b", "input": {"error": _timeout_error()}})]),
    Case("the timeout without a route fails the workflow",
         PLAIN, given=AFTER_A, when=fired(TIMEOUT, DUE),
         events=[("TimerFired", {}), ("NodeFinished", {"node": "w", "status": "failed"}),
                 ("NodeFinished", {"node": "b", "status": "upstream_failed"}),
                 ("WorkflowFailed", {"error": has("no signal approval within 10 s")})]),
    Case("a wait without timeout has no timer",
         shape(timeout=None), given=[], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("WaitStarted", {"timeout_at_ms": None})],
         state={"timers": {}}),
    Case("a cancel while waiting cancels the wait and drops its timer",
         PLAIN, given=AFTER_A, when=cancel(),
         events=[("NodeFinished", {"node": "w", "status": "cancelled"}),
                 ("NodeFinished", {"node": "b", "status": "cancelled"}),
                 ("WorkflowCancelled", {})],
         state={"timers": {}}),
    Case("a signal for an ended workflow: nothing",
         PLAIN, given=[*AFTER_A, cancel()], when=signal(at=T0 + 600), events=[]),
    Case("a signal for a skipped wait is discarded",
         spec(task("a"), wait("w", "a", when="${nodes.a.output} == 'go'"), task("c")),
         given=AFTER_A, when=signal(at=T0 + 200),
         events=[("SignalDiscarded", {"reason": "wait w was skipped"})]),
    Case("an invalid signal that reached the machine is discarded with its fault",
         PLAIN, given=AFTER_A, when=signal({"approved": "yes"}, at=T0 + 200),
         events=[("SignalDiscarded", {"reason": has("'approved' must be true or false")})]),
    Case("a signal whose id cannot be stored is discarded without its id and name",
         PLAIN, given=AFTER_A,
         when=ev.SignalSent(WF, "appr\x00oval", T0 + 200, None, "x" * 300, APPROVED),
         events=[("SignalDiscarded", {"signal_id": "", "name": "", "reason": (
             "signal name must not contain control characters (U+0000 at 4)")})],
         state={"signal_ids": [], "nodes.w.status": "running"}),
    Case("... and one whose fields cannot be stored is discarded naming the field",
         PLAIN, given=AFTER_A, when=signal({"approved": True, "note": "a\x00"}, at=T0 + 200),
         events=[("SignalDiscarded", {"signal_id": "s1", "name": "approval",
                                      "reason": has("fields.note: contains U+0000")})]),
    # -- one wait per item ------------------------------------------------------------
    Case("a wait with over waits once per item, all at once",
         PER_ITEM, given=[], when=ok("list", ["x", "y", "z"]),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "list"}),
                 ("MapExpanded", {"node": "w", "count": 3}),
                 ("WaitStarted", {"index": 0}), ("WaitStarted", {"index": 1}),
                 ("WaitStarted", {"index": 2})],
         state={"nodes.w.running": 3, "timers.wait:w[1].index": 1}),
    Case("a signal for item 1 is taken by item 1 only",
         PER_ITEM, given=LISTED, when=signal({"approved": False}, index=1, at=T0 + 200),
         events=[("SignalSent", {"index": 1}),
                 ("SignalConsumed", {"node": "w", "index": 1})],
         state={"nodes.w.results": [None, REJECTED, None], "nodes.w.done": 1,
                "nodes.w.status": "running",
                "timers": {"wait:w[0]": TimerState(DUE, "w", 0, 0),
                           "wait:w[2]": TimerState(DUE, "w", 2, 0)}}),
    Case("the last item's signal finishes the wait; results keep input order",
         PER_ITEM, given=[*LISTED, signal(index=2, sid="s2", at=T0 + 200),
                          signal({"approved": False}, index=0, sid="s0", at=T0 + 210)],
         when=signal(index=1, at=T0 + 220),
         events=[("SignalSent", {}), ("SignalConsumed", {"index": 1}),
                 ("NodeFinished", {"node": "w", "status": "succeeded"}),
                 ("TaskDispatched", {"node": "b", "input": [REJECTED, TAKEN,
                                                            TAKEN]})],
         state={"timers": {}}),
    Case("a signal for an item before the list exists is kept for that item",
         PER_ITEM, given=[signal(index=2)], when=ok("list", ["x", "y", "z"]),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}), ("MapExpanded", {}),
                 ("WaitStarted", {"index": 0}), ("WaitStarted", {"index": 1}),
                 ("WaitStarted", {"index": 2}), ("SignalConsumed", {"index": 2})],
         state={"signals": {}, "nodes.w.done": 1}),
    Case("a second signal for an item that took one is discarded",
         PER_ITEM, given=[*LISTED, signal(index=1, at=T0 + 200)],
         when=signal(index=1, sid="s9", at=T0 + 300),
         events=[("SignalDiscarded", {"reason": "wait w[1] has already taken a signal"})]),
    Case("a signal for an item that timed out (continue_on_error) is discarded",
         PER_ITEM_SOFT, given=[*LISTED, fired("wait:w[1]", DUE)],
         when=signal(index=1, sid="s9", at=DUE + 1),
         events=[("SignalDiscarded", {"reason": "wait w[1] has already timed out"})]),
    Case("a second signal for an item before the list exists is discarded at once",
         PER_ITEM, given=[signal(index=1)], when=signal(index=1, sid="s2", at=T0 + 60),
         events=[("SignalDiscarded", {"signal_id": "s2", "index": 1,
                                      "reason": "signal s1 is already kept for wait w[1]"})],
         state={"signals": {"approval[1]": [{"signal_id": "s1", "fields": APPROVED,
                                             "at_ms": T0 + 50}]},
                "signal_ids": ["s1", "s2"]}),
    Case("... while a signal for another item is kept too",
         PER_ITEM, given=[signal(index=1)], when=signal(index=2, sid="s2", at=T0 + 60),
         events=[("SignalSent", {"index": 2, "signal_id": "s2"})],
         state={"signals.approval[1]": [{"signal_id": "s1", "fields": APPROVED,
                                         "at_ms": T0 + 50}],
                "signals.approval[2]": [{"signal_id": "s2", "fields": APPROVED,
                                         "at_ms": T0 + 60}]}),
    Case("an item's timeout fails the whole wait; the other items' timers go",
         PER_ITEM, given=LISTED, when=fired("wait:w[0]", DUE),
         events=[("TimerFired", {}),
                 ("NodeFinished", {"node": "w", "status": "failed",
                                   "error": "TimeoutError: no signal approval[0] within 10 s"}),
                 ("NodeFinished", {"node": "b", "status": "upstream_failed"}),
                 ("WorkflowFailed", {})],
         state={"timers": {}}),
    Case("with continue_on_error an item's timeout is its result; the others go on",
         PER_ITEM_SOFT, given=[*LISTED, signal(index=0, at=T0 + 200)],
         when=fired("wait:w[1]", DUE), events=[("TimerFired", {})],
         state={"nodes.w.results": [TAKEN, {"error": _timeout_error(1)}, None],
                "nodes.w.failed": 1, "nodes.w.status": "running"}),
    Case("... and the last item ends the wait failed, B seeing every result",
         PER_ITEM_SOFT, given=[*LISTED, signal(index=0, at=T0 + 200),
                               fired("wait:w[1]", DUE)],
         when=signal(index=2, sid="s2", at=DUE + 1),
         events=[("SignalSent", {}), ("SignalConsumed", {"index": 2}),
                 ("NodeFinished", {"node": "w", "status": "failed",
                                   "error": "1 of 3 items of w failed"}),
                 ("TaskDispatched", {"node": "b", "input": [
                     TAKEN, {"error": _timeout_error(1)}, TAKEN]})]),
    Case("a wait over an empty list succeeds at once",
         PER_ITEM, given=[], when=ok("list", []),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}), ("MapExpanded", {"count": 0}),
                 ("NodeFinished", {"node": "w", "status": "succeeded"}),
                 ("TaskDispatched", {"node": "b", "input": []})]),
    Case("a wait over something that is not a list fails",
         PER_ITEM, given=[], when=ok("list", {"x": 1}),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("NodeFinished", {"node": "w", "status": "failed",
                                   "error": has("'over' gave dict, not a list")}),
                 ("NodeFinished", {"node": "b", "status": "upstream_failed"}),
                 ("WorkflowFailed", {})]),
]


def check_whole_replay(history: list[ev.HistoryEvent], state: Any) -> None:
    """Folding the history gives the whole state, signals and their ids included."""
    assert gc.state_doc(replay(history)) == gc.state_doc(state)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_wait_table(case: Case) -> None:
    result = check_case(case)
    check_whole_replay(result.history, result.state)


@pytest.mark.parametrize("order", ["signal first", "timeout first"])
def test_a_signal_racing_the_timeout_has_exactly_one_outcome(order: str) -> None:
    race: list[ev.Input] = [signal(at=DUE), fired(TIMEOUT, DUE)]
    result = run([submit(KEEP_GOING), *AFTER_A, *(race if order == "signal first"
                                                   else reversed(race))])
    check_history(result.history, result.state)
    check_whole_replay(result.history, result.state)
    consumed = result.bodies(ev.SignalConsumed)
    failed = [e for e in result.bodies(ev.NodeFinished) if e.node == "w" and e.status == "failed"]
    assert len(consumed) + len(failed) == 1
    assert result.state is not None and result.state.timers == {}
    if order == "signal first":
        assert result.bodies(ev.TimerFired) == [] and result.bodies(ev.SignalDiscarded) == []
    else:
        (discarded,) = result.bodies(ev.SignalDiscarded)
        assert discarded.signal_id == "s1"


def test_a_signal_for_an_unknown_workflow_is_deferred_and_kept_at_start() -> None:
    """A signal that overtook its submission waits for it, and the wait (a root) takes
    it when it starts."""
    doc = spec(wait("w"), task("b", "w", input="${nodes.w.output}"))
    early = step(None, signal(at=T0 - 5))
    assert early.deferred and early.events == [] and early.state is None
    result = inputs.start(submit(doc), [signal(at=T0 - 5)])
    types = [e.type for e in result.events]
    assert types == ["WorkflowAccepted", "SignalSent", "WaitStarted", "SignalConsumed",
                     "NodeFinished", "TaskDispatched"]
    check_history(result.events, result.state)
    check_whole_replay(result.events, result.state)


def test_a_signal_without_fields_gives_an_empty_object() -> None:
    doc = spec(task("a"), {"id": "w", "kind": "wait", "signal": "go", "needs": ["a"]})
    result = run([submit(doc), ok("a"), ev.SignalSent(WF, "go", T0 + 200)])
    assert result.state is not None and result.state.status.value == "succeeded"
    assert result.state.outputs["w"] == {}
    assert result.state.nodes["w"].status is NodeStatus.SUCCEEDED


@pytest.mark.parametrize(("index", "reason"), [
    (7, "wait w has 3 items: w[7] is not one"), (3, "wait w has 3 items: w[3] is not one")])
def test_a_kept_signal_no_item_takes_is_discarded_when_its_wait_starts(
        index: int, reason: str) -> None:
    """Before its wait starts, a signal's index cannot be judged (its items are not
    known): it is kept. Once they are, one that none takes is discarded with the reason,
    and leaves the kept signals (it was kept for good before: a breaker's finding)."""
    early = signal(index=index, sid="early")
    out = run([submit(PER_ITEM), early, signal(index=0, sid="fine"),
               ok("list", ["x", "y", "z"])])
    assert out.state is not None
    discarded = [e.body for e in out.history if isinstance(e.body, ev.SignalDiscarded)]
    assert [(d.signal_id, d.reason) for d in discarded] == [(early.signal_id, reason)]
    assert out.state.signals == {}
    assert out.state.signal_ids.count(early.signal_id) == 1
    consumed = [e.body.signal_id for e in out.history if isinstance(e.body, ev.SignalConsumed)]
    assert consumed == ["fine"]
    check_history(out.history, out.state)


def test_a_kept_signal_without_an_id_stays_kept() -> None:
    out = run([submit(PER_ITEM), signal(index=7, sid=""), ok("list", ["x"])])
    assert out.state is not None
    assert not [e for e in out.history if isinstance(e.body, ev.SignalDiscarded)]
    assert list(out.state.signals) == ["approval[7]"]
