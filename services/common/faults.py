"""Fault points: places where a test can make a service kill itself with SIGKILL.

``HEADWATER_FAULTS`` names points and the hit at which to die, comma-separated:
``coordinator.after_publish=3`` kills the process the third time it passes that point;
``coordinator.before_intent=3:stop`` stops it there (SIGSTOP) instead. A point passed
with a label (a worker's: the attempt's task, or the ``@workflow`` a replay runs) can be
armed for that label alone: ``worker.after_start@fault.code=3`` kills the worker the
third time an attempt of ``fault.code`` (an activation of that workflow) has started,
whatever else it ran; ``worker.after_start=3`` counts every attempt.
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
  committable); the task is about to run. Labelled with the task.
- ``worker.before_outcome``: an attempt has ended (a ``@workflow``'s activation: its
  function has decided) and its log is sent; its outcome is not reported yet. Labelled
  with the task.
- ``worker.after_outcome``: an attempt's outcome is acknowledged; nothing committed since.
  Labelled with the task.
- ``worker.replaying``: a worker running an activation of a ``@workflow`` without the
  run's instance in its cache (``headwater/workflows/activation.py``: after a crash, on
  another worker) re-ran one of the earlier activations from the history; the activation
  it was asked for has not run yet. Labelled with the workflow's name.
- ``gateway.after_produce``: a submission was claimed and produced; the client has had
  no answer.
- ``gateway.trigger_acked``: a trigger's batch of submissions and dead letters is
  acknowledged by Kafka; its offsets are not committed.
- ``gateway.operation_acted``: a bulk operation's batch of targets was acted on (a
  bulk cancel's requests acknowledged by Kafka); the batch's record is not written, so
  the gateway that takes the operation over acts on those targets again.
- ``webhooks.after_decide``: a batch of events' deliveries are kept in PostgreSQL; the
  batch's offsets are not committed and no delivery was attempted.
"""

from __future__ import annotations

import logging
import os
import signal

ENV = "HEADWATER_FAULTS"
POINTS = frozenset({
    "coordinator.before_intent", "coordinator.after_intent", "coordinator.after_publish",
    "coordinator.after_redo", "worker.after_start", "worker.before_outcome",
    "worker.after_outcome", "worker.replaying", "gateway.after_produce",
    "gateway.trigger_acked", "gateway.operation_acted",
    "webhooks.after_decide",
})
LABEL_SEP = "@"
"""Between a point and the label it is armed for (``worker.after_start@fault.code``)."""

log = logging.getLogger("headwater.faults")


STOP = "stop"
"""The action after ``:``: SIGSTOP instead of SIGKILL (the process stands still until a
SIGCONT, as a frozen container would; ``services/coordinator/freeze.py``)."""


def parse(spec: str) -> dict[str, tuple[int, str]]:
    """``"a=3,b@t=1:stop"`` -> ``{"a": (3, "kill"), "b@t": (1, "stop")}``.

    Raises:
        ValueError: an unknown point or action, an empty label, or a hit number below 1.
    """
    out: dict[str, tuple[int, str]] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, rest = part.partition("=")
        hit, _, action = rest.partition(":")
        point_name, sep, label = name.partition(LABEL_SEP)
        if point_name not in POINTS:
            raise ValueError(f"{ENV}: unknown fault point {point_name!r} (one of "
                             f"{sorted(POINTS)})")
        if sep and not label:
            raise ValueError(f"{ENV}: {part!r} needs a label after {LABEL_SEP}, e.g. "
                             f"{point_name}{LABEL_SEP}fault.code=3")
        if not (hit.isascii() and hit.isdigit()) or int(hit) < 1:
            raise ValueError(f"{ENV}: {part!r} needs a hit number >= 1, e.g. {name}=3")
        if action not in ("", STOP):
            raise ValueError(f"{ENV}: {part!r}: unknown action {action!r} (none, or {STOP})")
        out[name] = (int(hit), action or "kill")
    return out


_armed = parse(os.environ.get(ENV, ""))
_hits: dict[str, int] = {}


def point(name: str, label: str = "") -> None:
    """Pass the fault point ``name`` (with ``label``: as ``name`` and as
    ``name@label``); at an armed hit, die here (SIGKILL) or, with the ``stop`` action,
    stand still (SIGSTOP) until continued."""
    if not _armed:
        return
    for armed in (name, f"{name}{LABEL_SEP}{label}") if label else (name,):
        if armed in _armed:
            _pass(armed)


def _pass(armed: str) -> None:
    """Count one pass of the armed point ``armed``; act at its hit."""
    _hits[armed] = _hits.get(armed, 0) + 1
    hit, action = _armed[armed]
    if _hits[armed] != hit:
        return
    if action == STOP:
        log.critical("fault point %s reached (hit %d): SIGSTOP", armed, hit)
        os.kill(os.getpid(), signal.SIGSTOP)
        return
    log.critical("fault point %s reached (hit %d): SIGKILL", armed, hit)
    logging.shutdown()
    os.kill(os.getpid(), signal.SIGKILL)
