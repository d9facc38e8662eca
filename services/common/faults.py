"""Fault points: places where a test can make a service kill itself with SIGKILL.

``HEADWATER_FAULTS`` names points and the hit at which to die, comma-separated:
``coordinator.after_publish=3`` kills the process the third time it passes that point;
``coordinator.before_intent=3:stop`` stops it there (SIGSTOP) instead.
Unset (always, outside the fault-injection suite) every point is a dictionary lookup
that does nothing. SIGKILL rather than an exception: nothing may run after the point
(no ``finally``, no flush, no commit), exactly as when the machine loses power.

Points (the order of side effects they cut is each service's docstring's):

- ``coordinator.before_intent``: a batch was consumed and applied in memory; nothing
  was written or published.
- ``coordinator.after_intent``: its intents (``services/coordinator/intents.py``) are
  durable in the table; no table entry was written, nothing published.
- ``coordinator.after_publish``: its table entries are durable and its history events
  and dispatches acknowledged; the intents were not cleared, the input offsets not
  committed.
- ``coordinator.after_redo``: after a restart, the intents a dead batch left were carried
  out again; they were not cleared, and no input was read yet.
- ``worker.after_start``: an attempt's ``TaskStarted`` is acknowledged (its offset is
  committable); the task is about to run.
- ``worker.after_outcome``: an attempt's outcome is acknowledged; nothing committed since.
- ``gateway.after_produce``: a submission was claimed and produced; the client has had
  no answer.
"""

from __future__ import annotations

import logging
import os
import signal

ENV = "HEADWATER_FAULTS"
POINTS = frozenset({
    "coordinator.before_intent", "coordinator.after_intent", "coordinator.after_publish",
    "coordinator.after_redo", "worker.after_start", "worker.after_outcome",
    "gateway.after_produce",
})

log = logging.getLogger("headwater.faults")


STOP = "stop"
"""The action after ``:``: SIGSTOP instead of SIGKILL (the process stands still until a
SIGCONT, as a frozen container would; ``services/coordinator/freeze.py``)."""


def parse(spec: str) -> dict[str, tuple[int, str]]:
    """``"a=3,b=1:stop"`` -> ``{"a": (3, "kill"), "b": (1, "stop")}``.

    Raises:
        ValueError: an unknown point or action, or a hit number below 1.
    """
    out: dict[str, tuple[int, str]] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, rest = part.partition("=")
        hit, _, action = rest.partition(":")
        if name not in POINTS:
            raise ValueError(f"{ENV}: unknown fault point {name!r} (one of {sorted(POINTS)})")
        if not (hit.isascii() and hit.isdigit()) or int(hit) < 1:
            raise ValueError(f"{ENV}: {part!r} needs a hit number >= 1, e.g. {name}=3")
        if action not in ("", STOP):
            raise ValueError(f"{ENV}: {part!r}: unknown action {action!r} (none, or {STOP})")
        out[name] = (int(hit), action or "kill")
    return out


_armed = parse(os.environ.get(ENV, ""))
_hits: dict[str, int] = {}


def point(name: str) -> None:
    """Pass the fault point ``name``; at the armed hit, die here (SIGKILL) or, with the
    ``stop`` action, stand still (SIGSTOP) until continued."""
    if not _armed or name not in _armed:
        return
    _hits[name] = _hits.get(name, 0) + 1
    hit, action = _armed[name]
    if _hits[name] != hit:
        return
    if action == STOP:
        log.critical("fault point %s reached (hit %d): SIGSTOP", name, hit)
        os.kill(os.getpid(), signal.SIGSTOP)
        return
    log.critical("fault point %s reached (hit %d): SIGKILL", name, hit)
    logging.shutdown()
    os.kill(os.getpid(), signal.SIGKILL)
