"""What each benchmark reports: metric names, units, and the B1 figure each is compared to."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum


class Basis(StrEnum):
    """The B1 figure a metric is divided by to give its ratio to raw Kafka."""

    RTT = "rtt"  # B1 round trip p50, ms: for latencies
    RATE = "rate"  # B1 pipelined round trips per second: for rates
    PER_RECORD = "per_record"  # B1 pipelined ms per record (1000 / rate): for per-task times
    RECORD_BYTES = "record_bytes"  # B1 record size, bytes: for bytes per task
    NONE = "none"  # a ratio within Headwater already (e.g. 10,000 vs 100 items)

    @property
    def label(self) -> str:
        """How the table names the divisor."""
        return {
            Basis.RTT: "÷ B1 round trip p50",
            Basis.RATE: "÷ B1 pipelined round trips/s",
            Basis.PER_RECORD: "÷ B1 pipelined ms/record",
            Basis.RECORD_BYTES: "÷ B1 record bytes",
            Basis.NONE: "",
        }[self]


@dataclass(frozen=True)
class Metric:
    """One reported figure.

    Attributes:
        key: its key in the results JSON (unique within its benchmark).
        label: what it measures, for the table.
        unit: ``ms``, ``s``, ``/s``, ``bytes``, ``MiB``, ``x``, ``%``, ``count`` (a number
            of occurrences, which may well be 0) or ``""`` (a plain number).
        basis: the B1 figure it is divided by.
    """

    key: str
    label: str
    unit: str
    basis: Basis


def divisor(basis: Basis, baseline: dict[str, float]) -> float | None:
    """The B1 figure for ``basis``, from B1's results; None without one.

    Args:
        basis: which figure.
        baseline: B1's results (``rtt_p50_ms``, ``pipelined_per_s``, ``record_bytes``).
    """
    value = {
        Basis.RTT: baseline.get("rtt_p50_ms"),
        Basis.RATE: baseline.get("pipelined_per_s"),
        Basis.PER_RECORD: 1000 / baseline["pipelined_per_s"]
        if baseline.get("pipelined_per_s") else None,
        Basis.RECORD_BYTES: baseline.get("record_bytes"),
        Basis.NONE: None,
    }[basis]
    return value if value is not None and math.isfinite(value) and value > 0 else None


def ratio(value: float | None, basis: Basis, baseline: dict[str, float]) -> float | None:
    """``value`` divided by its B1 figure; None when either is missing."""
    d = divisor(basis, baseline)
    return None if value is None or d is None else value / d


class PartialResult(Exception):
    """Raised when a benchmark failed part-way; ``values`` holds what it measured first
    (e.g. B2 with one coordinator when the run with two failed). The cause is chained."""

    def __init__(self, values: dict[str, float], cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.values = values


@contextlib.contextmanager
def keeping(values: dict[str, float]) -> Iterator[dict[str, float]]:
    """Collect a benchmark's figures in ``values`` as they are measured; if it then
    fails, raise ``PartialResult`` with what was collected."""
    try:
        yield values
    except Exception as e:
        raise PartialResult(dict(values), e) from e
