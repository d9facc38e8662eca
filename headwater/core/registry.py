"""The node-kind registry: each kind declares itself in one ``KindUnit``, and the common
machinery looks kinds up here instead of importing them.

A kind is one unit (``headwater/core/kinds/<kind>.py``, or a small package) that ends
with ``UNIT = KindUnit(...)``: its ``NodeKind``, its machine rules (how its node starts,
what a successful attempt and a failed task do, an optional output check), its spec
parser (what it adds to a node), the prefix
of its own durable timer and what that timer does when it fires, what it does with a
signal, its history events with their ``evolve`` handlers and how each reads (its
timeline detail and its live-view line), and where its nodes' state differs from the
default. ``headwater/core/kinds/__init__.py`` is the one assembly point: it imports
every unit once and ``install``s them. The common modules (``machine.flow``,
``machine.reports``, ``machine.timers``, ``machine.inputs``) import only this module,
so dependencies point one way: kinds -> common machinery -> registry. The readers of
the history (the codec, ``ops history``, ``ops follow``, the coordinator's snapshot) take
a kind's part from here too (``units``, ``event_units``), not from a table of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from headwater.core import events as ev
from headwater.core import evolve
from headwater.core.attempts import KindEvolution
from headwater.core.evolve import EventHandler
from headwater.core.machine.recorder import Recorder
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.kinds import KIND_KEYS, KIND_PARSERS, TASK_KEY, KindParser
from headwater.core.state import WorkflowState
from headwater.core.wording import Describe, Follow

StartRule = Callable[[Recorder, NodeSpec], None]
"""The node's needs are met (or it is a root, or its error route was taken): begin its
work, in a workflow that is still running."""

SuccessRule = Callable[[Recorder, NodeSpec, ev.TaskSucceeded], None]
"""An attempt of one of the node's tasks succeeded (already recorded)."""

FailureRule = Callable[[Recorder, NodeSpec, ev.TaskFailed], None]
"""One of the node's tasks failed for good: its last attempt failed, or it was not
retryable (the failure is already recorded)."""

OutputFault = Callable[[WorkflowState, NodeSpec, ev.TaskSucceeded], "str | None"]
"""Why a successful attempt's output is unfit for the node, or None when it is fit."""

TimerRule = Callable[[Recorder, NodeSpec, "int | None"], None]
"""The node's own timer fired (``TimerFired`` already recorded), for item ``index``."""

SignalRule = Callable[[Recorder, WorkflowState, ev.SignalSent], None]
"""A signal for a running workflow that this kind takes."""


@dataclass(frozen=True)
class KindUnit:
    """Everything the common machinery needs of one node kind.

    Attributes:
        kind: the ``kind:`` of its nodes.
        keys: the spec fields its nodes take besides those of every node (id, kind,
            needs, when, error policy): ``spec.kinds.KIND_KEYS`` gets them.
        start: its ``StartRule``.
        attempt_succeeded: its ``SuccessRule``.
        attempt_failed: its ``FailureRule``.
        parse: its ``spec.kinds.KindParser`` (what the kind adds to a node's spec).
        output_fault: an ``OutputFault`` that refuses an unfit output before the success
            is recorded, or None to take any output.
        output_error: the error type of an output refused by ``output_fault``.
        timer_prefix: the prefix of its nodes' own timer ids (``wait`` for
            ``wait:<task key>``), or None when it has no timer of its own.
        timer_fired: what its timer does when it fires (with ``timer_prefix``).
        signal_sent: how it takes a signal, or None when signals are not for it.
        claims_signals: which workflows' signals go to ``signal_sent``; None for the
            one kind that takes every signal no other kind claims (``wait``).
        events: its history event types, each with how it changes the state
            (``evolve.EVENT_HANDLERS`` gets them).
        evolution: where its nodes' state differs from the default
            (``evolve.KindEvolution``).
        task_field: the spec field naming its nodes' task (``task``; a loop's
            ``decide``), or None when its nodes name none (``spec.kinds.TASK_KEY``).
        keeps_output: its nodes' output is held by no task (a wait's signal fields, a
            sleep's null): the coordinator's snapshot keeps it in the workflow's header.
        describe: for each of its ``events``, the detail of its timeline line
            (``ops/history.py``).
        follow: for each of its ``events``, its line in the live view
            (``ops/cli/follow.py``), or None for an event that changes nothing there.
    """

    kind: NodeKind
    keys: frozenset[str]
    start: StartRule
    attempt_succeeded: SuccessRule
    attempt_failed: FailureRule
    parse: KindParser | None = None
    output_fault: OutputFault | None = None
    output_error: str = "OutputError"
    timer_prefix: str | None = None
    timer_fired: TimerRule | None = None
    signal_sent: SignalRule | None = None
    claims_signals: Callable[[WorkflowState], bool] | None = None
    events: Mapping[type[Any], EventHandler] = field(default_factory=dict)
    evolution: KindEvolution = field(default_factory=KindEvolution)
    task_field: str | None = None
    keeps_output: bool = False
    describe: Mapping[type[Any], Describe] = field(default_factory=dict)
    follow: Mapping[type[Any], Follow | None] = field(default_factory=dict)


