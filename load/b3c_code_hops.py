"""B3c, hop latency in code: B3's unloaded chains (``gap_s`` apart) as a spec and as the
same chain written as a code workflow (``load.noop_tasks.chain``), with the workers'
instance cache and without it; for each step, the time from the worker's success report
of task k to the ``TaskStarted`` report of task k+1, and its ratio to the spec chain's.

In code a hop goes through an activation: with the cache, the worker that ran task k
usually decides it at once and task k's success report carries the decision (a
continuation: the coordinator records it and dispatches task k+1); otherwise the
coordinator dispatches the function's next activation with task k's result, a worker
runs it (without the cache, from the function's start over the journal) and reports its
decision, and only then is task k+1 dispatched. The share of continued hops is
reported, and for the others the activation's own time (its ``TaskStarted`` report →
its success report); the results' notes give the p50 of every part of the hop
(``load.chains.samples``). Timed as B3 (``load.chains``: Kafka timestamps of the records).

Two deployments, one whose workers keep the instance cache and one whose workers keep
none (``HEADWATER_WORKFLOW_CACHE_SIZE=0``); in each the spec chains run first, then (once
the coordinator is idle) the code chains, and each code figure is divided by the spec
figure of its own deployment.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from load import stats
from load.chains import CODE_LEGS, Batch, run_chains, samples
from load.deploy import CACHE_OFF, deployment, ready, wait_idle
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox

NAME = "B3c"
TITLE = "hop latency in code, success → next task"
CODE = (("code", "code, instance cache on"),
        ("nocache", "code, no instance cache (every activation replays)"))
"""(key prefix, label) of the two code variants, each run in a deployment of its own."""
SPEC = {"code": "spec", "nocache": "spec_nocache"}
"""The key prefix of the spec chains run beside each code variant."""
METRICS = (
    *(Metric(f"{SPEC[key]}_hop_p{q}_ms", f"success report → next TaskStarted report, spec "
             f"chain (cache {'on' if key == 'code' else 'off'}), p{q}", "ms", Basis.RTT)
      for key, _ in CODE for q in stats.PERCENTILES),
    *(Metric(f"{key}_hop_p{q}_ms", f"success → next started, {label}, p{q}", "ms", Basis.RTT)
      for key, label in CODE for q in stats.PERCENTILES),
    *(Metric(f"{key}_hop_p{q}_ratio", f"hop p{q}, {label} ÷ spec beside it", "x", Basis.NONE)
      for key, label in CODE for q in stats.PERCENTILES),
    Metric("nocache_activation_p50_ms", "activation between two tasks (started → success "
           "report), code, no instance cache (every activation replays), p50", "ms",
           Basis.RTT),
    Metric("code_continued_share", "hops whose activation the step's report carried (a "
           "continuation), code, instance cache on", "x", Basis.NONE),
)
"""The cache-on variant's activations are mostly carried by the step's report (no worker
runs them: no start, no activation time of their own); the cache-off variant's never
are (no instance to go on with)."""

log = logging.getLogger("load.b3c")


@dataclass(frozen=True)
class Sizes:
    """How much B3c does.

    Attributes:
        chains: workflows submitted in each phase.
        length: tasks per chain.
        gap_s: pause between submissions, seconds.
        workers: worker processes.
        concurrency: attempts per worker at once (``HEADWATER_CONCURRENCY``; 8 is the default).
        timeout_s: the longest one phase may take, seconds.
    """

    chains: int
    length: int = 4
    gap_s: float = 0.1
    workers: int = 1
    concurrency: int = 8
    timeout_s: float = 120.0


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures this benchmark reports (the same for every size)."""
    return METRICS


def run(sizes: Sizes) -> dict[str, float]:
    """Run the spec chains, then the code chains, in a deployment with the instance cache
    and in one without it.

    Returns:
        The values of ``METRICS``.

    Raises:
        PartialResult: a workflow did not succeed, or a phase did not finish within
            ``sizes.timeout_s``; it holds the figures measured before.
    """
    with keeping({}) as out:
        for key, _ in CODE:
            with deployment(f"b3c-{key}", sizes.workers, sizes.concurrency,
                            env=CACHE_OFF if key == "nocache" else None) as sandbox:
                asyncio.run(_measure(sandbox, sizes, (SPEC[key], key), out))
            for q in stats.PERCENTILES:
                out[f"{key}_hop_p{q}_ratio"] = (out[f"{key}_hop_p{q}_ms"]
                                                / out[f"{SPEC[key]}_hop_p{q}_ms"])
    return out


async def _measure(sandbox: Sandbox, sizes: Sizes, phases: tuple[str, ...],
                   out: dict[str, float]) -> None:
    """Run one phase of chains per name in ``phases`` (``spec...``: as a spec; otherwise
    in code), idle between them, and keep each one's figures under its name."""
    await ready(sandbox, coordinators=1, workers=sizes.workers)
    for i, phase in enumerate(phases):
        if i:
            await wait_idle(sandbox, sizes.timeout_s)
        batch = Batch(sizes.chains, sizes.length, sizes.gap_s, code=not phase.startswith("spec"))
        chains = await run_chains(sandbox, batch, sizes.timeout_s, f"b3c-{phase}")
        found = samples(chains)
        out.update(stats.summary(f"{phase}_hop", found["hop"]))
        legs = {leg: stats.percentile(found[leg], 50) for leg in (*CODE_LEGS, "dispatch", "start")
                if leg in found}
        if phase == "code":
            hops = len(found["hop"])
            out["code_continued_share"] = len(found["continued"]) / hops if hops else 0.0
        elif phase == "nocache":
            out["nocache_activation_p50_ms"] = legs["activation"]
        log.warning("%s", _note(phase, legs, found))


def _note(phase: str, legs: dict[str, float], found: dict[str, list[float]]) -> str:
    """Where the hops of one phase spent their time, p50 of each part (for the results'
    notes): a spec chain's success → dispatch → started; a code chain's success →
    activation dispatch → its start → its success → next dispatch → started, when its
    activations went to a worker, else success (carrying the next decision) → next
    dispatch → started, with the share of hops that were continued."""
    continued = found.get("continued") or []
    share = (f" ({len(continued)} of {len(found['hop'])} hops continued)"
             if continued else "")
    parts = ("to_activation", "activation_start", "activation", "decided", "start") \
        if "activation" in legs and len(continued) * 2 < len(found["hop"]) \
        else ("dispatch", "start")
    arrows = {"to_activation": "activation dispatched", "activation_start": "activation started",
              "activation": "activation succeeded", "decided": "next dispatched",
              "dispatch": "next dispatched", "start": "next started"}
    split = " → ".join(f"{arrows[p]} +{legs[p]:.0f}" for p in parts)
    return f"B3c {phase}, p50 of each part of a hop (ms): success report → {split}{share}"
