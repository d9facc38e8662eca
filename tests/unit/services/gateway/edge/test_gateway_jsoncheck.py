"""The edge's check of JSON values: the first fault in document order, with its path."""

from __future__ import annotations

from typing import Any

import pytest

from services.gateway.edge.jsoncheck import INT64_MAX, INT64_MIN, MAX_DEPTH, first_fault


def nested(levels: int) -> Any:
    """``levels`` arrays, one inside the other."""
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(("value", "fault"), [
    ({"a": {"b": [0, 1, 2, "x\x00y"]}}, "input.a.b[3]: contains U+0000"),
    ("\x00", "input: contains U+0000"),
    ({"a\x00": 1}, 'input["a\\u0000"]: the key contains U+0000'),
    ({"ok": 1, "a b": {"c\x00": None}}, 'input["a b"]["c\\u0000"]: the key contains U+0000'),
    ({"n": INT64_MAX + 1}, "input.n: integer outside the signed 64-bit range"),
    ([INT64_MIN - 1], "input[0]: integer outside the signed 64-bit range"),
    ({"x": float("nan")}, "input.x: not a finite number (NaN or infinity)"),
    ({"x": float("inf")}, "input.x: not a finite number (NaN or infinity)"),
    ([float("-inf")], "input[0]: not a finite number (NaN or infinity)"),
    (nested(MAX_DEPTH + 1), "input" + "[0]" * MAX_DEPTH + ": nested deeper than 64 levels"),
    ({"s": {1, 2}}, "input.s: not a JSON value (set)"),
])
def test_first_fault_names_the_path(value: Any, fault: str) -> None:
    assert first_fault(value, "input") == fault


@pytest.mark.parametrize("value", [
    None, True, 0, INT64_MAX, INT64_MIN, 1.5, -0.0, 1e308, "", "é\u2028", [], {},
    {"a": [1, {"b": None}]}, nested(MAX_DEPTH), {"k" * 1000: "v"},
])
def test_values_that_fit_pass(value: Any) -> None:
    assert first_fault(value, "input") is None


def test_the_first_fault_in_document_order_wins() -> None:
    value = {"a": [1, {"b": 2**70}], "c": "\x00", "\x00": float("nan")}
    assert first_fault(value, "input") == "input.a[1].b: integer outside the signed 64-bit range"
    assert first_fault([[["\x00"]], 2**64], "v") == "v[0][0][0]: contains U+0000"


def test_a_key_is_checked_before_its_value() -> None:
    assert first_fault({"a\x00": [2**64]}, "w") == 'w["a\\u0000"]: the key contains U+0000'


def test_a_very_deep_value_needs_no_recursion() -> None:
    deep = nested(200_000)
    assert first_fault(deep, "input") == ("input" + "[0]" * MAX_DEPTH
                                          + ": nested deeper than 64 levels")


def test_a_long_key_is_cut_in_the_path() -> None:
    fault = first_fault({"k" * 500: "\x00"}, "input")
    assert fault == 'input["' + "k" * 60 + '…"]: contains U+0000'
