"""When a delivery is tried again, and when it is given up: pure, from plain values.

After a failed attempt ``n`` (1, 2, ...) of ``max_attempts``, the next comes
``backoff_ms * 2**(n-1)`` later, at most ``backoff_max_ms``, with a jitter of up to
+10 % derived from the delivery's id (deterministic: the same delivery waits the same
after the same attempt, and deliveries failing together spread out). After the last
attempt the delivery is dead-lettered with the last attempt's outcome as its reason.
An attempt succeeds on a 2xx answer; any other answer, or no answer (refused, timed
out), fails it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

DEFAULT_MAX_ATTEMPTS = 8
DEFAULT_BACKOFF_MS = 2_000
DEFAULT_BACKOFF_MAX_MS = 600_000
MAX_ATTEMPTS_LIMIT = 50
"""The most attempts a webhook may ask."""
JITTER = 0.1
"""The most a wait is lengthened by its jitter, as a fraction of it."""


@dataclass(frozen=True)
class Outcome:
    """One attempt's outcome.

    Attributes:
        status_code: the receiver's HTTP status, or None when none came.
        error: why no answer came ("" when one did).
    """

    status_code: int | None
    error: str = ""

    @property
    def ok(self) -> bool:
        """Whether the receiver took the delivery (a 2xx status)."""
        return self.status_code is not None and 200 <= self.status_code < 300

    def reason(self) -> str:
        """What the outcome says, for a dead letter: ``HTTP 500`` or the error."""
        if self.status_code is not None:
            return f"HTTP {self.status_code}"
        return self.error or "no answer"


@dataclass(frozen=True)
class Policy:
    """A webhook's retry settings.

    Attributes:
        max_attempts: attempts of one delivery before it is dead.
        backoff_ms: the wait after the first failed attempt, ms.
        backoff_max_ms: the longest wait, ms.
    """

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff_ms: int = DEFAULT_BACKOFF_MS
    backoff_max_ms: int = DEFAULT_BACKOFF_MAX_MS


@dataclass(frozen=True)
class Next:
    """What follows an attempt.

    Attributes:
        status: ``delivered``, ``pending`` (tried again at ``retry_at_ms``) or ``dead``.
        retry_at_ms: when the next attempt is due, ms since the epoch (pending only).
        reason: why it is dead ("" otherwise).
    """

    status: str
    retry_at_ms: int | None = None
    reason: str = ""


def jitter_fraction(delivery_id: str, attempt: int) -> float:
    """A fraction in [0, ``JITTER``) derived from the delivery's id and attempt."""
    digest = hashlib.sha256(f"{delivery_id}/{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 * JITTER


def delay_ms(attempt: int, backoff_ms: int, backoff_max_ms: int, delivery_id: str) -> int:
    """The wait after failed attempt ``attempt`` (from 1), ms, jitter included."""
    base = min(backoff_max_ms, backoff_ms << min(attempt - 1, 40))
    return round(base * (1 + jitter_fraction(delivery_id, attempt)))


GONE = 410
"""The answer after which a delivery is not tried again (RFC 9110: the target is gone,
and that is likely permanent)."""


def after(attempt: int, outcome: Outcome, now_ms: int, policy: Policy,
          delivery_id: str) -> Next:
    """What follows attempt ``attempt`` (from 1) that had ``outcome`` at ``now_ms``.

    Args:
        attempt: the attempt just made, from 1.
        outcome: its outcome.
        now_ms: when it ended, ms since the epoch.
        policy: the webhook's retry settings.
        delivery_id: the delivery's id (its jitter).

    Returns:
        ``delivered``; ``pending`` with the next attempt's time; or ``dead`` with the
        reason (``after N attempts: HTTP 500``).
    """
    if outcome.ok:
        return Next("delivered")
    if outcome.status_code == GONE:  # the receiver says it is gone for good
        return Next("dead", reason=f"after {attempt} attempts: {outcome.reason()} "
                                   "(gone: not tried again)")
    if attempt >= policy.max_attempts:
        return Next("dead", reason=f"after {attempt} attempts: {outcome.reason()}")
    return Next("pending", now_ms + delay_ms(attempt, policy.backoff_ms,
                                             policy.backoff_max_ms, delivery_id))


def schedule_ms(policy: Policy, delivery_id: str) -> list[int]:
    """The waits between the attempts of a delivery that always fails, ms (one fewer
    than ``max_attempts``): what a webhook's settings mean, for docs and tests."""
    return [delay_ms(n, policy.backoff_ms, policy.backoff_max_ms, delivery_id)
            for n in range(1, policy.max_attempts)]
