"""What the node kinds add to ``GET /v1/workflows/{id}``, from projection rows (the SQL
that reads them runs on PostgreSQL in ``tests/e2e/test_kind_views.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from services.gateway.runs.views import KindRows, kind_view, node_extras

T = datetime(2027, 1, 15, 12, 0, tzinfo=UTC)
WF = "order-7"


def row(status: str = "running", **extra: Any) -> dict[str, Any]:
    return {"workflow_id": WF, "status": status, "parent_id": None, "parent_node": None,
            "parent_index": None, "parent_attempt": None, **extra}


def wait(node: str, index: int | None, status: str = "waiting", *,
         timeout: timedelta | None = None, **extra: Any) -> dict[str, Any]:
    return {"node": node, "idx": index, "signal": "approval", "status": status,
            "started_at": T, "timeout_at": T + timeout if timeout else None,
            "signal_id": "", "fields": None, "ended_at": None, **extra}


def node_row(status: str, **extra: Any) -> dict[str, Any]:
    return {"status": status, "condition": None, "wake_at": None, **extra}


def step(node: str, k: int, **extra: Any) -> dict[str, Any]:
    return {"node": node, "step": k, "decided_at": T, "tool": "search", "input": {"q": k},
            "finish": False, "output": None, "spend": 1.0, "tool_status": "succeeded",
            "tool_attempt": 1, "tool_error": "", **extra}


SPEC_NODES: list[dict[str, Any]] = [
    {"id": "approve", "kind": "wait", "signal": "approval", "over": "${input.xs}"},
    {"id": "pause", "kind": "sleep", "duration": 30},
    {"id": "c", "kind": "workflow", "workflow": {"nodes": []}},
    {"id": "agent", "kind": "loop", "decide": "t.decide", "tools": ["search"], "max_steps": 5},
    {"id": "refund", "task": "t.refund", "when": "${input.kind} == 'refund'"},
]


def test_a_child_links_to_its_parent_and_a_parent_lists_its_children() -> None:
    child = kind_view("p-1:c:2", row(workflow_id="p-1:c:2", parent_id="p-1", parent_node="c",
                                     parent_index=None, parent_attempt=2),
                      [], {}, [], KindRows())
    assert child["parent"] == {"workflow_id": "p-1", "node": "c", "index": None, "attempt": 2,
                               "via": "workflow",
                               "links": {"self": "/v1/workflows/p-1",
                                         "events": "/v1/workflows/p-1/events"}}
    first = {"workflow_id": f"{WF}:c:1", "status": "failed", "parent_node": "c",
             "parent_index": None, "parent_attempt": 1}
    # Attempt 2 is dispatched but its child's acceptance is not projected yet.
    tasks = [{"node": "c", "idx": None, "attempt": 2, "status": "dispatched"}]
    parent = kind_view(WF, row(), SPEC_NODES, {}, tasks, KindRows(children=[first]))
    assert parent["parent"] is None
    assert [(c["workflow_id"], c["attempt"], c["status"]) for c in parent["children"]] == [
        (f"{WF}:c:1", 1, "failed"), (f"{WF}:c:2", 2, None)]
    assert parent["children"][1]["links"]["self"] == f"/v1/workflows/{WF}:c:2"
    assert {c["via"] for c in parent["children"]} == {"workflow"}


def test_a_ctx_call_child_shows_its_caller_and_its_caller_lists_it() -> None:
    call_id = f"{WF}:fetch.3:call.1"
    child = kind_view(call_id, row(workflow_id=call_id, parent_id=WF, parent_node="fetch",
                                   parent_index=3, parent_attempt=2), [], {}, [], KindRows())
    assert child["parent"] is not None
    assert (child["parent"]["workflow_id"], child["parent"]["node"], child["parent"]["index"],
            child["parent"]["attempt"], child["parent"]["via"]) == (WF, "fetch", 3, 2, "call")
    called = {"workflow_id": call_id, "status": "cancelled", "parent_node": "fetch",
              "parent_index": 3, "parent_attempt": 2}
    parent = kind_view(WF, row(), SPEC_NODES, {}, [], KindRows(children=[called]))
    assert [(c["workflow_id"], c["status"], c["via"]) for c in parent["children"]] == [
        (call_id, "cancelled", "call")]


def test_a_retry_wait_or_another_nodes_task_is_no_child() -> None:
    tasks = [{"node": "c", "idx": None, "attempt": 3, "status": "retry_wait"},
             {"node": "refund", "idx": None, "attempt": 1, "status": "running"}]
    assert kind_view(WF, row(), SPEC_NODES, {}, tasks, KindRows())["children"] == []


def test_open_waits_and_the_next_wake_up_are_shown_while_running() -> None:
    waits = {"approve": [wait("approve", 0, timeout=timedelta(minutes=5)),
                         wait("approve", 1, "signalled", signal_id="s1", fields={"ok": True}),
                         wait("approve", 2)]}
    nodes = {"pause": node_row("running", wake_at=T + timedelta(minutes=1)),
             "approve": node_row("running")}
    doc = kind_view(WF, row(), SPEC_NODES, nodes, [], KindRows(waits=waits))
    assert doc["waiting"] == [
        {"node": "approve", "index": 0, "signal": "approval", "since": T.isoformat(),
         "timeout_at": (T + timedelta(minutes=5)).isoformat()},
        {"node": "approve", "index": 2, "signal": "approval", "since": T.isoformat(),
         "timeout_at": None}]
    assert doc["next_wakeup"] == {"at": (T + timedelta(minutes=1)).isoformat(),
                                  "node": "pause", "index": None, "reason": "sleep"}
    nodes["pause"] = node_row("succeeded", wake_at=T + timedelta(minutes=1))
    later = kind_view(WF, row(), SPEC_NODES, nodes, [], KindRows(waits=waits))
    assert later["next_wakeup"] == {"at": (T + timedelta(minutes=5)).isoformat(),
                                    "node": "approve", "index": 0, "reason": "wait timeout"}
    ended = kind_view(WF, row("cancelled"), SPEC_NODES, nodes, [], KindRows(waits=waits))
    assert ended["waiting"] == [] and ended["next_wakeup"] is None


def test_signals_are_listed_with_what_became_of_them() -> None:
    signals = [{"name": "approval", "idx": None, "signal_id": "s1", "status": "consumed",
                "node": "approve", "reason": "", "fields": {"ok": True}, "at": T},
               {"name": "approval", "idx": None, "signal_id": "s2", "status": "discarded",
                "node": "", "reason": "the wait has ended", "fields": None, "at": T}]
    doc = kind_view(WF, row(), SPEC_NODES, {}, [], KindRows(signals=signals))
    assert doc["signals"] == [
        {"name": "approval", "index": None, "signal_id": "s1", "status": "consumed",
         "node": "approve", "reason": "", "fields": {"ok": True}, "at": T.isoformat()},
        {"name": "approval", "index": None, "signal_id": "s2", "status": "discarded",
         "node": None, "reason": "the wait has ended", "fields": None, "at": T.isoformat()}]


def test_each_kind_adds_its_own_fields_to_its_node() -> None:
    kinds = KindRows(
        waits={"approve": [wait("approve", 0, "signalled", signal_id="s1", fields={"ok": 1},
                                ended_at=T)]},
        steps={"agent": [step("agent", 0, spend=2.5),
                         step("agent", 1, tool="", input=None, finish=True,
                              output={"answer": 1}, spend=0.5, tool_status=None,
                              tool_attempt=None, tool_error=None),
                         ]})
    approve, pause, c, agent, refund = SPEC_NODES
    assert node_extras(approve, node_row("running"), kinds) == {
        "signal": "approval", "waits": [{"index": 0, "status": "signalled",
                                         "since": T.isoformat(), "timeout_at": None,
                                         "signal_id": "s1", "fields": {"ok": 1},
                                         "ended_at": T.isoformat()}]}
    assert node_extras(approve, None, KindRows()) == {"signal": "approval", "waits": []}
    assert node_extras(pause, node_row("running", wake_at=T), kinds) == {
        "wake_at": T.isoformat()}
    assert node_extras(c, None, kinds) == {}
    loop = node_extras(agent, node_row("succeeded"), kinds)
    assert loop["spent"] == 3.0
    assert loop["steps"][0] == {
        "step": 0, "decided_at": T.isoformat(), "tool": "search", "input": {"q": 0},
        "finish": False, "output": None, "spend": 2.5,
        "tool_task": {"key": "agent[1]", "status": "succeeded", "attempt": 1, "error": ""}}
    assert loop["steps"][1]["finish"] is True and loop["steps"][1]["tool"] is None
    assert loop["steps"][1]["tool_task"] is None
    assert node_extras(refund, None, kinds) == {"condition": None}
    assert node_extras(refund, node_row("skipped", condition=False), kinds) == {
        "condition": False}
