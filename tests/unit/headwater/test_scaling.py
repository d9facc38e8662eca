"""Deploy hints' quantities (``headwater.scaling.quantity``): Kubernetes' suffixes read
as the API server reads them, so the deploy step compares ``"1500m"`` with ``2``."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.scaling import hint_fault, hints_of, quantity


@pytest.mark.parametrize(("value", "expected"), [
    ("500m", 0.5), ("2", 2.0), (2, 2.0), (0.25, 0.25), ("1Gi", 2.0**30), ("1G", 1e9),
    ("512Mi", 512 * 2.0**20), ("1.5", 1.5), ("3k", 3000.0),
    ("lots", None), ("-1", None), (-1, None), (True, None), (None, None), ("1gi", None),
])
def test_quantity(value: Any, expected: float | None) -> None:
    assert quantity(value) == expected


def test_hints_keep_only_what_was_given() -> None:
    assert hints_of({"cpu": "1", "gpu": None, "queue": "q", "max_replicas": 3}) == {
        "cpu": "1", "max_replicas": 3}
    assert hint_fault({"cpu": "1", "memory": 1024, "min_replicas": 0}) is None
