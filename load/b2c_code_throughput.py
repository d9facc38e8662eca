"""B2c, throughput in code: B2's chains of noop tasks as a spec and as the same chain
written as a code workflow (``load.noop_tasks.chain``: one ``wf.run`` per task), with the
workers' instance cache and without it; noop tasks completed per second at steady state,
with one coordinator, and what a task in code costs against a task of the spec chain.

A code chain of n tasks runs n + 1 activations besides them (the function deciding the
next step, on a worker of the same queue). Only the noop tasks' ``TaskSucceeded``
records are counted (the code node's odd indexes), so the rates compare the same work
done; the time per task, code ÷ spec, is the cost of a step in code (target ≤ 1.5).
Without the cache (``HEADWATER_WORKFLOW_CACHE_SIZE=0`` on the workers) every activation
runs the function from its start over the journal.

Two deployments, one with the cache and one without; in each the spec chains run first,
then (once the coordinator is idle) the code chains, and each code figure is divided by
the spec figure of its own deployment, so both ratios pair runs on the same processes,
close in time. Each run is B2's with one coordinator (``load.b2_throughput.measure``),
timed by the Kafka timestamps of the history records.
"""

from __future__ import annotations

import asyncio
import logging

from load.b2_throughput import Sizes, measure
from load.deploy import CACHE_OFF, deployment, wait_idle
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox

__all__ = ["METRICS", "NAME", "TITLE", "Sizes", "metrics", "run"]

NAME = "B2c"
TITLE = "throughput in code, 3-task chains"
COST_TARGET = 1.5
"""The most a step in code should cost, as a multiple of a spec chain's task."""
DEPLOYMENTS = (("code", "code chain, instance cache on", None),
               ("nocache", "code chain, no instance cache (every activation replays)",
                CACHE_OFF))
"""(key of the code figures, what runs, the workers' extra settings), in the order run;
the spec figure measured beside ``nocache`` is ``spec_nocache_tasks_per_s``."""
METRICS = (
    Metric("spec_tasks_per_s", "noop tasks completed per second, spec chain (cache on)", "/s",
           Basis.RATE),
    Metric("spec_nocache_tasks_per_s", "noop tasks completed per second, spec chain (cache "
           "off)", "/s", Basis.RATE),
    *(Metric(f"{key}_tasks_per_s", f"noop tasks completed per second, {label}", "/s",
             Basis.RATE) for key, label, _ in DEPLOYMENTS),
    Metric("code_cost_ratio", f"time per task, code ÷ spec (target ≤ {COST_TARGET:g})", "x",
           Basis.NONE),
    Metric("nocache_cost_ratio", "time per task, code without the cache ÷ spec", "x",
           Basis.NONE),
    Metric("spec_history_per_task", "history records per noop task, spec chain", "",
           Basis.NONE),
    *(Metric(f"{key}_history_per_task", f"history records per noop task, {label}", "",
             Basis.NONE) for key, label, _ in DEPLOYMENTS),
    Metric("code_continued_share", "activations decided by a continuation (after each "
           "chain's first), cache on", "", Basis.NONE),
)
log = logging.getLogger("load.b2c")


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures this benchmark reports (the same for every size)."""
    return METRICS


def run(sizes: Sizes) -> dict[str, float]:
    """Run the spec chains, then the code chains, in a deployment with the instance cache
    and in one without it.

    Returns:
        The values of ``METRICS``.

    Raises:
        PartialResult: a workflow did not succeed, or a run did not finish within
            ``sizes.timeout_s``; it holds the figures measured before.
    """
    with keeping({}) as out:
        for key, _, env in DEPLOYMENTS:
            with deployment(f"b2c-{key}", sizes.workers, sizes.concurrency, env=env) as sandbox:
                spec, code = asyncio.run(_pair(sandbox, sizes, out, key))
            out[f"{key}_cost_ratio"] = spec / code
        log.warning("%s", _note(out))
    return out


async def _pair(sandbox: Sandbox, sizes: Sizes, out: dict[str, float],
                key: str) -> tuple[float, float]:
    """The spec chains, then the code chains, in one deployment; keeps their figures in
    ``out`` and returns (spec, code) tasks per second."""
    spec_key = "spec" if key == "code" else f"spec_{key}"
    spec = await measure(sandbox, sizes, 1)
    out[f"{spec_key}_tasks_per_s"] = spec.rate
    out.setdefault("spec_history_per_task", spec.per_task)
    await wait_idle(sandbox, sizes.timeout_s)
    code = await measure(sandbox, sizes, 1, code=True)
    out[f"{key}_tasks_per_s"], out[f"{key}_history_per_task"] = code.rate, code.per_task
    if key == "code":
        out["code_continued_share"] = code.continued
    return out[f"{spec_key}_tasks_per_s"], out[f"{key}_tasks_per_s"]


def _note(out: dict[str, float]) -> str:
    """What a step in code cost against the spec chain (for the results' notes)."""
    verdict = "within" if out["code_cost_ratio"] <= COST_TARGET else "over"
    return (f"B2c: a task of the chain in code took {out['code_cost_ratio']:.2f}x the time "
            f"of a task of the spec chain ({out['code_tasks_per_s']:.0f} vs "
            f"{out['spec_tasks_per_s']:.0f} /s; {verdict} the {COST_TARGET:g}x target), "
            f"{out['nocache_cost_ratio']:.2f}x without the instance cache "
            f"({out['nocache_tasks_per_s']:.0f} vs {out['spec_nocache_tasks_per_s']:.0f} /s); "
            f"history records per task {out['code_history_per_task']:.1f} vs "
            f"{out['spec_history_per_task']:.1f}; {out['code_continued_share']:.0%} of the "
            "activations after each chain's first decided by a continuation")
