"""Retry policy: how many attempts, and the backoff before each retry.

The delay before attempt ``k + 1`` (after attempt ``k`` failed) is
``min(backoff_max, backoff_base * multiplier ** (k - 1))``, then spread by ``jitter``
with a fraction derived from the dispatch id, so that a replay computes the same delay.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_ATTEMPTS_LIMIT = 1_000_000
MAX_SECONDS = 30 * 24 * 3600  # no backoff beyond 30 days: keeps deadlines in an Avro long


@dataclass(frozen=True)
class RetryPolicy:
    """Per-node retry policy.

    Attributes:
        max_attempts: attempts in all, the first included (1 = no retry).
        backoff_base: delay before the first retry, seconds.
        backoff_max: no delay exceeds this, seconds.
        multiplier: growth factor of the delay per attempt.
        jitter: fraction in [0, 1]; the delay is scaled by a factor in
            ``[1 - jitter, 1 + jitter]`` and then capped at ``backoff_max``.
    """

    max_attempts: int = 1
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    multiplier: float = 2.0
    jitter: float = 0.0


def unit_fraction(key: str) -> float:
    """A deterministic number in [0, 1) derived from ``key`` (BLAKE2b, 53 bits)."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") >> 11) / float(1 << 53)


def backoff_seconds(policy: RetryPolicy, failed_attempt: int, dispatch_id: str) -> float:
    """Delay before the retry that follows ``failed_attempt``.

    Args:
        policy: the node's policy.
        failed_attempt: the attempt that failed, 1-based.
        dispatch_id: id of the failed attempt's dispatch, the jitter's seed.

    Returns:
        Seconds, in ``[0, backoff_max]``. Never overflows: the exponent is capped
        before multiplying.
    """
    base, cap, mult = policy.backoff_base, policy.backoff_max, policy.multiplier
    exponent = max(failed_attempt - 1, 0)
    if base <= 0:
        raw = 0.0
    elif mult <= 1.0 or base >= cap:
        raw = min(cap, base)
    else:
        steps_to_cap = math.ceil(math.log(cap / base, mult))
        raw = cap if exponent >= steps_to_cap else min(cap, base * mult**exponent)
    if policy.jitter > 0:
        spread = 2.0 * unit_fraction(dispatch_id) - 1.0
        raw *= 1.0 + policy.jitter * spread
    return max(0.0, min(cap, raw))


def parse_retry(raw: Any, default: RetryPolicy, where: str, faults: list[str]) -> RetryPolicy:
    """Build a policy from spec data, starting from ``default``; append faults found."""
    if raw is None:
        return default
    if not isinstance(raw, Mapping):
        faults.append(f"{where}: must be a mapping")
        return default
    values: dict[str, Any] = {
        "max_attempts": default.max_attempts,
        "backoff_base": default.backoff_base,
        "backoff_max": default.backoff_max,
        "multiplier": default.multiplier,
        "jitter": default.jitter,
    }
    for key, value in raw.items():
        fault = _value_fault(key, value) if key in values else f"unknown field {key!r}"
        if fault:
            faults.append(f"{where}: {fault}")
        else:
            values[key] = value
    if values["backoff_max"] < values["backoff_base"]:
        faults.append(f"{where}: backoff_max must be >= backoff_base")
    return RetryPolicy(
        max_attempts=int(values["max_attempts"]),
        backoff_base=float(values["backoff_base"]),
        backoff_max=float(values["backoff_max"]),
        multiplier=float(values["multiplier"]),
        jitter=float(values["jitter"]),
    )


def finite_number(value: Any) -> bool:
    """Whether ``value`` is an int or float (not a bool) that a float can hold: finite,
    and an int small enough (``10**400`` is an int, but no float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _value_fault(key: str, value: Any) -> str | None:
    """What is wrong with ``value`` for the policy field ``key``, or None."""
    if key == "max_attempts":
        return _attempts_fault(value)
    if not finite_number(value) or value < 0:
        return f"{key} must be a finite non-negative number"
    if key in ("backoff_base", "backoff_max") and value > MAX_SECONDS:
        return f"{key} must be at most {MAX_SECONDS} seconds"
    if key == "multiplier" and value > 1000:
        return "multiplier must be at most 1000"
    if key == "jitter" and value > 1:
        return "jitter must be within [0, 1]"
    return None


def _attempts_fault(value: Any) -> str | None:
    if type(value) is not int or not 1 <= value <= MAX_ATTEMPTS_LIMIT:
        return f"max_attempts must be an integer in 1..{MAX_ATTEMPTS_LIMIT}"
    return None
