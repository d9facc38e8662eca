"""B2c, throughput in code: B2's chains of noop tasks, once as a spec and twice as the
same chain written as a code workflow (``load.noop_tasks.chain``: one ``wf.run`` per
task), with the workers' instance cache and without it; noop tasks completed per second
at steady state, with one coordinator, and what a task in code costs against a task of
the spec chain.

A code chain of n tasks runs n + 1 activations besides them (the function deciding the
next step, on a worker of the same queue). Only the noop tasks' ``TaskSucceeded``
records are counted (the code node's odd indexes), so the rates compare the same work
done; the time per task, code ÷ spec, is the cost of a step in code (target ≤ 1.5).
Without the cache (``HEADWATER_WORKFLOW_CACHE_SIZE=0`` on the workers) every activation
runs the function from its start over the journal. Each run is B2's with one
coordinator (``load.b2_throughput.measure``), each in a fresh deployment, timed by the
Kafka timestamps of the history records.
"""

from __future__ import annotations

import asyncio
import logging

from load.b2_throughput import Sizes, measure
from load.deploy import CACHE_OFF, deployment
from load.metrics import Basis, Metric, keeping

__all__ = ["METRICS", "NAME", "TITLE", "Sizes", "metrics", "run"]

NAME = "B2c"
TITLE = "throughput in code, 3-task chains"
COST_TARGET = 1.5
"""The most a step in code should cost, as a multiple of a spec chain's task."""
VARIANTS = (
    ("spec", "spec chain", False, None),
    ("code", "code chain, instance cache on", True, None),
    ("nocache", "code chain, no instance cache (every activation replays)", True, CACHE_OFF),
)
"""(key prefix, what runs, in code, the workers' extra settings), in the order run."""
METRICS = (
    *(Metric(f"{key}_tasks_per_s", f"noop tasks completed per second, {label}", "/s",
             Basis.RATE) for key, label, _, _ in VARIANTS),
    Metric("code_cost_ratio", f"time per task, code ÷ spec (target ≤ {COST_TARGET:g})", "x",
           Basis.NONE),
    Metric("nocache_cost_ratio", "time per task, code without the cache ÷ spec", "x",
           Basis.NONE),
    *(Metric(f"{key}_history_per_task", f"history records per noop task, {label}", "",
             Basis.NONE) for key, label, _, _ in VARIANTS),
)
log = logging.getLogger("load.b2c")


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures this benchmark reports (the same for every size)."""
    return METRICS


def run(sizes: Sizes) -> dict[str, float]:
    """Run the spec chains, then the code chains with and without the instance cache,
    each in a fresh deployment with one coordinator.

    Returns:
        The values of ``METRICS``.

    Raises:
        PartialResult: a workflow did not succeed, or a run did not finish within
            ``sizes.timeout_s``; it holds the figures measured before.
    """
    with keeping({}) as out:
        for key, _, code, env in VARIANTS:
            with deployment(f"b2c-{key}", sizes.workers, sizes.concurrency, env=env) as sandbox:
                rate, per_task = asyncio.run(measure(sandbox, sizes, 1, code))
            out[f"{key}_tasks_per_s"], out[f"{key}_history_per_task"] = rate, per_task
        for key in ("code", "nocache"):
            out[f"{key}_cost_ratio"] = out["spec_tasks_per_s"] / out[f"{key}_tasks_per_s"]
        log.warning("%s", _note(out))
    return out


def _note(out: dict[str, float]) -> str:
    """What a step in code cost against the spec chain (for the results' notes)."""
    verdict = "within" if out["code_cost_ratio"] <= COST_TARGET else "over"
    return (f"B2c: a task of the chain in code took {out['code_cost_ratio']:.2f}x the time "
            f"of a task of the spec chain ({out['code_tasks_per_s']:.0f} vs "
            f"{out['spec_tasks_per_s']:.0f} /s; {verdict} the {COST_TARGET:g}x target), "
            f"{out['nocache_cost_ratio']:.2f}x without the instance cache; history records "
            f"per task {out['code_history_per_task']:.1f} vs {out['spec_history_per_task']:.1f}")
