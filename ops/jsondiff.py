"""Differences between two JSON values, by path."""

from __future__ import annotations

import math
from typing import Any, Final


class _Absent:
    """The type of ``ABSENT``."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
"""Stands for a key or an item that one side has and the other does not."""


def same(a: Any, b: Any) -> bool:
    """Whether two JSON scalars are equal. Numbers compare by value, within a relative
    1e-12 for floats (PostgreSQL's ``jsonb`` may return ``1e100`` as an integer)."""
    numbers = (int, float)
    if (isinstance(a, numbers) and isinstance(b, numbers)
            and not isinstance(a, bool) and not isinstance(b, bool)):
        if isinstance(a, float) or isinstance(b, float):
            return bool(a == b or math.isclose(float(a), float(b), rel_tol=1e-12))
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def diff_json(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Every path at which ``a`` and ``b`` differ.

    Args:
        a: a JSON value (dicts, lists, str, numbers, bool, None).
        b: another.
        path: the prefix of the paths reported (``"tasks"``); keys join with ``.``,
            list positions as ``[i]``.

    Returns:
        ``(path, value in a, value in b)`` for each difference; ``ABSENT`` stands for a
        missing key or item. Empty when the values are equal.
    """
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple[str, Any, Any]] = []
        for key in [*a, *(k for k in b if k not in a)]:
            sub = f"{path}.{key}" if path else str(key)
            out += diff_json(a.get(key, ABSENT), b.get(key, ABSENT), sub)
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        for i in range(max(len(a), len(b))):
            out += diff_json(a[i] if i < len(a) else ABSENT, b[i] if i < len(b) else ABSENT,
                             f"{path}[{i}]")
        return out
    return [] if same(a, b) else [(path, a, b)]
