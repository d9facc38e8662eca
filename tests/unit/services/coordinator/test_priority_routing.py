"""Where the coordinator sends the dispatches of a run of a priority
(``records.dispatch_topic``): to its queue's topic of that band, decided from the
recorded spec alone; the default keeps ``tasks.<queue>``; a node that requires tags keeps
its selector topic; a child workflow without a priority of its own is submitted at its
parent's."""

from __future__ import annotations

from typing import Any

from headwater.codec import decode
from headwater.core import events as ev
from headwater.core.machine import Step, step
from headwater.topics import Topics
from services.coordinator.records import encode_outputs

TOPICS = Topics("unit-prio")
AT = 1_700_000_000_000
MAX = 1_000_000
CHILD: dict[str, Any] = {"name": "child", "nodes": [{"id": "c", "task": "t.c"}]}


def _spec(**top: Any) -> dict[str, Any]:
    return {"name": "prio", **top, "nodes": [
        {"id": "plain", "task": "t.plain", "queue": "ml"},
        {"id": "each", "kind": "map", "task": "t.each", "over": "${input.xs}"},
        {"id": "gpu", "task": "t.gpu", "requires": ["gpu"]},
        {"id": "kid", "kind": "workflow", "workflow": CHILD},
        {"id": "own", "kind": "workflow", "workflow": {**CHILD, "priority": 1}}]}


def _routes(result: Step) -> dict[str, Any]:
    out = encode_outputs(TOPICS, result.events, MAX, result.state)
    routes: dict[str, Any] = {}
    for o in out:
        record = decode(o.value)
        if isinstance(record, ev.TaskDispatched) and o.topic != TOPICS.events:
            routes[record.dispatch_id] = o.topic
        elif isinstance(record, ev.ChildSubmitted):
            routes[record.node] = record.spec.get("priority")
    return routes


def test_a_runs_dispatches_go_to_the_topic_of_its_band() -> None:
    first = step(None, ev.WorkflowSubmitted("r", _spec(priority="high"), {"xs": [1]}, AT))
    assert _routes(first) == {
        "r/plain/1": TOPICS.priority("ml", 8), "r/each[0]/1": TOPICS.priority("cpu", 8),
        "r/gpu/1": TOPICS.needs("cpu", ["gpu"]), "kid": 8, "own": 1}


def test_the_default_keeps_the_queues_topic_and_submits_children_as_before() -> None:
    for spec in (_spec(), _spec(priority=5)):
        first = step(None, ev.WorkflowSubmitted("r", spec, {"xs": [1]}, AT))
        assert _routes(first) == {
            "r/plain/1": TOPICS.tasks("ml"), "r/each[0]/1": TOPICS.tasks("cpu"),
            "r/gpu/1": TOPICS.needs("cpu", ["gpu"]), "kid": None, "own": 1}


def test_the_history_records_the_priority_in_the_spec_alone() -> None:
    """A replay of the history routes as the first fold did: the dispatch holds no
    priority of its own, the accepted spec does."""
    first = step(None, ev.WorkflowSubmitted("r", _spec(priority=0), {"xs": []}, AT))
    accepted = next(e.body for e in first.events if isinstance(e.body, ev.WorkflowAccepted))
    assert accepted.spec["priority"] == 0 and first.state.spec.priority == 0
