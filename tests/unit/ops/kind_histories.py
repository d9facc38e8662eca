"""Histories of the node kinds, made by the state machine, for the tests of the views
(timeline, follow, expected rows, stuck): a wait signalled then a sleep and a condition,
signals before and after a fanned-out wait, signals without ids kept before a wait, a
wait timing out, a loop and a child."""

from __future__ import annotations

from typing import Any

from machine_harness import T0, WF, Run, fired, ok, run, spec, submit, task

from headwater.core import events as ev

APPROVE = {"id": "approve", "kind": "wait", "signal": "approval", "timeout": 60,
           "fields": {"ok": "boolean"}}
WAIT_SLEEP_WHEN = spec(
    APPROVE, {"id": "pause", "kind": "sleep", "duration": 5, "needs": ["approve"]},
    task("refund", "pause", when="${nodes.approve.output.ok} == false"),
    task("ship", "pause", when="${nodes.approve.output.ok} == true"))
FOR_EVER = spec({"id": "approve", "kind": "wait", "signal": "approval",
                 "fields": {"ok": "boolean"}})
PER_ITEM = spec(task("draft"),
                {"id": "approve", "kind": "wait", "signal": "approval", "needs": ["draft"],
                 "over": "${nodes.draft.output}", "fields": {"ok": "boolean"}},
                task("publish", "approve"))
AFTER_DRAFT = spec(task("draft"), {**APPROVE, "needs": ["draft"]})
TIMING_OUT = spec({**APPROVE, "timeout": 1})
LOOP = spec({"id": "agent", "kind": "loop", "decide": "t.decide", "tools": ["search"],
             "max_steps": 3, "input": {"q": "${input.q}"}})
KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x"}]}
PARENT = spec({"id": "c", "kind": "workflow", "workflow": KID, "input": {"q": 1}})


def signal(at: int, index: int | None = None, signal_id: str = "s1",
           fields: Any = None) -> ev.SignalSent:
    """A signal ``approval`` for ``WF``."""
    return ev.SignalSent(WF, "approval", at, index, signal_id,
                         {"ok": True} if fields is None else fields)


def waited() -> Run:
    """approve signalled at +10, pause sleeps 5 s, ship runs (refund is skipped)."""
    return run([submit(WAIT_SLEEP_WHEN), signal(T0 + 10), fired("sleep:pause", T0 + 5010),
                ok("ship", "shipped", at=T0 + 6000)])


def sleeping() -> Run:
    """approve signalled at +10; pause sleeps until +5010."""
    return run([submit(WAIT_SLEEP_WHEN), signal(T0 + 10)])


def per_item() -> Run:
    """Item 1's signal comes before its wait starts, item 0's after; a second signal for
    item 0 comes once its wait has ended (discarded); publish is still running."""
    return run([submit(PER_ITEM), signal(T0 + 5, index=1, signal_id="early"),
                ok("draft", ["a", "b"], at=T0 + 10), signal(T0 + 20, index=0, signal_id="s0"),
                signal(T0 + 30, index=0, signal_id="late")])


def buffered() -> Run:
    """Two signals without an id come before approve starts: the first is kept (and taken
    when approve starts), the second discarded at once (one signal is kept per wait)."""
    return run([submit(AFTER_DRAFT), signal(T0 + 5, signal_id="", fields={"ok": True}),
                signal(T0 + 6, signal_id="", fields={"ok": False}), ok("draft", at=T0 + 10)])


def timed_out() -> Run:
    """approve times out after 1 s; the workflow fails."""
    return run([submit(TIMING_OUT), fired("wait:approve", T0 + 1000)])


def looped() -> Run:
    """agent: step 0 calls search, step 1 finishes."""
    return run([submit(LOOP, {"q": "rivers"}),
                ok("agent", {"tool": "search", "input": {"q": "rivers"}, "spend": 2},
                   index=0, at=T0 + 100),
                ok("agent", ["Nile"], index=1, at=T0 + 200),
                ok("agent", {"finish": "the Nile"}, index=2, at=T0 + 300)])


def child() -> Run:
    """The child workflow ``p:c:1`` of attempt 1 of node ``c`` of ``p``, accepted."""
    return run([ev.ChildSubmitted("p:c:1", "p", "c", None, 1, KID, {"q": 1}, T0)])
