"""Which benchmarks exist and how big each one runs, in full and in ``--quick`` mode."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from load import (
    b1_raw,
    b2_throughput,
    b2c_code_throughput,
    b3_hops,
    b3c_code_hops,
    b4_width,
    b5_submit,
    b6_contention,
    b7_recovery,
    b8_workers,
    b9_table,
)
from load.metrics import Metric

ORDER = ("B1", "B2", "B2c", "B3", "B3c", "B4", "B5", "B6", "B7", "B8", "B9")
MODULES: dict[str, Any] = {"B1": b1_raw, "B2": b2_throughput, "B2c": b2c_code_throughput,
                           "B3": b3_hops, "B3c": b3c_code_hops, "B4": b4_width,
                           "B5": b5_submit, "B6": b6_contention, "B7": b7_recovery,
                           "B8": b8_workers, "B9": b9_table}
FULL: dict[str, Any] = {
    "B1": b1_raw.Sizes(round_trips=1000, pipelined=50_000),
    "B2": b2_throughput.Sizes(workflows=600, coordinators=(1, 2, 4)),
    "B2c": b2c_code_throughput.Sizes(workflows=600),
    "B3": b3_hops.Sizes(chains=100),
    "B3c": b3c_code_hops.Sizes(chains=100),
    "B4": b4_width.Sizes(widths=(100, 1000, 10_000, 100_000)),
    "B5": b5_submit.Sizes(sequential=100, burst=600),
    "B6": b6_contention.Sizes(chains=100),
    "B7": b7_recovery.Sizes(workflows=20, kill_after=10),
    "B8": b8_workers.Sizes(width=10_000),
    "B9": b9_table.Sizes(finished=(1000, 10_000, 100_000), waiting=10_000),
}
QUICK: dict[str, Any] = {
    "B1": b1_raw.Sizes(round_trips=200, pipelined=5000),
    "B2": b2_throughput.Sizes(workflows=40, workers=1, concurrency=8),
    "B2c": b2c_code_throughput.Sizes(workflows=40, workers=1, concurrency=8),
    "B3": b3_hops.Sizes(chains=10),
    "B3c": b3c_code_hops.Sizes(chains=10),
    "B4": b4_width.Sizes(widths=(50, 200), repeats=1, workers=1, concurrency=8,
                         idle_wait_s=1.0),
    "B5": b5_submit.Sizes(sequential=10, burst=50),
    "B6": b6_contention.Sizes(chains=10),
    "B7": b7_recovery.Sizes(workflows=10, kill_after=5),
    "B8": b8_workers.Sizes(width=200, concurrency=8),
    "B9": b9_table.Sizes(finished=(100, 300), waiting=100, idle_wait_s=1.0),
}
"""The CI smoke test's sizes: every benchmark and every phase of it, with a few seconds'
work each. Every benchmark but B9 runs on one coordinator and one worker of concurrency
8 (the default) where its shape allows (B2's second phase has two coordinators, and it
has no third with four as the full run has; B2c's and B3c's second deployment workers
without the instance cache, B8 grows to four workers), so that with ``QUICK_KEEP`` one
deployment kept from benchmark to benchmark serves most of them."""
QUICK_KEEP = 2
"""Deployments ``--quick`` keeps running at once (``load.kept.sharing``); the full run
starts a fresh one for every benchmark phase."""
QUICK_QUIET_S = 0.5
"""How long ``--quick`` waits without changelog growth before a coordinator counts as
idle (``load.deploy.quiet_period``; the full run waits ``deploy.QUIET_S``)."""


@dataclass(frozen=True)
class Planned:
    """One benchmark ready to run.

    Attributes:
        name: ``B1`` ... ``B9`` (``B2c``, ``B3c``: B2 and B3 in code).
        title: what it measures.
        sizes: its size settings (the module's ``Sizes``).
        metrics: the figures it reports.
        run: runs it and returns ``{metric key: value}``.
    """

    name: str
    title: str
    sizes: Any
    metrics: tuple[Metric, ...]
    run: Callable[[], dict[str, float]]

    @property
    def settings(self) -> dict[str, Any]:
        """Its sizes as a JSON-able dict."""
        return dataclasses.asdict(self.sizes)


def plan(quick: bool, only: set[str] | None = None) -> list[Planned]:
    """The benchmarks to run, in order. B1 always runs: every ratio needs it.

    Args:
        quick: small sizes (the CI smoke test).
        only: names to run, in any case (B1 is added); None for all.

    Raises:
        ValueError: ``only`` names an unknown benchmark.
    """
    known = {n.upper(): n for n in ORDER}
    only = None if only is None else {known.get(n.upper(), n) for n in only}
    unknown = (only or set()) - set(ORDER)
    if unknown:
        raise ValueError(f"unknown benchmark(s) {sorted(unknown)}; choose from {', '.join(ORDER)}")
    sizes = QUICK if quick else FULL
    chosen = [n for n in ORDER if only is None or n in only or n == "B1"]
    return [Planned(n, MODULES[n].TITLE, sizes[n], MODULES[n].metrics(sizes[n]),
                    _runner(MODULES[n], sizes[n])) for n in chosen]


def _runner(module: Any, sizes: Any) -> Callable[[], dict[str, float]]:
    def run() -> dict[str, float]:
        values: dict[str, float] = module.run(sizes)
        return values
    return run
