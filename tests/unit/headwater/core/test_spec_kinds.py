"""Spec parsing of the node kinds beyond tasks and maps (wait, sleep, workflow, loop) and
of ``when`` conditions: what each builds, and every fault named."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.kinds.loop.records import LoopSpec, ToolSpec
from headwater.core.kinds.sleep.records import SleepSpec
from headwater.core.kinds.wait.records import SignalField, WaitSpec
from headwater.core.retry import RetryPolicy
from headwater.core.spec import NodeKind, parse_spec
from headwater.core.spec.kinds import ChildSpec
from headwater.errors import SpecError


def node(node_id: str, *needs: str, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "task": f"t.{node_id}", "needs": list(needs), **extra}


def kind(node_id: str, kind_name: str, *needs: str, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "kind": kind_name, "needs": list(needs), **extra}


def doc(*nodes: Any, **top: Any) -> dict[str, Any]:
    return {"name": "wf", "nodes": list(nodes), **top}


def faults_of(document: Any) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(document)
    return info.value.faults


CHILD = {"name": "child", "nodes": [{"id": "x", "task": "t.x"}]}


def test_a_wait_node() -> None:
    spec = parse_spec(doc(kind("w", "wait", signal="approval", timeout=30,
                               fields={"approved": "boolean",
                                       "note": {"type": "string", "required": False}})))
    w = spec.node("w")
    assert (w.kind, w.task, w.timeout, w.fans_out) == (NodeKind.WAIT, "", 30.0, False)
    assert w.wait == WaitSpec("approval", (SignalField("approved", "boolean"),
                                           SignalField("note", "string", required=False)))
    assert w.retry == RetryPolicy()  # a wait is never retried


def test_a_wait_takes_only_its_own_timeout_and_may_fan_out() -> None:
    spec = parse_spec(doc(node("list"), kind("w", "wait", "list", signal="ok",
                                             over="${nodes.list.output}"),
                          timeout=5, retry={"max_attempts": 3}))
    w = spec.node("w")
    assert (w.timeout, w.over, w.fans_out, w.wait) == (None, "${nodes.list.output}", True,
                                                       WaitSpec("ok", ()))
    assert spec.node("list").timeout == 5.0


def test_sleep_nodes() -> None:
    spec = parse_spec(doc(kind("a", "sleep", duration=2.5),
                          kind("b", "sleep", until="2025-06-01T12:00:00Z"),
                          kind("c", "sleep", until="${input.at}")))
    assert spec.node("a").sleep == SleepSpec(duration=2.5)
    assert spec.node("b").sleep == SleepSpec(until="2025-06-01T12:00:00Z")
    assert spec.node("c").sleep == SleepSpec(until="${input.at}")
    assert spec.node("a").task == "" and spec.node("a").timeout is None


def test_a_workflow_node() -> None:
    spec = parse_spec(doc(kind("c", "workflow", workflow=CHILD, input={"q": "${input.q}"},
                               timeout=60, retry={"max_attempts": 3}),
                          kind("m", "workflow", workflow=CHILD, over="${input.xs}",
                               max_concurrency=2, input="${item}")))
    c, m = spec.node("c"), spec.node("m")
    assert c.child == ChildSpec(workflow=CHILD) and c.task == ""
    assert (c.timeout, c.retry.max_attempts, c.fans_out) == (60.0, 3, False)
    assert (m.fans_out, m.max_concurrency) == (True, 2)


def test_a_loop_node() -> None:
    spec = parse_spec(doc(kind("l", "loop", decide="agent.decide", queue="gpu", timeout=20,
                               max_steps=5, budget=1000, on_exhausted="finish",
                               tools=["search", {"name": "read", "task": "docs.read",
                                                 "queue": "io", "timeout": 5,
                                                 "retry": {"max_attempts": 2}}])))
    loop = spec.node("l")
    assert (loop.task, loop.queue, loop.timeout) == ("agent.decide", "gpu", 20.0)
    assert loop.loop == LoopSpec(
        tools=(ToolSpec("search", "search", "gpu", RetryPolicy(), 20.0, 30.0),
               ToolSpec("read", "docs.read", "io", RetryPolicy(max_attempts=2), 5.0, 30.0)),
        max_steps=5, on_exhausted="finish", budget=1000.0)
    assert loop.loop.tool("read") is loop.loop.tools[1] and loop.loop.tool("x") is None


def test_when_on_any_node() -> None:
    spec = parse_spec(doc(node("a"), node("b", "a", when="${nodes.a.output.ok} == true"),
                          kind("s", "sleep", "a", duration=1, when="${input.slow}")))
    assert spec.node("b").when == "${nodes.a.output.ok} == true"
    assert spec.node("s").when == "${input.slow}"


def test_a_nested_child_is_validated_with_its_own_children() -> None:
    grandchild = {"name": "g", "nodes": [{"id": "y", "task": "t.y", "needs": ["nope"]}]}
    child = {"name": "c", "nodes": [kind("inner", "workflow", workflow=grandchild)]}
    assert faults_of(doc(kind("outer", "workflow", workflow=child))) == [
        "node 'outer': workflow: node 'inner': workflow: node 'y': needs unknown node 'nope'"]


def test_children_nest_at_most_8_deep_and_deeper_ones_are_refused_without_recursion() -> None:
    def nested(levels: int) -> dict[str, Any]:
        document: dict[str, Any] = {"name": "leaf", "nodes": [{"id": "x", "task": "t"}]}
        for i in range(levels):
            document = {"name": f"n{i}", "nodes": [kind("c", "workflow", workflow=document)]}
        return document
    assert parse_spec(nested(8)).node("c").child is not None
    assert faults_of(nested(9)) == faults_of(nested(5000)) == [
        "node 'c': workflow: inline children nest more than 8 deep"]


FAULTS: list[tuple[str, dict[str, Any], str]] = [
    # when
    ("when: attribute access", doc(node("a"), node("b", "a", when="${nodes.a.output}.x")),
     "node 'b': when: ${nodes.a.output}.x: attribute access is not allowed"),
    ("when: a call", doc(node("a", when="len(${input.xs}) > 1")),
     "node 'a': when: len(${input.xs}) > 1: a call is not allowed"),
    ("when: unknown name", doc(node("a", when="label == 'x'")),
     "node 'a': when: label == 'x': unknown name 'label'"),
    ("when: syntax", doc(node("a", when="${input.x} ==")),
     "node 'a': when: ${input.x} ==: not a valid expression"),
    ("when: a subscript", doc(node("a", when="${input.x}[0]")), "a subscript is not allowed"),
    ("when: not a string", doc(node("a", when=True)), "node 'a': when must be a condition"),
    ("when: empty", doc(node("a", when="  ")), "node 'a': when must be a condition"),
    ("when: not upstream", doc(node("a"), node("b", when="${nodes.a.output} == 1")),
     "node 'b': when: ${nodes.a.output}: node 'a' is not upstream: add 'a' to the needs of "
     "node 'b'"),
    ("when: unknown node", doc(node("a", when="${nodes.z.output} == 1")),
     "node 'a': when: ${nodes.z.output}: unknown reference to node 'z'"),
    ("when: unknown root", doc(node("a", when="${env.HOME} == 1")),
     "unknown reference root 'env'"),
    ("when: ${item} in a map's when",
     doc(node("m", kind="map", over="${input.xs}", when="${item} == 1")),
     "node 'm': when: ${item}: ${item} is only defined in a map node's input"),
    ("when: ${error} outside a handler", doc(node("a", when="${error.type} == 'x'")),
     "${error} is only defined in the input of an error handler"),
    # wait
    ("wait without signal", doc(kind("w", "wait")), "node 'w': signal: required"),
    ("wait with a bad signal name", doc(kind("w", "wait", signal="a b")),
     "node 'w': signal: required, a name matching"),
    ("wait with a task", doc(kind("w", "wait", signal="s", task="t")),
     "node 'w': 'task' does not apply to a wait node"),
    ("wait with a retry", doc(kind("w", "wait", signal="s", retry={"max_attempts": 2})),
     "node 'w': 'retry' does not apply to a wait node"),
    ("wait with input", doc(kind("w", "wait", signal="s", input={"x": 1})),
     "node 'w': 'input' does not apply to a wait node"),
    ("wait fields not a mapping", doc(kind("w", "wait", signal="s", fields=["a"])),
     "node 'w': fields must be a mapping of field name to type"),
    ("wait field of an unknown type", doc(kind("w", "wait", signal="s", fields={"a": "date"})),
     "node 'w': fields: a: type must be one of string, number, integer, boolean, object, "
     "array, any"),
    ("wait field with an unknown key",
     doc(kind("w", "wait", signal="s", fields={"a": {"type": "string", "min": 1}})),
     "node 'w': fields: a: unknown field 'min'"),
    ("wait field required not a flag",
     doc(kind("w", "wait", signal="s", fields={"a": {"type": "string", "required": "no"}})),
     "node 'w': fields: a: required must be true or false"),
    ("wait with max_concurrency",
     doc(kind("w", "wait", signal="s", over="${input.xs}", max_concurrency=2)),
     "node 'w': a wait has no max_concurrency"),
    ("wait with a bad over", doc(kind("w", "wait", signal="s", over="xs")),
     "node 'w': 'over' must be a reference to a list"),
    ("two waits for one signal", doc(kind("a", "wait", signal="s"), kind("b", "wait", signal="s")),
     "signal 's' is waited for by both 'a' and 'b'; give each wait its own signal"),
    # sleep
    ("sleep with neither", doc(kind("s", "sleep")),
     "node 's': a sleep needs exactly one of 'duration' (seconds) and 'until'"),
    ("sleep with both", doc(kind("s", "sleep", duration=1, until="2025-01-01T00:00:00Z")),
     "a sleep needs exactly one of"),
    ("sleep duration 0", doc(kind("s", "sleep", duration=0)),
     "node 's': duration must be a positive number of seconds"),
    ("sleep until no instant", doc(kind("s", "sleep", until="tomorrow")),
     "node 's': until must be an RFC 3339 date-time with a UTC offset"),
    ("sleep until without offset", doc(kind("s", "sleep", until="2025-01-01T00:00:00")),
     "node 's': until must be an RFC 3339"),
    ("sleep until no real date", doc(kind("s", "sleep", until="2025-02-30T00:00:00Z")),
     "node 's': until must be an RFC 3339"),
    ("sleep until a malformed reference", doc(kind("s", "sleep", until="${nodes.a}")),
     "node 's': until: ${nodes.a}: expected ${nodes.<id>.output...}"),
    ("sleep until not upstream", doc(node("a"), kind("s", "sleep", until="${nodes.a.output}")),
     "node 's': until: ${nodes.a.output}: node 'a' is not upstream"),
    ("sleep with a timeout", doc(kind("s", "sleep", duration=1, timeout=3)),
     "node 's': 'timeout' does not apply to a sleep node"),
    # workflow
    ("workflow without a spec", doc(kind("c", "workflow")),
     "node 'c': a workflow node needs 'workflow:', the child's spec"),
    ("workflow by definition", doc(kind("c", "workflow", definition="billing")),
     "node 'c': definition: definition references are resolved by the gateway: submit "
     "through HTTP, or give the child inline"),
    ("workflow with an invalid child", doc(kind("c", "workflow", workflow={"name": "x"})),
     "node 'c': workflow: nodes: required, a non-empty list"),
    ("workflow child not a mapping", doc(kind("c", "workflow", workflow="child.yaml")),
     "node 'c': workflow: spec must be a mapping"),
    ("workflow with a heartbeat timeout",
     doc(kind("c", "workflow", workflow=CHILD, heartbeat_timeout=5)),
     "node 'c': 'heartbeat_timeout' does not apply to a workflow node"),
    ("workflow max_concurrency without over",
     doc(kind("c", "workflow", workflow=CHILD, max_concurrency=2)),
     "node 'c': max_concurrency needs 'over'"),
    ("workflow ${item} without over", doc(kind("c", "workflow", workflow=CHILD, input="${item}")),
     "${item} is only defined in a map node's input"),
    # loop
    ("loop without decide", doc(kind("l", "loop", tools=["t"], max_steps=3)),
     "node 'l': decide: required, a registered task name"),
    ("loop with task", doc(kind("l", "loop", task="t", decide="d", tools=["t"], max_steps=3)),
     "node 'l': 'task' does not apply to a loop node (a loop names its task with 'decide:')"),
    ("loop without tools", doc(kind("l", "loop", decide="d", max_steps=3)),
     "node 'l': tools: required, a non-empty list of tools"),
    ("loop max_steps missing", doc(kind("l", "loop", decide="d", tools=["t"])),
     "node 'l': max_steps: required, an integer from 1 to 1000"),
    ("loop max_steps too many", doc(kind("l", "loop", decide="d", tools=["t"], max_steps=1001)),
     "max_steps: required, an integer from 1 to 1000"),
    ("loop on_exhausted", doc(kind("l", "loop", decide="d", tools=["t"], max_steps=2,
                                   on_exhausted="retry")),
     "node 'l': on_exhausted must be fail or finish"),
    ("loop budget", doc(kind("l", "loop", decide="d", tools=["t"], max_steps=2, budget=-1)),
     "node 'l': budget must be a positive number"),
    ("loop duplicate tool", doc(kind("l", "loop", decide="d", tools=["t", {"name": "t"}],
                                     max_steps=2)),
     "node 'l': tools[1]: duplicate tool name 't'"),
    ("loop tool unknown field", doc(kind("l", "loop", decide="d", max_steps=2,
                                         tools=[{"name": "t", "colour": "red"}])),
     "node 'l': tools[0]: unknown field 'colour'"),
    ("loop tool bad queue", doc(kind("l", "loop", decide="d", max_steps=2,
                                     tools=[{"name": "t", "queue": "a b"}])),
     "node 'l': tools[0]: queue must match"),
    ("loop tool without name", doc(kind("l", "loop", decide="d", max_steps=2,
                                        tools=[{"task": "t"}])),
     "node 'l': tools[0]: name: required"),
    ("loop tool bad retry", doc(kind("l", "loop", decide="d", max_steps=2,
                                     tools=[{"name": "t", "retry": {"max_attempts": 0}}])),
     "node 'l': tools[0]: retry: max_attempts must be"),
    ("loop tool not a mapping", doc(kind("l", "loop", decide="d", max_steps=2, tools=[3])),
     "node 'l': tools[0]: a tool is a task name or a mapping with 'name'"),
    ("loop with over", doc(kind("l", "loop", decide="d", tools=["t"], max_steps=2,
                                over="${input.xs}")),
     "node 'l': 'over' and 'max_concurrency' belong to map nodes"),
    # kinds
    ("unknown kind", doc(node("a", kind="cron")),
     f"node 'a': kind must be one of "
     f"{[k.value for k in NodeKind if k not in ('limiter', 'cache')]}"),
    ("signal on a task", doc(node("a", signal="s")),
     "node 'a': 'signal' does not apply to a task node"),
]


@pytest.mark.parametrize(("name", "document", "fault"), FAULTS, ids=[f[0] for f in FAULTS])
def test_each_fault_is_named(name: str, document: dict[str, Any], fault: str) -> None:
    faults = faults_of(document)
    assert any(fault in f for f in faults), faults