_UNITS: dict[NodeKind, KindUnit] = {}
"""Node kind -> its unit, filled once by ``install``."""


def install(units: Iterable[KindUnit]) -> None:
    """Register every kind's unit (``headwater/core/kinds/__init__.py`` calls it once).

    Args:
        units: one unit per node kind.

    Raises:
        ValueError: a kind is registered twice, a timer prefix is taken twice, or more
            than one kind takes the signals no other kind claims.
    """
    for unit in units:
        if unit.kind in _UNITS:
            raise ValueError(f"node kind {unit.kind.value} is registered twice")
        _UNITS[unit.kind] = unit
        evolve.install_kind(unit.kind, unit.events, unit.evolution)
        if unit.parse is not None:
            KIND_PARSERS[unit.kind] = unit.parse
        KIND_KEYS[unit.kind] = unit.keys
        if unit.task_field is not None:
            TASK_KEY[unit.kind] = unit.task_field
    prefixes = [u.timer_prefix for u in _UNITS.values() if u.timer_prefix is not None]
    if len(prefixes) != len(set(prefixes)):
        raise ValueError(f"a timer prefix is taken twice: {sorted(prefixes)}")
    if len([u for u in _UNITS.values() if u.signal_sent and not u.claims_signals]) > 1:
        raise ValueError("more than one kind takes the signals no kind claims")


def units() -> tuple[KindUnit, ...]:
    """Every registered unit, in the order of registration."""
    return tuple(_UNITS.values())


def unit(kind: NodeKind) -> KindUnit:
    """The unit of ``kind``."""
    return _UNITS[kind]


def event_units() -> dict[type[Any], KindUnit]:
    """Every node kind's history event type -> the unit that records it."""
    return {event: u for u in _UNITS.values() for event in u.events}


def timer_owner(timer_id: str) -> KindUnit | None:
    """The unit whose own timer ``timer_id`` is (by its prefix), or None for a task's
    retry timer."""
    prefix = timer_id.partition(":")[0]
    return next((u for u in _UNITS.values() if u.timer_prefix == prefix), None)


def signal_taker(state: WorkflowState) -> SignalRule:
    """How a signal for the running workflow ``state`` is taken: by the kind that claims
    the workflow's signals, else by the kind that takes every other signal."""
    fallback: SignalRule | None = None
    for u in _UNITS.values():
        if u.signal_sent is None:
            continue
        if u.claims_signals is None:
            fallback = u.signal_sent
        elif u.claims_signals(state):
            return u.signal_sent
    assert fallback is not None, "no node kind takes signals"
    return fallback
