"""B6, contention: B3's loaded phase (chains ``gap_s`` apart) run twice in one
deployment, first on a quiet machine and then beside a CPU hog that keeps one core busy
(``load.hog``: a separate process, pinned, ended by pid after the phase and by its own
deadline in any case).

Hops are measured as in B3 (``load.chains``: Kafka timestamps of the records), and split
into the coordinator's side (success report → next dispatch record: reading the report,
applying it, publishing the dispatch) and the worker's side (dispatch record → next
``TaskStarted`` report: fetching the dispatch and starting it), so that the figures show
which side turns a busy core into delay. The goal: the hog's p99 within 10x the quiet
p99, and no hop over a second.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from load import stats
from load.chains import DISPATCH_WAIT_S, Batch, Chains, run_chains, samples
from load.deploy import deployment, ready, wait_idle
from load.hog import cpu_hog, default_core
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox

NAME = "B6"
TITLE = "contention, loaded hops beside a CPU hog"
OVER_MS = 1000.0
"""A hop longer than this (ms) is counted as a stall."""
HOG_MARGIN_S = 30.0
"""How much longer than the phase may last the hog's own deadline is, seconds."""
_SIDES = {"dispatch": "coordinator's", "start": "worker's"}
log = logging.getLogger("load.b6")


def _phase_metrics(prefix: str, label: str) -> tuple[Metric, ...]:
    return (
        *(Metric(f"{prefix}_hop_p{q}_ms", f"{label}: success report → next started report, "
                 f"p{q}", "ms", Basis.RTT) for q in stats.PERCENTILES),
        *(Metric(f"{prefix}_dispatch_p{q}_ms", f"{label}: coordinator side, success report → "
                 f"next dispatch record, p{q}", "ms", Basis.RTT) for q in stats.PERCENTILES),
        *(Metric(f"{prefix}_start_p{q}_ms", f"{label}: worker side, dispatch record → "
                 f"next started report, p{q}", "ms", Basis.RTT) for q in stats.PERCENTILES),
    )


METRICS = (
    *_phase_metrics("quiet", "quiet"),
    *_phase_metrics("hog", "CPU hog on one core"),
    Metric("hog_hop_max_ms", "CPU hog on one core: longest hop", "ms", Basis.RTT),
    Metric("hog_p99_ratio", "hop p99 with the CPU hog ÷ quiet hop p99 (target ≤ 10)", "x",
           Basis.NONE),
    Metric("hog_hops_over_1s", "CPU hog on one core: hops over 1 s (target 0)", "count",
           Basis.NONE),
)


@dataclass(frozen=True)
class Sizes:
    """How much B6 does.

    Attributes:
        chains: workflows submitted in each phase.
        length: tasks per chain.
        gap_s: pause between submissions, seconds (B3's ``loaded_gap_s``).
        workers: worker processes.
        concurrency: attempts per worker at once (``HEADWATER_CONCURRENCY``; 8 is the default).
        hog_core: the core the hog keeps busy; -1: this process's highest-numbered one.
        timeout_s: the longest one phase may take, seconds.
    """

    chains: int
    length: int = 4
    gap_s: float = 0.02
    workers: int = 1
    concurrency: int = 8
    hog_core: int = -1
    timeout_s: float = 120.0


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures this benchmark reports (the same for every size)."""
    return METRICS


def run(sizes: Sizes) -> dict[str, float]:
    """Run B6 in a fresh deployment: the quiet phase, then the phase beside the hog.

    Returns:
        The values of ``METRICS``.

    Raises:
        PartialResult: a workflow did not succeed, a phase did not finish within
            ``sizes.timeout_s`` or the hog did not start; it holds the figures measured
            before.
    """
    with keeping({}) as out, deployment("b6", sizes.workers, sizes.concurrency) as sandbox:
        asyncio.run(_measure(sandbox, sizes, out))
    return out


async def _measure(sandbox: Sandbox, sizes: Sizes, out: dict[str, float]) -> None:
    await ready(sandbox, coordinators=1, workers=sizes.workers)
    quiet = samples(await _phase(sandbox, sizes))
    out.update(_figures("quiet", quiet))
    await wait_idle(sandbox, sizes.timeout_s)
    core = default_core() if sizes.hog_core < 0 else sizes.hog_core
    async with cpu_hog(core, sizes.timeout_s + 2 * DISPATCH_WAIT_S + HOG_MARGIN_S):
        hog = samples(await _phase(sandbox, sizes))
    out.update(_figures("hog", hog))
    out["hog_hop_max_ms"] = max(hog["hop"])
    out["hog_p99_ratio"] = out["hog_hop_p99_ms"] / out["quiet_hop_p99_ms"]
    out["hog_hops_over_1s"] = float(sum(1 for h in hog["hop"] if h > OVER_MS))
    log.warning("%s", _note(out, core))


async def _phase(sandbox: Sandbox, sizes: Sizes) -> Chains:
    return await run_chains(sandbox, Batch(sizes.chains, sizes.length, sizes.gap_s),
                            sizes.timeout_s, "b6")


def _figures(prefix: str, found: dict[str, list[float]]) -> dict[str, float]:
    """``<prefix>_hop_p*_ms``, ``<prefix>_dispatch_p*_ms`` and ``<prefix>_start_p*_ms``."""
    return {k: v for part in ("hop", "dispatch", "start")
            for k, v in stats.summary(f"{prefix}_{part}", found[part]).items()}


def _note(out: dict[str, float], core: int) -> str:
    """What the hog did to the hops, and on which side of them (for the results' notes)."""
    grew = {side: out[f"hog_{side}_p99_ms"] - out[f"quiet_{side}_p99_ms"]
            for side in ("dispatch", "start")}
    side = max(grew, key=lambda k: grew[k])
    where = (f"most of the added delay is on the {_SIDES[side]} side" if grew[side] > 0
             else "neither side's p99 grew")
    return (f"B6: with a CPU hog on core {core} the hop p99 went from "
            f"{out['quiet_hop_p99_ms']:.0f} to {out['hog_hop_p99_ms']:.0f} ms "
            f"({out['hog_p99_ratio']:.1f}x; target ≤ 10x), longest "
            f"{out['hog_hop_max_ms']:.0f} ms, {out['hog_hops_over_1s']:.0f} over 1 s; "
            f"p99 of the coordinator's side (success → dispatch) "
            f"{out['quiet_dispatch_p99_ms']:.0f} → {out['hog_dispatch_p99_ms']:.0f} ms, "
            f"of the worker's side (dispatch → started) {out['quiet_start_p99_ms']:.0f} → "
            f"{out['hog_start_p99_ms']:.0f} ms: {where}")
