"""The services' wall clock: the one place that turns "now" into event timestamps.

Every event Headwater records carries ``at_ms``, milliseconds since the Unix epoch
(see docs/architecture.md). The decision core never reads a clock (it is
handed times); the services, the operator tools and the load generators read it
here, so that "now" means the same thing everywhere and tests can patch one name.
"""

from __future__ import annotations

import time

__all__ = ["now_ms"]


def now_ms() -> int:
    """The wall-clock time now.

    Returns:
        Milliseconds since the Unix epoch (UTC), truncated to an integer, as read
        from ``time.time()``; not monotonic (it follows the system clock).
    """
    return int(time.time() * 1000)
