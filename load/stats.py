"""Percentiles and rates over measured samples."""

from __future__ import annotations

import math
from collections.abc import Sequence

PERCENTILES = (50, 95, 99)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ``values``, linearly interpolated between ranks.

    Args:
        values: samples, in any order.
        q: the percentile, in [0, 100].

    Returns:
        The percentile (the sample itself when there is one).

    Raises:
        ValueError: no samples, or ``q`` outside [0, 100].
    """
    if not values:
        raise ValueError("percentile of no samples")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside [0, 100]")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(prefix: str, values: Sequence[float]) -> dict[str, float]:
    """``{prefix}_p50_ms``, ``_p95_ms`` and ``_p99_ms`` of ``values`` (milliseconds).

    Raises:
        ValueError: no samples.
    """
    return {f"{prefix}_p{q}_ms": percentile(values, q) for q in PERCENTILES}


def steady_rate(times_ms: Sequence[int], trim: float = 0.1) -> float:
    """Events per second in the middle of a window, ignoring ramp-up and drain.

    The window runs from the first to the last event; its first and last ``trim``
    fraction (of time) are dropped and the events in what remains are counted.

    Args:
        times_ms: event times, milliseconds.
        trim: the fraction of the window dropped at each end, in [0, 0.5).

    Returns:
        Events per second in the trimmed window.

    Raises:
        ValueError: fewer than two distinct times, so no window.
    """
    if not times_ms or max(times_ms) <= min(times_ms):
        raise ValueError("a rate needs events at two or more distinct times")
    start, end = min(times_ms), max(times_ms)
    low, high = start + (end - start) * trim, end - (end - start) * trim
    count = sum(1 for t in times_ms if low <= t < high)
    return count / ((high - low) / 1000)
