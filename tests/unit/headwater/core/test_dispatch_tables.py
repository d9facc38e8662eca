"""The core's dispatch tables are complete: every input type has a rule in the machine,
every node kind its rules, every history event but the first its ``evolve`` handler."""

from __future__ import annotations

import typing

import pytest

from headwater.core import events as ev
from headwater.core import registry
from headwater.core.evolve import EVENT_HANDLERS, evolve
from headwater.core.machine.inputs import INPUT_RULES
from headwater.core.spec import NodeKind
from headwater.core.state import IllegalTransition, new_state


def test_every_input_type_has_a_rule() -> None:
    assert set(INPUT_RULES) == set(typing.get_args(ev.Input))


def test_every_node_kind_has_its_rules() -> None:
    assert {unit.kind for unit in registry.units()} == set(NodeKind)
    for unit in registry.units():
        assert callable(unit.start)
        assert callable(unit.attempt_succeeded)
        assert callable(unit.attempt_failed)


def test_every_history_event_but_the_first_has_a_handler() -> None:
    assert set(EVENT_HANDLERS) == set(typing.get_args(ev.Body)) - {ev.WorkflowAccepted}


def test_an_event_without_a_handler_is_named() -> None:
    accepted = ev.WorkflowAccepted("wf", 1, {"name": "s", "nodes": [{"id": "a", "task": "t"}]},
                                   None)
    state = new_state(accepted)
    state.seq = 1
    with pytest.raises(IllegalTransition, match="unexpected WorkflowAccepted in a running"):
        evolve(state, ev.HistoryEvent("wf", 2, accepted))
