"""The coordinator's records: an input as consumed, an output encoded for its topic, and a
dead letter; outputs are checked against the record limit before they reach an intent.

Child workflows are routed here too: the dispatch of a ``workflow`` node's attempt is
not a task for a worker but the child's submission (``ChildSubmitted`` on
``submissions``, keyed by the child's id ``ids.child_id``, naming the registered
definition the node's inline spec was resolved from, if any); an attempt that is cancelled
or fails (its deadline passed, say) cancels its child (``CancelRequested`` on
``control``, naming the parent in ``parent_id``); and a child reports to its parent's
attempt like a worker would, on ``reports`` keyed by the parent's id:
``TaskStarted(worker=<child id>)`` once accepted and linked, ``TaskSucceeded`` with its
output or ``TaskFailed`` when it ends. A child whose spec gives no priority is submitted
at its parent's (``core.priority.inherited``). A ``schedule`` node's runs are its children too,
except that the end of the schedule's workflow cancels none of them
(``machine.schedule.cancels_run``). A run a task's ``ctx.call`` submitted reports its
link to its parent (``CallLinked`` on ``reports``), and a parent's end cancels the runs
linked to it (``CancelRequested`` on ``control``). The records between attempts held
for a permit and their limiters are ``permits``'s, those between cached attempts and
their caches ``lookups``'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from headwater import codec
from headwater.core import events as ev
from headwater.core.ids import child_id
from headwater.core.kinds.code.continuation import is_continued, to_instance
from headwater.core.kinds.code.journal import activation_dispatch, child_spec
from headwater.core.kinds.schedule.rules import cancels_run
from headwater.core.kinds.workflow.records import ChildSpec
from headwater.core.kinds.workflow.rules import report_to_parent
from headwater.core.machine.calls import cancels_at_end
from headwater.core.priority import DEFAULT as DEFAULT_PRIORITY
from headwater.core.priority import inherited
from headwater.core.state import WorkflowState
from headwater.topics import Topics
from services.coordinator.lookups import lookup_records
from services.coordinator.permits import permit_records

RECORD_MARGIN_BYTES = 4096
"""Room left in ``max_bytes`` for what a produced record holds besides its key and value:
aiokafka refuses a record whose batch (header, record framing, headers) exceeds
``max_request_size`` (``DefaultRecordBatchBuilder.estimate_size_in_bytes``). A record
accepted here and refused there would be written into an intent it could never leave."""


@dataclass(frozen=True)
class InputRecord:
    """One record from an input topic, as consumed."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]


@dataclass(frozen=True)
class Outgoing:
    """An encoded record to publish on ``topic``.

    Attributes:
        key: the record's key: the workflow id, except for a dispatch, keyed by its
            dispatch id so that one workflow's tasks spread over every partition of
            their queue (and so over every worker of its consumer group); a code
            node's activation and a step its decision issued alone are keyed by the
            workflow id, to reach the worker holding the run's instance
            (``code.continuation.to_instance``).
        workflow_id: whose record it is (which intent it belongs to); empty for a record
            read back from an intent, which is only published again.
        headers: headers to send besides the content type: the W3C trace context of the
            apply that produced it (``traceparent``, ``tracestate``) when tracing is on
            (``services.common.tracing``); not kept in an intent, so a record published
            again after a crash goes without them.
    """

    topic: str
    key: bytes
    value: bytes
    workflow_id: str = ""
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class DeadLetter:
    """A record that could not be applied, and why."""

    record: InputRecord
    reason: str


