"""Table snapshots: ``dump_state`` / ``load_state`` (``services.coordinator.snapshot``)."""

from __future__ import annotations

import copy

import orjson
import pytest
from machine_harness import (
    T0,
    cancel,
    fail,
    map_node,
    ok,
    run,
    spec,
    started,
    submit,
    task,
)

from headwater.core import events as ev
from headwater.core.machine import step
from headwater.core.state import WorkflowState
from headwater.errors import DecodeError
from services.coordinator.snapshot import dump_state, load_state

DOC = spec(task("a", retry={"max_attempts": 3, "jitter": 0.5}),
           map_node("m", "${input.xs}", max_concurrency=2, retry={"max_attempts": 2}),
           task("z", "a", "m", input={"a": "${nodes.a.output}", "m": "${nodes.m.output}"}))
INPUT = {"xs": ["ü", {"deep": [1, 2.5, None]}, 3], "note": "漢字"}

STATES: dict[str, list[ev.Input]] = {
    "just submitted": [submit(DOC, INPUT)],
    "mid-run with a timer and progress": [
        submit(DOC, INPUT), fail("a"), started("m", index=0),
        ev.TaskProgressed("wf-1", "m", 0, 1, T0 + 60, 0.25, "a quarter"),
        ok("m", {"r": [1]}, index=1), fail("m", index=0, at=T0 + 70),
    ],
    "succeeded": [
        submit(DOC, INPUT), ok("a", "A"), ok("m", 0, index=0), ok("m", 1, index=1),
        ok("m", 2, index=2), ok("z", {"fin": True}),
    ],
    "cancelled": [submit(DOC, INPUT), fail("a"), cancel()],
    "invalid spec": [submit({"name": "x", "nodes": [{"id": "a"}]})],
}


def state_of(name: str) -> WorkflowState:
    result = run(STATES[name])
    assert result.state is not None
    return result.state


@pytest.mark.parametrize("name", STATES)
def test_round_trip(name: str) -> None:
    state = state_of(name)
    data = dump_state(state)
    loaded = load_state(data)
    assert loaded == state
    assert dump_state(loaded) == data
    assert orjson.loads(data)["v"] == 1


def test_loaded_state_steps_exactly_like_the_original() -> None:
    original = state_of("mid-run with a timer and progress")
    loaded = load_state(dump_state(original))
    assert loaded.timers == original.timers and loaded.timers
    follow_up: list[ev.Input] = [
        ev.TimerFired("wf-1", "retry:a:2", T0 + 2000), ok("a", "A", attempt=2, at=T0 + 2100),
        ev.TimerFired("wf-1", "retry:m[0]:2", T0 + 2200),
        ok("m", "M0", index=0, attempt=2, at=T0 + 2300),
    ]
    for item in follow_up:
        assert step(original, item).events == step(loaded, item).events
    assert dump_state(original) == dump_state(loaded)
    assert original.tasks["m[2]"].status.value == "dispatched"


def test_the_parsed_spec_is_not_stored_but_rebuilt() -> None:
    state = state_of("just submitted")
    doc = orjson.loads(dump_state(state))
    assert "_spec" not in doc and doc["spec_doc"] == DOC
    assert load_state(dump_state(state)).spec == state.spec


def _valid() -> dict[str, object]:
    return dict(orjson.loads(dump_state(state_of("mid-run with a timer and progress"))))


def _mutated(**changes: object) -> bytes:
    doc = copy.deepcopy(_valid())
    doc.update(changes)
    return orjson.dumps(doc)


def _without(key: str) -> bytes:
    doc = _valid()
    del doc[key]
    return orjson.dumps(doc)


GARBAGE: list[tuple[str, bytes]] = [
    ("empty", b""),
    ("not JSON", b"\x00\xffgarbage"),
    ("Avro", b"\xc3\x01" + b"\x00" * 12),
    ("JSON array", b"[1, 2]"),
    ("JSON null", b"null"),
    ("JSON string", b'"state"'),
    ("empty object", b"{}"),
    ("future version", _mutated(v=2)),
    ("no version", _without("v")),
    ("missing field", _without("tasks")),
    ("bad workflow status", _mutated(status="paused")),
    ("bad node status", _mutated(nodes={"a": {"status": "sleeping"}})),
    ("node not an object", _mutated(nodes={"a": 5})),
    ("nodes not an object", _mutated(nodes=[1])),
    ("unknown task field", _mutated(tasks={"a": {"status": "running", "colour": "red"}})),
    ("timer missing fields", _mutated(timers={"t": {"fire_at_ms": 1}})),
    ("truncated", dump_state(state_of("succeeded"))[:-5]),
]


@pytest.mark.parametrize("data", [d for _, d in GARBAGE], ids=[n for n, _ in GARBAGE])
def test_garbage_raises_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        load_state(data)
