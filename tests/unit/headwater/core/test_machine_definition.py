"""A run records the registered definition it was resolved from: a submission's (or a
child's) ``definition`` and ``definition_version`` are recorded in ``WorkflowAccepted``
and kept in the state, also when the history is folded again; without them the
acceptance records None, as before."""

from __future__ import annotations

from machine_harness import T0, WF, check_history, replay, run, spec, task

from headwater.core import events as ev
from headwater.core.machine import step

KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x"}]}


def test_a_submission_naming_its_definition_records_it() -> None:
    doc = spec(task("a"))
    submitted = ev.WorkflowSubmitted(WF, doc, {"q": 1}, T0, "team", definition="billing",
                                     definition_version=3)
    result = run([submitted])
    accepted = result.history[0].body
    assert accepted == ev.WorkflowAccepted(WF, T0, doc, {"q": 1}, "team",
                                           definition="billing", definition_version=3)
    assert result.state is not None
    assert (result.state.definition, result.state.definition_version) == ("billing", 3)
    check_history(result.history, result.state)  # replay gives the same snapshot
    folded = replay(result.history)
    assert folded is not None and folded.definition_version == 3


def test_an_inline_submission_records_no_definition() -> None:
    result = run([ev.WorkflowSubmitted(WF, spec(task("a")), None, T0)])
    accepted = result.history[0].body
    assert isinstance(accepted, ev.WorkflowAccepted)
    assert (accepted.definition, accepted.definition_version) == (None, None)
    assert result.state is not None and result.state.definition is None


def test_a_child_records_the_definition_its_parent_named() -> None:
    child = ev.ChildSubmitted("p:c:1", "p", "c", None, 1, KID, None, T0,
                              definition="kid", definition_version=2)
    result = step(None, child)
    accepted, linked = (e.body for e in result.events[:2])
    assert isinstance(accepted, ev.WorkflowAccepted) and isinstance(linked, ev.ParentLinked)
    assert (accepted.definition, accepted.definition_version) == ("kid", 2)
    assert (result.state.definition, result.state.definition_version) == ("kid", 2)
