"""Deploy hints: how many workers a queue wants and what each needs, as ``@task`` and
``@workflow`` declare them (``headwater deploy`` turns them into each queue's Deployment
and autoscaler, ``ops/deploy/``).

    @task(queue="gpu", gpu=1, memory="8Gi", min_replicas=0, max_replicas=4)

``replicas`` fixes the count (no autoscaler); ``min_replicas`` and ``max_replicas``
bound an autoscaler; ``cpu`` and ``memory`` are Kubernetes quantities (``"500m"``,
``"2Gi"``, or a number of cores or bytes) requested per worker; ``gpu`` a number of GPUs
per worker. The hints are checked when the decorator runs (``hint_fault``), so a typo
fails at import, not at deploy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

DEPLOY_KEYS = ("replicas", "min_replicas", "max_replicas", "cpu", "memory", "gpu")
"""The scaling and resource hints the deploy step reads (``TaskInfo.deploy``,
``WorkflowInfo.deploy``)."""
_COUNTS = ("replicas", "min_replicas", "max_replicas", "gpu")
_QUANTITY = re.compile(r"(?P<number>[0-9]+(\.[0-9]+)?)(?P<unit>m|Ki|Mi|Gi|Ti|k|M|G|T)?")
_UNITS: dict[str, float] = {"": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
                            "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}


def hint_fault(options: Mapping[str, Any]) -> str | None:
    """Why the deploy hints among ``options`` are wrong, or None: they are right.

    Counts are whole numbers from 0 (``min_replicas`` at most ``max_replicas``);
    ``cpu`` and ``memory`` Kubernetes quantities or positive numbers.
    """
    for key in _COUNTS:
        value = options.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            return f"{key} must be a whole number >= 0, not {value!r}"
    low, high = options.get("min_replicas"), options.get("max_replicas")
    if low is not None and high is not None and low > high:
        return f"min_replicas {low} is over max_replicas {high}"
    for key in ("cpu", "memory"):
        value = options.get(key)
        if value is not None and quantity(value) is None:
            return (f"{key} must be a Kubernetes quantity such as '500m' or '2Gi', "
                    f"not {value!r}")
    return None


def quantity(value: Any) -> float | None:
    """A Kubernetes quantity's value (``"500m"`` -> 0.5, ``"2Gi"`` -> 2147483648.0, a
    number as it is), or None when ``value`` is none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value >= 0 else None
    if not isinstance(value, str):
        return None
    found = _QUANTITY.fullmatch(value)
    if found is None:
        return None
    return float(found["number"]) * _UNITS[found["unit"] or ""]


def hints_of(options: Mapping[str, Any]) -> dict[str, Any]:
    """The deploy hints among ``options`` (those given, by ``DEPLOY_KEYS``)."""
    return {k: options[k] for k in DEPLOY_KEYS if k in options and options[k] is not None}
