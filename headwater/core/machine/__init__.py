"""The pure state machine: ``step(state, input) -> (state, history events)``.

No I/O, no clock, no randomness: time comes from the input record and retry jitter from
the dispatch id (docs/architecture.md, invariant 4). Every decision is recorded as a
history event and the state changes only through ``evolve``
(``headwater/core/evolve.py``), so replaying the history rebuilds the state. Dispatches
and timers are history events too (``TaskDispatched``, ``TimerScheduled``); the
coordinator publishes them to their topics and arms the timers.

Rules:
- a node starts when all its needs have finished usable (succeeded, or failed with
  ``continue_on_error``); a node that needs a skipped node, or a failed one whose error
  went to an error route, is skipped. A map fans out over its list, at most
  ``max_concurrency`` children in flight (``kinds.map.DEFAULT_MAP_CONCURRENCY`` when it
  sets none; a step dispatches ``kinds.map.STEP_DISPATCHES`` at most, the rest as
  children finish), and its output keeps input order;
- a failed attempt is retried after ``retry.backoff_seconds`` through a durable timer
  until ``max_attempts``. An attempt fails when the worker says so, when its deadline
  (``timeout`` after dispatch) passes, or when it is lost (no report within
  ``heartbeat_timeout``); the last two count as attempts like any other;
- a node that fails for good (the last attempt failed, a non-retryable error, or a
  reference that cannot be resolved) is ``failed``, and its unfinished map children are
  cancelled. Then, in this order: with ``continue_on_error`` its dependents run and see
  ``{"error": ...}`` as its output (a map of that kind runs every item and keeps the
  error objects among its results); with ``on_error: H`` the handler H runs with the
  error as its input and the node's dependents are skipped; otherwise every node
  downstream of it is ``upstream_failed``, every unfinished attempt is cancelled, the
  other nodes are cancelled and the workflow fails (fail fast);
- an error handler whose node did not fail is skipped; a workflow in which every node
  finished (none failed without a route) succeeds;
- cancelling cancels every unfinished attempt (``TaskCancelled``, which workers obey),
  cancels the unfinished nodes and ends the workflow ``cancelled``; pending timers go;
- reports are fenced by attempt: a report for an unknown task or a finished workflow,
  a duplicate outcome, a second start, a report after the attempt's outcome changes
  nothing and records nothing, except that a late outcome of an attempt that had timed
  out, was lost, was cancelled or was superseded by a later attempt is recorded as
  ``ReportDiscarded``.

The coordinator enters through ``decide`` (``decide.decide``): the screen (retention,
leases a heartbeat moved, ``refusals``, ``conflicts``) and then the step, one pure call
per input that returns a ``Decision``.

Where the rules live (one module per family): ``decide`` (the screen and the step, and
failing a workflow as data: ``failed``, ``oversized``), ``refusals``, ``conflicts``,
``inputs`` (``step``, ``fail`` and the table of inputs by type), ``submission``,
``reports`` (fencing and outcomes), ``timers`` (deadline, lease, a node's own timer),
``dispatch`` (an attempt's input, its ``TaskDispatched`` and the retry timer), ``flow``
(starting a node by its kind, finishing, settling and skipping nodes, a node failing for
good), ``ending`` (the end of the workflow, its output), ``restart``; ``recorder`` numbers
and evolves what they decide.
Each node kind's own rules are in its unit (``headwater/core/kinds/``), found through
``headwater.core.registry``: no module here imports a kind.
"""

from __future__ import annotations

from headwater.core.machine.decide import (
    DEFERRED_WINDOW_MS,
    MAX_DEFERRED,
    Context,
    Decision,
    LeaseSeen,
    decide,
    failed,
    oversized,
)
from headwater.core.machine.inputs import fail, start, step
from headwater.core.machine.recorder import Step

__all__ = ["DEFERRED_WINDOW_MS", "MAX_DEFERRED", "Context", "Decision", "LeaseSeen", "Step",
           "decide", "fail", "failed", "oversized", "start", "step"]
