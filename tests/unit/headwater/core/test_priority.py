"""Priorities (``headwater.core.priority``): what a priority is (0-9 or a name), the
spec's ``priority`` field, a child's inheritance, and the effective priority of a
dispatch that waited (aging)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core import priority
from headwater.core.spec import parse_spec, read_spec
from headwater.errors import SpecError

NODES: list[dict[str, Any]] = [{"id": "a", "task": "t.a"}]


@pytest.mark.parametrize(("given", "number"), [
    (0, 0), (9, 9), (5, 5), ("low", 2), ("normal", 5), ("high", 8)])
def test_a_priority_is_an_integer_from_0_to_9_or_a_name(given: Any, number: int) -> None:
    assert priority.priority_fault(given) is None
    assert priority.as_number(given) == number
    assert parse_spec({"name": "w", "nodes": NODES, "priority": given}).priority == number


@pytest.mark.parametrize("given", [-1, 10, 5.0, True, "urgent", "5", [], {}])
def test_anything_else_is_refused_naming_the_field(given: Any) -> None:
    fault = priority.priority_fault(given)
    assert fault is not None and fault.startswith("priority: ")
    with pytest.raises(ValueError, match="no priority"):
        priority.as_number(given)
    with pytest.raises(SpecError) as e:
        parse_spec({"name": "w", "nodes": NODES, "priority": given})
    assert any(f.startswith("priority: ") for f in e.value.faults)


def test_a_spec_without_one_has_the_default_as_every_spec_recorded_before() -> None:
    assert parse_spec({"name": "w", "nodes": NODES}).priority == priority.DEFAULT == 5
    assert read_spec({"name": "w", "nodes": NODES, "priority": None}).priority == 5


def test_a_submission_sets_the_specs_priority_as_a_number() -> None:
    doc = {"name": "w", "nodes": NODES, "priority": 1}
    assert priority.with_priority(doc, "high") == {**doc, "priority": 8}
    assert priority.with_priority(doc, None) == doc
    assert doc["priority"] == 1  # not changed in place


def test_a_child_without_a_priority_of_its_own_runs_at_its_parents() -> None:
    child = {"name": "c", "nodes": NODES}
    assert priority.inherited(child, 8) == {**child, "priority": 8}
    assert priority.inherited({**child, "priority": 3}, 8)["priority"] == 3  # its own
    assert priority.inherited(child, priority.DEFAULT) is child  # as before priorities
    assert priority.inherited("not a spec", 8) == "not a spec"


def test_the_effective_priority_grows_by_one_band_per_aging_interval() -> None:
    assert priority.effective(2, 0, 60) == 2
    assert priority.effective(2, 60_000, 60) == 3
    assert priority.effective(2, 360_001, 60) > priority.effective(8, 0, 60)  # no starvation
    assert priority.effective(8, -5_000, 60) == 8  # a clock behind counts no wait
    assert priority.BANDS == (0, 1, 2, 3, 4, 6, 7, 8, 9)
