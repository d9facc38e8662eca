"""A step's result and the function's next decision in one report (a continuation).

Between two steps of a chain the function needs one activation: the coordinator records
the step's result, dispatches activation k with it, a worker runs the function on to
its next wait and reports the decision, and only then is the next step dispatched. The
worker that ran the step usually holds the run's instance already (its cache kept it
from activation k-1, whose steps travel in the same lane and partition), so it can hand
the function the result itself and report the decision of activation k with the step's
success (``TaskSucceeded.continuation``, ``headwater.workflows.instances.continued``).

The coordinator takes such a decision only when it is exactly what activation k would
have been given and would have decided on (``accepted``):
- activation k is the one it would dispatch now: every earlier activation has decided,
  and k is the next number;
- the instance ran this run's activations: the times of its first and its last
  (``first_ms``, ``after_ms``) are this journal's, and so is the digest of every one's
  time and the steps whose results it was given, in order (``digest``,
  ``journal.act_digest``): an instance of an earlier run under the same id, or one
  that went ahead on a continuation that was ignored, was given others (times alone
  do not tell: the coordinator may dispatch the activation with another step's result
  in the very millisecond the ignored continuation was given its own);
- this step's result is the only one no activation was given (``through``: the count of
  results handed to the function, this one included, equals the journal's);
- its time (what ``wf.now()`` returned in it: the step's dispatch time plus how long
  the worker held the step, so the coordinator's clock) is not before the
  previous activation's, nor after the coordinator's own;
- the decision is well formed and numbers its steps after those issued.
A continuation that fails any of these is ignored (the activation is dispatched as
usual, and the worker's instance, which went ahead, is not reused: its through and
times differ from the next activation's). Taken, it is recorded as activation k would
be: its ``TaskDispatched`` (with ``"continued": s`` in its input, the step that carried
it; no dispatch record is sent for it) and its ``TaskSucceeded``, in the same input's
events. A replay, a projection and the harness see an activation like any other.

Why this is the same run: the function is deterministic over its journal (what replay
checks), and an activation's input is fixed by history (the results it is given, in
order, and its time); the continuation is taken only when its input is that one. A
worker killed before it reports loses the step's attempt as before (no continuation
without the step's success, in the same record); a coordinator that applies the record
again decides the same.
"""

from __future__ import annotations

from typing import Any

from headwater.core import events as ev
from headwater.core.kinds.code import journal as jr
from headwater.core.kinds.code.decision import decision_fault, numbering_fault
from headwater.core.machine import dispatch
from headwater.core.machine.recorder import Recorder
from headwater.core.spec import NodeSpec
from headwater.core.state import WorkflowState

MAX_MESSAGE_CHARS = 2000
"""The longest progress message a continuation's activation records."""
CONTINUED = "continued"
"""The key of an activation's recorded input that names the step whose report carried
its decision (such a dispatch is sent to no worker)."""


def is_continued(body: ev.TaskDispatched) -> bool:
    """Whether ``body`` records an activation decided by a continuation (the
    coordinator sends no dispatch record for it)."""
    return (jr.is_activation(body.index) and isinstance(body.input, dict)
            and CONTINUED in body.input)


def to_instance(state: WorkflowState, body: ev.TaskDispatched) -> bool:
    """Whether ``body`` should reach the worker holding the run's instance (its dispatch
    record keyed by the workflow id, so on the partition, and the worker, of the run's
    other such dispatches): an activation of a code node, or a step its decision issued
    alone (a chain's). Any other dispatch is keyed by its dispatch id, so that a
    ``gather``'s steps spread over the queue's workers; the last to end carries no
    continuation unless it ran where the instance is, and the activation that follows
    goes there.

    A step's continuation is taken only from the worker holding the instance (the one
    that ran the previous activation, which only it can go on from); keyed by its
    dispatch id, a chain's step reached that worker once in every n (n: the queue's
    workers), and its activation, dispatched instead, found no instance elsewhere and
    ran the function from its start. A function of the run's recorded state alone."""
    if body.index is None or not jr.is_code_node(state, body.node):
        return False
    if jr.is_activation(body.index):
        return True
    steps = jr.journal(state, body.node)["steps"]
    s = body.index // 2
    if not 0 <= s < len(steps):
        return False
    return _alone(steps, s)


def _alone(steps: list[dict[str, Any]], s: int) -> bool:
    """Whether step ``s`` is the only step its activation issued, a patch marker aside:
    ``wf.patched`` records a marker in the decision that issues the chain's next step,
    yet no worker runs it, so it does not make that step part of a fan-out. An
    activation's steps are contiguous in the journal, so only their neighbours are
    looked at."""
    act = steps[s]["act"]

    def same(t: int) -> bool:
        return 0 <= t < len(steps) and steps[t]["act"] == act

    before, after = s - 1, s + 1
    while same(before) and steps[before]["op"] == "patch":
        before -= 1
    while same(after) and steps[after]["op"] == "patch":
        after += 1
    return not same(before) and not same(after)


def accepted(state: WorkflowState, spec: NodeSpec, report: ev.TaskSucceeded,
             now_ms: int) -> dict[str, Any] | None:
    """``report.continuation`` when it is exactly activation k's input and a well-formed
    decision (see the module), else None. ``state``: after the step's result was
    recorded; ``now_ms``: the coordinator's time for the report."""
    c = report.continuation
    if (not isinstance(c, dict) or report.index is None or jr.is_activation(report.index)
            or state.status.terminal or state.nodes[spec.id].status.terminal
            or state.paused):  # a paused run dispatches no activation: it is held
        return None
    j = jr.journal(state, spec.id)
    acts, done = j["acts"], j["done"]
    k: Any = c.get("act")
    through: Any = c.get("through")
    at_ms: Any = c.get("at_ms")
    fits = (bool(acts) and _whole(k) and _whole(through) and _whole(at_ms)
            and k == len(acts) == int(j["decided"]) and through == len(done)
            and jr.undelivered(j) == 1 and done[-1] == report.index // 2
            and c.get("first_ms") == acts[0][0] and c.get("after_ms") == acts[-1][0]
            and len(acts[-1]) > 2 and c.get("digest") == acts[-1][2]
            and int(acts[-1][0]) <= at_ms <= now_ms)
    decision = c.get("decision")
    if not fits or decision_fault(decision) or numbering_fault(decision, len(j["steps"])):
        return None
    return c


def record(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded,
           taken: dict[str, Any]) -> ev.TaskSucceeded:
    """Record activation ``taken["act"]`` as dispatched (at the continuation's time, with
    the step that carried it) and decided; return its ``TaskSucceeded``."""
    state = rec.current
    k = int(taken["act"])
    index = jr.activation(k)
    attempt = state.first_attempt
    dispatch.record_dispatch(rec, spec, index, attempt,
                             {"activation": k, CONTINUED: (report.index or 0) // 2},
                             int(taken["at_ms"]))
    progress = taken.get("progress")
    if (isinstance(progress, list) and len(progress) == 2 and _fraction(progress[0])
            and isinstance(progress[1], str)):  # what wf.progress said in it, last
        rec.record(ev.TaskProgressed(state.workflow_id, spec.id, index, attempt, rec.at_ms,
                                     float(progress[0]), progress[1][:MAX_MESSAGE_CHARS]))
    decided = ev.TaskSucceeded(state.workflow_id, spec.id, index, attempt, rec.at_ms,
                               taken["decision"])
    rec.record(decided)
    return decided


def _fraction(value: Any) -> bool:
    return type(value) in (int, float) and 0 <= value <= 1


def _whole(value: Any) -> bool:
    return type(value) is int and value >= 0
