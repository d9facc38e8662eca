"""One worker pool per queue, sized from the deploy hints of the tasks that run there
(``headwater.scaling``): how many workers, whether an autoscaler runs them, and what
each worker requests.

Several tasks of one queue share its workers, so their hints are merged to satisfy each:
the largest ``cpu``, ``memory`` and ``gpu``; bounds that hold every task's (the largest
minimum and the largest maximum). A pool is fixed (``replicas``, no autoscaler) when its
tasks give only ``replicas``; otherwise an autoscaler keeps it between the bounds, by
default 1 and the topic's partitions (a worker beyond them would get none). A GPU pool
runs one attempt at a time per worker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from headwater.scaling import quantity

DEFAULT_CPU = "1"
"""CPU a worker requests when no task of its queue says (as the base manifests')."""
DEFAULT_MEMORY = "512Mi"
"""Memory a worker requests when no task says; its limit is ``DEFAULT_MEMORY_LIMIT``."""
DEFAULT_MEMORY_LIMIT = "1Gi"
"""The memory limit of a worker whose tasks give no ``memory`` (given: the limit is it)."""
CONCURRENCY = 8
"""Attempts at a time per worker (``HEADWATER_CONCURRENCY``); 1 on a GPU pool."""


@dataclass(frozen=True)
class Pool:
    """The workers of one queue.

    Attributes:
        queue: the queue.
        tasks: the names of the tasks it runs, sorted.
        min_replicas: the fewest workers (the count, when ``fixed``).
        max_replicas: the most workers (the count, when ``fixed``).
        fixed: no autoscaler: ``min_replicas`` workers always.
        cpu: CPU each worker requests (a Kubernetes quantity).
        memory: memory each worker requests.
        memory_limit: memory each worker may use.
        gpu: GPUs each worker asks for (0: none).
        concurrency: attempts at a time per worker.
    """

    queue: str
    tasks: tuple[str, ...]
    min_replicas: int
    max_replicas: int
    fixed: bool
    cpu: str
    memory: str
    memory_limit: str
    gpu: int
    concurrency: int


def _largest(values: Iterable[Any]) -> Any:
    """The largest of Kubernetes quantities, as given (None: none given)."""
    given = [v for v in values if v is not None]
    return max(given, key=lambda v: quantity(v) or 0.0) if given else None


def pool(queue: str, tasks: Mapping[str, Mapping[str, Any]], partitions: int) -> Pool:
    """The pool of ``queue`` whose ``tasks`` (name -> deploy hints) run there.

    Args:
        queue: the queue.
        tasks: each task's hints (``headwater.scaling.DEPLOY_KEYS``).
        partitions: the topics' partitions (``HEADWATER_PARTITIONS``): the default
            maximum.
    """
    hints = list(tasks.values())
    fixed_counts = [h["replicas"] for h in hints if "replicas" in h]
    lows = [h.get("min_replicas") for h in hints] + fixed_counts
    highs = [h.get("max_replicas") for h in hints] + fixed_counts
    bounded = any(("min_replicas" in h or "max_replicas" in h) for h in hints)
    fixed = bool(fixed_counts) and not bounded
    low = max([v for v in lows if v is not None], default=1)
    high = max([v for v in highs if v is not None], default=max(partitions, low))
    if fixed:
        low = high = max(fixed_counts)
    memory = _largest(h.get("memory") for h in hints)
    gpu = max([int(h.get("gpu", 0)) for h in hints], default=0)
    return Pool(queue=queue, tasks=tuple(sorted(tasks)), min_replicas=low,
                max_replicas=max(high, low), fixed=fixed,
                cpu=str(_largest(h.get("cpu") for h in hints) or DEFAULT_CPU),
                memory=str(memory or DEFAULT_MEMORY),
                memory_limit=str(memory or DEFAULT_MEMORY_LIMIT), gpu=gpu,
                concurrency=1 if gpu else CONCURRENCY)


def pools(tasks: Iterable[tuple[str, str, Mapping[str, Any]]], partitions: int = 8
          ) -> list[Pool]:
    """A pool per queue of ``tasks`` (``(name, queue, hints)``), by queue."""
    by_queue: dict[str, dict[str, Mapping[str, Any]]] = {}
    for name, queue, hints in tasks:
        by_queue.setdefault(queue, {})[name] = hints
    return [pool(q, by_queue[q], partitions) for q in sorted(by_queue)]