def encode_outputs(topics: Topics, events: list[ev.HistoryEvent], max_bytes: int,
                   state: WorkflowState | None = None) -> list[Outgoing]:
    """Encode history events for ``events``; each dispatch once more for its queue's
    topic (keyed by its dispatch id), and each cancelled attempt once more for
    ``worker-control`` (workers stop it). With the workflow's ``state``, the records of
    its child workflows and of its parent's (see the module's docstring) too.

    Args:
        topics: the deployment's topic names.
        events: history events of one step, as recorded.
        max_bytes: the record limit (``HEADWATER_MAX_MESSAGE_BYTES``).
        state: the workflow's state after ``events`` (the step's ``result.state``);
            without it a ``workflow`` node's dispatch cannot be told from a task's, and
            a child's end is not reported to its parent.

    Raises:
        ValueError: a record does not fit its schema, or its key and value exceed
            ``max_bytes`` less ``RECORD_MARGIN_BYTES``.
    """
    out: list[Outgoing] = []
    for event in events:
        wid = event.workflow_id
        out.append(Outgoing(topics.events, wid.encode(), codec.encode(event), wid))
        out.extend(_routed(topics, event.body, state))
    for o in out:
        if len(o.key) + len(o.value) > max_bytes - RECORD_MARGIN_BYTES:
            raise ValueError(f"a record of {len(o.key) + len(o.value)} bytes exceeds the "
                             f"limit of {max_bytes} (HEADWATER_MAX_MESSAGE_BYTES) less "
                             f"{RECORD_MARGIN_BYTES} for its framing")
    return out


def _routed(topics: Topics, body: ev.Body, state: WorkflowState | None) -> list[Outgoing]:
    """The records one history event gives rise to besides itself."""
    if isinstance(body, ev.TaskDispatched | ev.TaskCancelled | ev.TaskFailed) and _child_spec(
            state, body.node, body.index) is not None:
        if isinstance(body, ev.TaskCancelled) and not cancels_run(state, body):
            return []  # a schedule's run outlives the schedule
        return [_to_child(topics, body, state)]
    # a held attempt's request, a limiter's grant, an attempt's release; a lookup, a
    # cache's answer, a release of a cache; then the rest
    return [*(Outgoing(*p) for p in permit_records(topics, body)),
            *(Outgoing(*p) for p in lookup_records(topics, body)),
            *_routed_besides(topics, body, state)]


def _routed_besides(topics: Topics, body: ev.Body, state: WorkflowState | None,
                    ) -> list[Outgoing]:
    """What an event of no child attempt routes besides its permit records."""
    wid = body.workflow_id
    if isinstance(body, ev.TaskDispatched):  # an activation a continuation decided:
        return [] if is_continued(body) else [_to_worker(topics, body, state)]  # none
    if isinstance(body, ev.TaskCancelled):
        return [Outgoing(topics.worker_control, wid.encode(), codec.encode(body), wid)]
    calls = _call_records(topics, body, state)
    report = report_to_parent(body, state)
    if report is None:
        return calls
    return [*calls,
            Outgoing(topics.reports, report.workflow_id.encode(), codec.encode(report), wid)]


def _call_records(topics: Topics, body: ev.Body, state: WorkflowState | None,
                  ) -> list[Outgoing]:
    """The records of ``ctx.call`` children (``headwater/core/calls.py``): a called
    run's ``CallerLinked`` reports the link to its parent (``CallLinked`` on
    ``reports``, keyed by the parent's id); the parent's end cancels every child linked
    to it (``CancelRequested`` on ``control``, keyed by the child's id)."""
    wid = body.workflow_id
    if isinstance(body, ev.CallerLinked):
        link = ev.CallLinked(body.parent_id, wid, body.node, body.index, body.attempt,
                             body.at_ms, state.tenant if state is not None else None)
        return [Outgoing(topics.reports, body.parent_id.encode(), codec.encode(link), wid)]
    return [Outgoing(topics.control, c.workflow_id.encode(), codec.encode(c), wid)
            for c in cancels_at_end(state, body)]


def _to_worker(topics: Topics, body: ev.TaskDispatched, state: WorkflowState | None,
               ) -> Outgoing:
    """The dispatch record a worker gets for ``body`` (an activation's with its input)."""
    sent = activation_dispatch(state, body) if state is not None else body
    to_run = state is not None and to_instance(state, body)
    key = body.workflow_id if to_run else body.dispatch_id
    return Outgoing(dispatch_topic(topics, body, state), key.encode(), codec.encode(sent),
                    body.workflow_id)


