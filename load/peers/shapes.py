"""The workloads the peers run, and their figures from the stamps their no-op tasks take.

Every no-op task of a peer returns ``(start, end)``: ``time.time()`` as it starts and as
it ends, in seconds. The drivers hand those stamps here, so that both peers' figures are
computed alike; standard library and ``load.stats`` only (a peer's venv runs this).
"""

from __future__ import annotations

import itertools
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from load import stats

Stamp = tuple[float, float]
"""A task's ``(start, end)``, ``time.time()`` seconds."""


@dataclass(frozen=True)
class Workloads:
    """How much each peer does; taken from ``load.plan``'s sizes of the same mode.

    Attributes:
        chains: 3-task chains submitted at once (B2's ``workflows``).
        chain_length: tasks per throughput chain (B2's ``length``).
        hop_chains: chains per hop phase (B3's ``chains``).
        hop_length: tasks per hop chain (B3's ``length``).
        gap_s: pause between chains, unloaded, seconds (B3's ``gap_s``).
        loaded_gap_s: pause between chains, loaded, seconds (B3's ``loaded_gap_s``).
        widths: map sizes, narrowest first (B4's, up to ``MAX_WIDTH``).
        submits: sequential submissions timed (B5's ``sequential``).
        submit_gap_s: pause between them, seconds (B5's ``gap_s``).
        concurrency: tasks one worker runs at once.
        timeout_s: the longest one phase may take, seconds.
    """

    chains: int
    chain_length: int
    hop_chains: int
    hop_length: int
    gap_s: float
    loaded_gap_s: float
    widths: tuple[int, ...]
    submits: int
    submit_gap_s: float
    concurrency: int = 8
    timeout_s: float = 600.0

    def to_json(self) -> dict[str, Any]:
        """As a JSON-able dict (the drivers' argument)."""
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Workloads:
        """The inverse of ``to_json``."""
        return cls(**{**raw, "widths": tuple(raw["widths"])})


MAX_WIDTH = 10_000
"""The widest map the peers run (B4's 100,000 is left out: a peer at a few hundred
tasks per second would take minutes on it)."""


def hops_ms(chains: Sequence[Sequence[Stamp]]) -> list[float]:
    """Every hop of every chain: task k+1's start minus task k's end, milliseconds.

    Args:
        chains: each chain's stamps, in task order.
    """
    return [(nxt[0] - prev[1]) * 1000 for chain in chains
            for prev, nxt in itertools.pairwise(chain)]


def hop_figures(prefix: str, chains: Sequence[Sequence[Stamp]]) -> dict[str, float]:
    """``{prefix}_p50_ms``, ``_p95_ms``, ``_p99_ms`` of the chains' hops.

    Raises:
        ValueError: no chain had two tasks.
    """
    return stats.summary(prefix, hops_ms(chains))


def steady_tasks_per_s(stamps: Sequence[Stamp]) -> float:
    """Tasks completed per second in the middle 80 % of the window of their ends (B2's
    rule, ``load.stats.steady_rate``).

    Raises:
        ValueError: fewer than two distinct end times.
    """
    return stats.steady_rate([round(end * 1000) for _, end in stamps])


def submit_figures(latencies_s: Sequence[float]) -> dict[str, float]:
    """``submit_p50_ms`` and ``submit_p99_ms`` of sequential submissions.

    Args:
        latencies_s: each call's duration, seconds.
    """
    ms = [s * 1000 for s in latencies_s]
    return {"submit_p50_ms": stats.percentile(ms, 50), "submit_p99_ms": stats.percentile(ms, 99)}


Chains = Callable[[int, int, float], list[list[Stamp]]]
"""A peer's way to run ``count`` chains of ``length`` no-op tasks ``gap_s`` apart (0: all
at once): every task's stamps, chain by chain."""


def measure(w: Workloads, chains: Chains, map_ms: Callable[[int], float],
            submits: Callable[[], list[float]]) -> dict[str, Any]:
    """Every workload, in ``make bench``'s order, through a peer's own ways to run chains,
    a map of n items with its fan-in (submit → the fan-in's end, ms) and ``w.submits``
    sequential submissions (each one's latency, seconds): the figures by key."""
    out: dict[str, Any] = {"tasks_per_s": steady_tasks_per_s(
        [s for c in chains(w.chains, w.chain_length, 0.0) for s in c])}
    out.update(hop_figures("hop", chains(w.hop_chains, w.hop_length, w.gap_s)))
    out.update(hop_figures("loaded_hop", chains(w.hop_chains, w.hop_length, w.loaded_gap_s)))
    for n in w.widths:
        out[f"map_total_ms_{n}"] = map_ms(n)
    out.update(submit_figures(submits()))
    return out


def stop(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Stop ``process`` (SIGTERM by its pid), and kill it if it is not gone in
    ``timeout_s``."""
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
