"""``core.suggest``: the closest names to a misspelt one, and the "did you mean" suffix."""

from __future__ import annotations

import pytest

from headwater.core.suggest import closest, did_you_mean

NAMES = ["my.count", "my.other", "stdlib.search", "Report"]


@pytest.mark.parametrize(("word", "expected"), [
    ("my.cuont", ["my.count"]),  # a swap: 0.875 alike; my.other (0.625) is not close
    ("stdlib.serach", ["stdlib.search"]),
    ("report", ["Report"]),  # without case
    ("billing.fetch", []),  # nothing close: no suggestion
    ("my.count", []),  # the name itself is never its own suggestion
])
def test_closest(word: str, expected: list[str]) -> None:
    assert closest(word, NAMES) == expected


def test_closest_returns_at_most_three_best_first() -> None:
    names = ["fetch_order1", "fetch_orders", "fetch_order", "fetch_order123", "refund"]
    assert closest("fetch_ordre", names) == ["fetch_order", "fetch_orders", "fetch_order1"]


@pytest.mark.parametrize(("word", "names", "expected"), [
    ("ouput", ["output", "name"], " (did you mean 'output'?)"),
    ("fetch_ordr", ["fetch_order", "fetch_orders"],
     " (did you mean 'fetch_order' or 'fetch_orders'?)"),
    ("a.count", ["a.counts", "a.counter", "a.county"],
     " (did you mean 'a.county', 'a.counts' or 'a.counter'?)"),  # ties: the later name first
    ("zzz", ["output"], ""),
])
def test_did_you_mean(word: str, names: list[str], expected: str) -> None:
    assert did_you_mean(word, names) == expected
