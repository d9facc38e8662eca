"""Differences between JSON values, by path."""

from __future__ import annotations

from ops.jsondiff import ABSENT, diff_json, same


def test_equal_values_have_no_difference() -> None:
    doc = {"a": [1, {"b": None}], "c": "x", "d": 1.5}
    assert diff_json(doc, {"d": 1.5, "c": "x", "a": [1, {"b": None}]}) == []


def test_each_difference_is_named_by_its_path() -> None:
    a = {"tasks": {"m[0]": {"status": "succeeded", "attempt": 1}}, "xs": [1, 2, 3]}
    b = {"tasks": {"m[0]": {"status": "failed", "attempt": 1}}, "xs": [1, 5], "new": True}
    assert diff_json(a, b) == [
        ("tasks.m[0].status", "succeeded", "failed"),
        ("xs[1]", 2, 5),
        ("xs[2]", 3, ABSENT),
        ("new", ABSENT, True),
    ]
    assert diff_json(1, 2, "root") == [("root", 1, 2)]


def test_numbers_compare_by_value_but_booleans_and_strings_do_not() -> None:
    assert same(1, 1.0) and same(10**100, 1e100) and same(0.1 + 0.2, 0.3)
    assert not same(1, True) and not same(0, False) and not same("1", 1)
    assert not same(1.0, 1.1)
    assert same(None, None) and not same(None, ABSENT)
    assert repr(ABSENT) == "ABSENT"
