"""What ``WorkflowRestarted`` writes to the PostgreSQL projection (``restart_on_failure``).

A restart starts the run over as its next generation: the ``workflows`` row gets the
generation and the restart's ``seq`` (``restarted_seq``), and the previous generation's
``tasks``, ``nodes`` and ``loop_steps`` rows go (those of the new generation are written
by its own events, all later than the restart).

The rows go in a sweep that ends every batch (``SWEEPS``, run by ``writer.project``
after every other statement, for the batch's workflows): it deletes each such row whose
``seq`` is below its workflow's ``restarted_seq``. So an event of an old generation
projected in the same batch, or again later (a projector that lost its partitions
finishing the batch in hand, a rebuild), cannot leave a row behind: the sweep of that
batch removes it. A workflow never restarted has ``restarted_seq`` 0, and the sweep
finds nothing of it.
"""

from __future__ import annotations

from headwater.core import events as ev
from services.projector.statements import Statements

SET_GENERATION = (
    "update workflows set generation = greatest(generation, $2),"
    " restarted_seq = greatest(restarted_seq, $3) where workflow_id = $1")
RESTART_STATEMENTS = (SET_GENERATION,)
"""The restart's own statements, in the order a batch applies them (after all others)."""
_SWEEP = ("delete from {table} r using workflows w where w.workflow_id = any($1::text[])"
          " and w.restarted_seq > 0 and r.workflow_id = w.workflow_id"
          " and r.seq < w.restarted_seq")
SWEEPS = tuple(_SWEEP.format(table=t) for t in ("tasks", "nodes", "loop_steps"))
"""Deletes of the rows older than their workflow's latest restart, given the ids of a
batch's workflows (``$1``), in the projector's lock order (``rebuild.LOCK_ORDER``)."""


def restart_plan(e: ev.HistoryEvent) -> Statements:
    """The statements that project a ``WorkflowRestarted`` (none for any other event)."""
    if not isinstance(e.body, ev.WorkflowRestarted):
        return []
    return [(SET_GENERATION, (e.workflow_id, e.body.generation, e.seq))]
