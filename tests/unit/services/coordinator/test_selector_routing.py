"""Where the coordinator sends the dispatches of a node that requires tags
(``records.dispatch_topic``): to its queue's selector topic for those tags, every item
of a map and every attempt alike, decided from the recorded spec alone; a node without
requirements keeps ``tasks.<queue>``."""

from __future__ import annotations

from typing import Any

from headwater.codec import decode
from headwater.core import events as ev
from headwater.core.machine import Step, step
from headwater.topics import Topics
from services.coordinator.records import encode_outputs

TOPICS = Topics("unit-needs")
AT = 1_700_000_000_000
MAX = 1_000_000
SPEC: dict[str, Any] = {"name": "sel", "nodes": [
    {"id": "plain", "task": "t.plain"},
    {"id": "big", "task": "t.big", "queue": "ml", "requires": ["gpu", "a100"]},
    {"id": "each", "kind": "map", "task": "t.each", "over": "${input.xs}",
     "requires": ["gpu"], "retry": {"max_attempts": 2, "backoff_base": 1, "backoff_max": 1}}]}


def _routes(result: Step) -> dict[str, str]:
    out = encode_outputs(TOPICS, result.events, MAX, result.state)
    return {decode(o.value).dispatch_id: o.topic for o in out
            if o.topic != TOPICS.events and isinstance(decode(o.value), ev.TaskDispatched)}


def test_each_dispatch_goes_to_the_topic_of_its_nodes_tags() -> None:
    first = step(None, ev.WorkflowSubmitted("r", SPEC, {"xs": [1, 2]}, AT, "t"))
    assert _routes(first) == {
        "r/plain/1": TOPICS.tasks("cpu"),
        "r/big/1": TOPICS.needs("ml", ["a100", "gpu"]),
        "r/each[0]/1": TOPICS.needs("cpu", ["gpu"]),
        "r/each[1]/1": TOPICS.needs("cpu", ["gpu"])}
    failed = step(first.state, ev.TaskFailed("r", "each", 0, 1, AT + 5, "boom"))
    timer = [e.body for e in failed.events if isinstance(e.body, ev.TimerScheduled)]
    assert timer, [type(e.body).__name__ for e in failed.events]
    retried = step(failed.state, ev.TimerFired("r", timer[0].timer_id, timer[0].fire_at_ms))
    assert _routes(retried) == {"r/each[0]/2": TOPICS.needs("cpu", ["gpu"])}


def test_the_dispatch_records_no_requirement_of_its_own() -> None:
    """The choice is the spec's: the history's dispatch is the same as any other's."""
    first = step(None, ev.WorkflowSubmitted("r", SPEC, {"xs": []}, AT, "t"))
    big = next(e.body for e in first.events if isinstance(e.body, ev.TaskDispatched)
               and e.body.node == "big")
    assert big.queue == "ml" and big.task == "t.big"
