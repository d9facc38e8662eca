"""Where a request's CPU-bound checks run: on the event loop for a small body, in a
worker thread for a large one.

Checking a body's values (``body.require_storable``), hashing it, parsing a spec take
time in proportion to the body (``parse_spec`` some 40 to 80 microseconds a task node
on a busy two-core machine): for a body of megabytes, long enough to stall every other
request on the event loop (/health included), so such work goes to a worker thread
(``asyncio.to_thread``). For a body of a few hundred bytes the work costs about what
the handoff to a thread and back costs (60 to 100 microseconds there, each of the three
or four a submission makes, with the GIL passed to and fro): there it runs on the
event loop. ``INLINE_BODY_BYTES`` is the bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

INLINE_BODY_BYTES = 1024
"""The largest body, bytes, whose checks run on the event loop: a spec of up to a dozen
task nodes, whose checks (``require_storable``, the hash, ``parse_spec``, its input
references) took 0.6 to 0.8 ms on a busy two-core machine, the longest stall the
loop's other requests see; a spec of one node, 0.05 to 0.07 ms."""


def inline_for(body_bytes: int | None) -> bool:
    """Whether the checks of a body of ``body_bytes`` bytes run on the event loop: when
    it is known (None: a value the request did not bound, a definition's spec read from
    the registry, say) and at most ``INLINE_BODY_BYTES``."""
    return body_bytes is not None and 0 <= body_bytes <= INLINE_BODY_BYTES


async def run_check(inline: bool, check: Callable[P, T], *args: P.args,
                    **kwargs: P.kwargs) -> T:
    """``check(*args, **kwargs)``: here when ``inline`` (``inline_for``), else in a
    worker thread.

    Raises:
        Exception: whatever ``check`` raised.
    """
    if inline:
        return check(*args, **kwargs)
    return await asyncio.to_thread(check, *args, **kwargs)
