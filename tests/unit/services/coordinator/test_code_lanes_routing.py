"""Where the coordinator sends a code run's dispatches (``records.dispatch_topic``): a
run that recorded a ``code_version`` sends its activations, and its task steps on its
own queue, to the lane of that version; a step on another queue goes to that queue; a
child step is the child's submission; a run without a code version, and every task of
a graph workflow, goes to ``tasks.<queue>`` as before."""

from __future__ import annotations

from typing import Any

from headwater.codec import decode
from headwater.core import events as ev
from headwater.core.machine import Step, step
from headwater.core.state import WorkflowState
from headwater.topics import Topics
from services.coordinator.records import dispatch_topic, encode_outputs

TOPICS = Topics("unit-lanes")
AT = 1_700_000_000_000
MAX = 1_000_000
KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x"}]}


def _spec(code_version: str | None) -> dict[str, Any]:
    node: dict[str, Any] = {"id": "main", "kind": "code", "task": "wf.lanes", "queue": "cpu",
                            "input": "${input}"}
    if code_version is not None:
        node["code_version"] = code_version
    return {"name": "wf.lanes", "nodes": [node], "output": "${nodes.main.output}"}


DECISION = {"steps": [
    {"op": "task", "step": 0, "name": "t.same", "queue": "cpu", "input": 1},
    {"op": "task", "step": 1, "name": "t.gpu", "queue": "gpu", "input": 2},
    {"op": "child", "step": 2, "name": "kid", "workflow": KID, "input": 3}]}


def _run(code_version: str | None) -> tuple[Step, Step]:
    first = step(None, ev.WorkflowSubmitted("r", _spec(code_version), {}, AT, "t"))
    decided = step(first.state, ev.TaskSucceeded("r", "main", 0, 1, AT + 5, DECISION))
    return first, decided


def _routes(result: Step) -> dict[str, str]:
    """Dispatch id (or the child's id) -> the topic its record went to."""
    out = encode_outputs(TOPICS, result.events, MAX, result.state)
    routes = {}
    for o in out:
        if o.topic == TOPICS.events:
            continue
        sent = decode(o.value)
        routes[sent.dispatch_id if isinstance(sent, ev.TaskDispatched) else o.key.decode()] = (
            o.topic)
    return routes


def test_a_versioned_runs_activations_and_own_queue_steps_go_to_its_lane() -> None:
    first, decided = _run("v1")
    lane = TOPICS.lane("cpu", "wf.lanes", "v1")
    assert _routes(first) == {"r/main[0]/1": lane}
    assert _routes(decided) == {"r/main[1]/1": lane, "r/main[3]/1": TOPICS.tasks("gpu"),
                                "r:main.5:1": TOPICS.submissions}


def test_another_version_has_another_lane() -> None:
    first, _ = _run("v2")
    assert _routes(first) == {"r/main[0]/1": TOPICS.lane("cpu", "wf.lanes", "v2")}
    assert TOPICS.lane("cpu", "wf.lanes", "v2") != TOPICS.lane("cpu", "wf.lanes", "v1")


def test_a_run_without_a_code_version_keeps_its_queue() -> None:
    first, decided = _run(None)
    assert _routes(first) == {"r/main[0]/1": TOPICS.tasks("cpu")}
    assert _routes(decided) == {"r/main[1]/1": TOPICS.tasks("cpu"),
                                "r/main[3]/1": TOPICS.tasks("gpu"),
                                "r:main.5:1": TOPICS.submissions}


def test_the_rule_reads_the_state_alone() -> None:
    _, decided = _run("v1")
    state = decided.state
    assert isinstance(state, WorkflowState)
    dispatches = [e.body for e in decided.events if isinstance(e.body, ev.TaskDispatched)]
    same = next(d for d in dispatches if d.queue == "cpu")
    assert dispatch_topic(TOPICS, same, state) == TOPICS.lane("cpu", "wf.lanes", "v1")
    assert dispatch_topic(TOPICS, same, None) == TOPICS.tasks("cpu")  # no state: its queue
    graph = step(None, ev.WorkflowSubmitted("g", KID, {}, AT, "t"))
    (task,) = [e.body for e in graph.events if isinstance(e.body, ev.TaskDispatched)]
    assert dispatch_topic(TOPICS, task, graph.state) == TOPICS.tasks("cpu")