def dispatch_topic(topics: Topics, body: ev.TaskDispatched, state: WorkflowState | None,
                   ) -> str:
    """Where a dispatch for a worker goes: ``tasks.<queue>``, or the queue's topic of
    the run's priority (``Topics.priority``) when it is not the default; the queue's selector
    topic for the node's tags (``Topics.needs``) for an attempt of a node that requires
    tags (``NodeSpec.requires``), read by the workers announcing them alone; or the lane
    of the code it started on (``Topics.lane``) for an attempt of a code node whose
    spec records a ``code_version``, when it is an activation or a task step on the
    workflow's own queue. A step on another queue goes to that queue: its workers are
    not the workflow's. (A child step is no dispatch to a worker: ``_to_child``.)

    A function of the run's recorded state alone (its spec's code version, the node's
    kind, queue and requirements, the dispatch's queue, the spec's priority): the same
    history sends the same dispatch
    to the same topic, whichever coordinator sends it, and whichever workers are live.
    Which workers read a lane is theirs to settle (``services.worker.lanes``)."""
    if state is None or state.spec_error:
        return topics.tasks(body.queue)
    banded = (topics.tasks(body.queue) if state.spec.priority == DEFAULT_PRIORITY
              else topics.priority(body.queue, state.spec.priority))
    try:
        spec = state.spec.node(body.node)
    except KeyError:
        return banded
    if spec.requires:
        return topics.needs(body.queue, spec.requires)
    if spec.code is None or spec.code.code_version is None or body.queue != spec.queue:
        return banded
    return topics.lane(spec.queue, spec.task, spec.code.code_version)


def _child_spec(state: WorkflowState | None, node_id: str, index: int | None,
                ) -> ChildSpec | None:
    """The child an attempt of ``node_id`` (item ``index``) starts: a ``workflow``
    node's, or a code workflow's child step (``code.journal.child_spec``); None for an
    attempt that is a task."""
    if state is None or state.spec_error:
        return None
    try:
        spec = state.spec.node(node_id)
    except KeyError:
        return None
    if spec.code is not None:
        return child_spec(state, node_id, index)
    return spec.child


def _to_child(topics: Topics, body: ev.TaskDispatched | ev.TaskCancelled | ev.TaskFailed,
              state: WorkflowState | None) -> Outgoing:
    """A child attempt's dispatch submits its child; its cancellation or failure (the
    child's own end, or a deadline that passed) cancels it: a no-op for a child that
    has ended, and one that has not started yet is cancelled as soon as it is. The
    cancel names the parent (``parent_id``): a workflow of that id that is not this
    parent's child (another run holds the id) is left alone."""
    assert state is not None
    cid = child_id(body.workflow_id, body.node, body.index, body.attempt)
    record: ev.ChildSubmitted | ev.CancelRequested
    if isinstance(body, ev.TaskDispatched):
        child = _child_spec(state, body.node, body.index)
        assert child is not None
        record = ev.ChildSubmitted(cid, body.workflow_id, body.node, body.index, body.attempt,
                                   inherited(child.workflow, state.spec.priority),
                                   body.input, body.at_ms, state.tenant,
                                   definition=child.definition,
                                   definition_version=child.definition_version)
        topic = topics.submissions
    else:
        why = body.reason if isinstance(body, ev.TaskCancelled) else body.error
        record = ev.CancelRequested(cid, body.at_ms, f"parent {body.workflow_id}: {why}"[:2000],
                                    parent_id=body.workflow_id)
        topic = topics.control
    return Outgoing(topic, cid.encode(), codec.encode(record), body.workflow_id)


def misplaced(topic: str, partition: int, workflow_id: str, home: int) -> str:
    """The dead-letter reason of an input on another partition than its workflow's."""
    return (f"{topic}[{partition}] holds a record of workflow {workflow_id!r}, "
            f"whose records belong on partition {home}: produce them keyed by the workflow "
            "id with Kafka's murmur2 partitioner (the Java client's default; librdkafka: "
            "partitioner=murmur2_random)")
