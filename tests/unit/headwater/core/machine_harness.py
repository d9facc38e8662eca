"""Table harness for ``headwater.core.machine.step``: given inputs, when an input, then
events and state.

Each ``Case`` runs its ``given`` inputs through ``step`` (the submission of ``spec`` first,
unless ``submit`` is false), then the ``when`` input, and checks:

- the recorded events, in order: type names and a subset of body fields;
- state fields by dotted path (``"nodes.d.status"``, ``"tasks.m[1].attempt"``); enums
  compare by value;
- when nothing is recorded, that the state's snapshot bytes did not change;
- invariants of the whole history: seq 1..n without gaps, at most one terminal event and
  only as the last one, and replay (folding the history through ``evolve`` from ``None``)
  gives the same snapshot bytes as ``step`` did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.machine import step
from headwater.core.state import WorkflowState
from services.coordinator.snapshot import dump_state

WF = "wf-1"
T0 = 1_000_000

Expect = tuple[str, dict[str, Any]]


# -- spec builders ----------------------------------------------------------------------


def task(node_id: str, *needs: str, input: Any = None, **extra: Any) -> dict[str, Any]:
    """A task node document (task name ``t.<id>``)."""
    doc: dict[str, Any] = {"id": node_id, "task": f"t.{node_id}", "needs": list(needs)}
    if input is not None:
        doc["input"] = input
    return {**doc, **extra}


def map_node(node_id: str, over: str, *needs: str, **extra: Any) -> dict[str, Any]:
    """A map node document whose children get ``{"item": ${item}, "i": ${index}}``."""
    return task(node_id, *needs, input={"item": "${item}", "i": "${index}"}, kind="map",
                over=over, **extra)


def spec(*nodes: dict[str, Any], **top: Any) -> dict[str, Any]:
    """A spec document named ``t``."""
    return {"name": "t", "nodes": list(nodes), **top}


# -- input builders ---------------------------------------------------------------------


def submit(doc: Any, inp: Any = None, at: int = T0, wf: str = WF) -> ev.WorkflowSubmitted:
    return ev.WorkflowSubmitted(wf, doc, inp, at, "tenant-a")


def ok(node: str, output: Any = None, *, index: int | None = None, attempt: int = 1,
       at: int = T0 + 100, wf: str = WF) -> ev.TaskSucceeded:
    return ev.TaskSucceeded(wf, node, index, attempt, at, output)


def fail(node: str, *, index: int | None = None, attempt: int = 1, at: int = T0 + 100,
         retryable: bool = True, error: str = "boom", wf: str = WF) -> ev.TaskFailed:
    return ev.TaskFailed(wf, node, index, attempt, at, error, "RuntimeError", retryable)


def started(node: str, *, index: int | None = None, attempt: int = 1, at: int = T0 + 50,
            wf: str = WF) -> ev.TaskStarted:
    return ev.TaskStarted(wf, node, index, attempt, at, "worker-1")


def fired(timer_id: str, at: int, wf: str = WF) -> ev.TimerFired:
    return ev.TimerFired(wf, timer_id, at)


def cancel(at: int = T0 + 500, wf: str = WF) -> ev.CancelRequested:
    return ev.CancelRequested(wf, at, "user asked")


# -- running ----------------------------------------------------------------------------


@dataclass
class Run:
    """What a sequence of steps produced."""

    state: WorkflowState | None
    history: list[ev.HistoryEvent] = field(default_factory=list)
    per_step: list[list[ev.HistoryEvent]] = field(default_factory=list)

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.history]

    def bodies(self, kind: type[Any]) -> list[Any]:
        return [e.body for e in self.history if isinstance(e.body, kind)]


def run(inputs: Sequence[ev.Input], state: WorkflowState | None = None) -> Run:
    """Step every input in order; collect the history."""
    result = Run(state)
    for item in inputs:
        out = step(result.state, item)
        result.state = out.state
        result.history.extend(out.events)
        result.per_step.append(out.events)
    return result


def replay(history: Sequence[ev.HistoryEvent]) -> WorkflowState | None:
    """Fold a history through ``evolve`` from nothing."""
    state: WorkflowState | None = None
    for event in history:
        state = evolve(state, event)
    return state


def snapshot(state: WorkflowState | None) -> bytes | None:
    return None if state is None else dump_state(state)


def get_path(state: WorkflowState, path: str) -> Any:
    """Read ``"nodes.d.status"``-style paths through attributes and dict keys."""
    value: Any = state
    for part in path.split("."):
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return value.value if isinstance(value, Enum) else value


def check_history(history: Sequence[ev.HistoryEvent], state: WorkflowState | None) -> None:
    """The invariants every recorded history satisfies."""
    assert [e.seq for e in history] == list(range(1, len(history) + 1))
    terminal = [i for i, e in enumerate(history) if e.terminal]
    assert len(terminal) <= 1, f"several terminal events: {[history[i].type for i in terminal]}"
    if terminal:
        assert terminal[0] == len(history) - 1, "events recorded after the terminal one"
    if history:
        assert isinstance(history[0].body, ev.WorkflowAccepted)
        assert state is not None and state.seq == len(history)
        assert {e.workflow_id for e in history} == {state.workflow_id}
        assert all(e.body.workflow_id == e.workflow_id for e in history)
    assert snapshot(replay(history)) == snapshot(state), "replay differs from step's state"


@dataclass(frozen=True)
class Has:
    """An expected value: a string containing every one of ``parts``."""

    parts: tuple[str, ...]


def has(*parts: str) -> Has:
    return Has(parts)


def _check_value(actual: Any, want: Any, where: str) -> None:
    if isinstance(want, Has):
        assert isinstance(actual, str), f"{where}: {actual!r} is not a string"
        for part in want.parts:
            assert part in actual, f"{where}: {part!r} not in {actual!r}"
    else:
        assert actual == want, f"{where}: {actual!r} != {want!r}"


@dataclass(frozen=True)
class Case:
    """Given ``given`` (after submitting ``spec``), when ``when``, then ``events`` and ``state``."""

    name: str
    spec: Any
    given: Sequence[ev.Input]
    when: ev.Input
    events: Sequence[Expect]
    state: dict[str, Any] = field(default_factory=dict)
    input: Any = None
    submit: bool = True

    def __str__(self) -> str:
        return self.name


def check_case(case: Case) -> Run:
    """Run ``case`` and assert its expectations; return the whole run."""
    first = [submit(case.spec, case.input)] if case.submit else []
    before = run([*first, *case.given])
    check_history(before.history, before.state)
    snap = snapshot(before.state)
    out = step(before.state, case.when)
    got = [(e.type, e.body) for e in out.events]
    assert [t for t, _ in got] == [t for t, _ in case.events], f"{case.name}: event types"
    for (etype, body), (_, fields) in zip(got, case.events, strict=True):
        for key, want in fields.items():
            _check_value(getattr(body, key), want, f"{case.name}: {etype}.{key}")
    if not case.events:
        assert snapshot(out.state) == snap, f"{case.name}: state changed without an event"
    history = before.history + out.events
    check_history(history, out.state)
    for path, want in case.state.items():
        assert out.state is not None
        _check_value(get_path(out.state, path), want, f"{case.name}: state {path}")
    return Run(out.state, history, [*before.per_step, out.events])
