"""RFC 3339 instants at the ends of the range a record may carry, and numbers a float
cannot hold: refused as faults, never an exception further on (a year-0 ``until`` once
passed validation and stalled the PostgreSQL projection of every workflow)."""

from __future__ import annotations

import pytest

from headwater.core.instants import FIRST_MS, LAST_MS, parse_instant
from headwater.core.retry import finite_number
from headwater.core.spec import parse_spec
from headwater.errors import SpecError
from headwater.topics import MAX_AT_MS


@pytest.mark.parametrize(("text", "ms"), [
    ("0001-01-01T00:00:00Z", FIRST_MS),
    ("9999-12-31T23:59:59.999Z", LAST_MS),
    ("1970-01-01T00:00:00Z", 0),
    ("0001-01-01T00:00:00+23:59", None),  # year 0 in UTC
    ("9999-12-31T23:59:59-23:59", None),  # year 10000 in UTC
])
def test_instants_outside_years_1_to_9999_in_utc_are_refused(text: str, ms: int | None) -> None:
    assert parse_instant(text) == ms


def test_the_last_instant_is_the_last_a_record_may_carry() -> None:
    assert LAST_MS == MAX_AT_MS


@pytest.mark.parametrize("until", ["0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59"])
def test_a_sleep_until_outside_the_range_is_a_spec_fault(until: str) -> None:
    spec = {"name": "s", "nodes": [{"id": "nap", "kind": "sleep", "until": until}]}
    with pytest.raises(SpecError, match="nap"):
        parse_spec(spec)


@pytest.mark.parametrize(("value", "ok"), [
    (1, True), (0.5, True), (10**400, False), (float("inf"), False), (float("nan"), False),
    (True, False), ("1", False), (None, False)])
def test_finite_numbers(value: object, ok: bool) -> None:
    assert finite_number(value) is ok


@pytest.mark.parametrize("field", ["duration", "timeout", "budget"])
def test_a_number_no_float_can_hold_is_a_spec_fault(field: str) -> None:
    node: dict[str, object] = {"id": "n", "kind": "sleep", "duration": 1}
    if field == "budget":
        node = {"id": "n", "kind": "loop", "decide": "d", "tools": ["t"], "max_steps": 2}
    elif field == "timeout":
        node = {"id": "n", "task": "t"}
    node[field] = 10**400
    with pytest.raises(SpecError, match=f"{field}.* must be a positive number"):
        parse_spec({"name": "s", "nodes": [node]})
