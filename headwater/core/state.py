"""Workflow state: what the coordinator knows about one workflow, and the rules read
off it (the timers a task implies, a failure's error object, a finished node's output).

The state changes only through ``evolve`` (``headwater/core/evolve.py``), one history
event at a time, so folding a workflow's history rebuilds it (docs/architecture.md,
invariant 1). The table stores it split (``services/coordinator/layout.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from headwater.core import events as ev
from headwater.core.ids import DEADLINE_TIMER, LEASE_TIMER, task_key, task_timer_id
from headwater.core.refs import resolve
from headwater.core.spec import WorkflowSpec, read_spec
from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus
from headwater.errors import HeadwaterError, SpecError


class IllegalTransition(HeadwaterError):
    """Raised when a history event does not fit the state (a corrupt or foreign history)."""



@dataclass(slots=True)
class TaskState:
    """One task and its current attempt. Times in ms since the epoch.

    Attributes:
        deadline_ms: when the attempt times out (dispatch + timeout), or None.
        heartbeat_ms: the heartbeat timeout in ms, or None.
        last_seen_ms: the last report of the running attempt (start, heartbeat, ...).
        checkpoint: the last checkpoint saved by any attempt (handed to the next one).
        chunks: streamed output chunks recorded for the current attempt.
        outcome: how the current attempt ended (an ``AttemptEnd`` value, ``""`` until then).
        waiting_for: the limiter whose permit a held attempt waits for (``TaskHeld``),
            ``""`` when it waits for none.
        limiters: the limiters the current attempt asked for a permit (held for, or
            holding), until its end gives them back (``PermitsReturned``); None: none.
        cache: the cache the current attempt looked its key up in and was not answered
            a hit by (it waits, or computes), until its end releases it
            (``CacheReturned``); ``""``: none.
        recalled: the task's attempts a pause recalled before they started
            (``DispatchRecalled``): its retry policy does not count them.
    """

    node: str
    index: int | None
    attempt: int
    status: TaskStatus
    dispatched_at_ms: int
    started_at_ms: int | None = None
    finished_at_ms: int | None = None
    worker: str = ""
    progress: float | None = None
    message: str = ""
    error: str = ""
    error_type: str = ""
    deadline_ms: int | None = None
    heartbeat_ms: int | None = None
    last_seen_ms: int | None = None
    checkpoint: Any = None
    chunks: int = 0
    outcome: str = ""
    waiting_for: str = ""
    limiters: list[str] | None = None
    cache: str = ""
    recalled: int = 0


@dataclass
class NodeState:
    """One node. Map nodes count their children; results keep input order.

    Attributes:
        failed: map children that failed for good (a ``continue_on_error`` map goes on).
        failure: the error object of the node's final failure (see ``error_object``),
            handed to its error handler as ``${error}``.
        transcript: a loop's finished tool calls, ``{"step", "tool", "input",
            "output"}`` each, in step order (None until the first).
        spent: a loop's spending so far: the sum of what its decisions reported.
        steps: how many steps of a loop were decided (its ``LoopStepDecided`` events).
        decision: a loop's latest decision, ``{"step", "tool", "input"}`` (the tool
            running or to retry) or ``{"step", "finish": output}``.
        branch_skipped: skipped by its false ``when``, or because every node it needs
            was branch-skipped: such a need does not keep a join from running.
        next_fire_ms, last_fire_ms, paused: a schedule's armed fire time, the last one
            that came due (ms since the epoch, None before) and whether it is paused.
        code: a code node's journal (``headwater/core/kinds/code/journal.py``), None
            until its first activation.
        limiter: a limiter's live state (``headwater/core/kinds/limiter/``), None for
            any other node.
        cache: a cache's state (``headwater/core/kinds/cache/``), None for any other
            node.
    """

    status: NodeStatus = NodeStatus.PENDING
    total: int | None = None
    next_index: int = 0
    running: int = 0
    done: int = 0
    results: list[Any] | None = None
    error: str = ""
    failed: int = 0
    failure: dict[str, Any] | None = None
    transcript: list[Any] | None = None
    spent: float = 0.0
    steps: int = 0
    decision: dict[str, Any] | None = None
    branch_skipped: bool = False
    next_fire_ms: int | None = None
    last_fire_ms: int | None = None
    paused: bool = False
    code: dict[str, Any] | None = None
    limiter: dict[str, Any] | None = None
    cache: dict[str, Any] | None = None


def error_object(node: str, index: int | None, attempts: int, error_type: str,
                 message: str) -> dict[str, Any]:
    """What a failure looks like to an error handler (``${error}``) and, wrapped as
    ``{"error": ...}``, to the dependents of a ``continue_on_error`` node."""
    return {"node": node, "index": index, "attempts": attempts, "type": error_type,
            "message": message}


@dataclass
class TimerState:
    """A pending durable timer that will dispatch ``attempt`` of the task."""

    fire_at_ms: int
    node: str
    index: int | None
    attempt: int


@dataclass
class WorkflowState:
    """Everything the coordinator knows about one workflow (the table's value)."""

    workflow_id: str
    spec_doc: Any
    input: Any
    tenant: str | None
    name: str
    created_at_ms: int
    updated_at_ms: int
    seq: int = 0
    status: WorkflowStatus = WorkflowStatus.RUNNING
    nodes: dict[str, NodeState] = field(default_factory=dict)
    tasks: dict[str, TaskState] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    timers: dict[str, TimerState] = field(default_factory=dict)
    open_nodes: int = 0
    output: Any = None
    error: str = ""
    spec_error: str = ""
    signals: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Signals taken before their wait started, by ``signals.signal_key`` (``name`` or
    ``name[index]``), oldest first: ``{"signal_id", "fields", "at_ms"}`` each."""
    signal_ids: list[str] = field(default_factory=list)
    """The ``signal_id`` of every signal recorded (taken or discarded): a second one
    with the same id changes nothing."""
    parent: dict[str, Any] | None = None
    """A child workflow's link to the attempt that started it (``ParentLinked``):
    ``{"workflow_id", "node", "index", "attempt"}``; None for a workflow of its own."""
    definition: str | None = None
    definition_version: int | None = None
    """The registered definition (name, version) the spec was resolved from
    (``WorkflowAccepted``); None for an inline spec."""
    generation: int = 1
    """The run's generation: 1, then one more for each ``WorkflowRestarted``."""
    attempt_floor: int = 0
    """The highest attempt number any task reached before the latest restart (0 before
    any): this generation's attempts are numbered from ``attempt_floor + 1``."""
    continued: int = 0
    """How many of the generations after the first a code workflow's
    ``continue_as_new`` started (the others: restarts after a lost attempt, which
    ``max_restarts`` bounds)."""
    generation_seq: int = 0
    """The seq of the event that started the current generation (0: the first): a code
    workflow's ``max_events`` counts the events after it."""
    rerun: Any = None
    """A rerun's source and the outputs it reuses (``WorkflowAccepted.rerun``,
    ``headwater/core/reuse.py``); None for a run of its own."""
    pause: dict[str, Any] | None = None
    """The run's pause (``headwater/core/pausing.py``): ``{"paused", "since_ms", "by",
    "reason", "deferred": [held tasks and due timers], "ids": [pauses' request ids],
    "resume_ids": [resumes' request ids]}``; None for a run never paused."""
    cache_refresh: bool = False
    """The run bypasses cache hits (``?cache=refresh``, ``WorkflowAccepted``): its
    cached nodes' attempts compute and store fresh outputs (``machine/lookups.py``)."""
    deadline_at_ms: int | None = None
    """The instant the run must have ended by, ms since the epoch (``DeadlineSet``,
    ``headwater/core/deadline.py``); None: no deadline. A restart keeps it."""
    caller: dict[str, Any] | None = None
    """A ``ctx.call`` child's link to the attempt that called it (``CallerLinked``):
    ``{"workflow_id", "node", "index", "attempt"}``; None otherwise."""
    calls: list[str] = field(default_factory=list)
    """The ids of the ``ctx.call`` children linked to the run (``CallLinked``), in the
    order they were linked: its end cancels them (``headwater/core/calls.py``)."""
    _spec: WorkflowSpec | None = field(default=None, repr=False, compare=False)

    @property
    def spec(self) -> WorkflowSpec:
        """The parsed spec (cached). Raises ``SpecError`` if the document was invalid."""
        if self._spec is None:
            self._spec = read_spec(self.spec_doc)
        return self._spec

    @property
    def paused(self) -> bool:
        """Whether the run is paused (``WorkflowPaused`` and no ``WorkflowResumed``
        since): it dispatches nothing new."""
        return self.pause is not None and bool(self.pause.get("paused"))

    @property
    def first_attempt(self) -> int:
        """The number of a task's first attempt in this generation (1 before any
        restart)."""
        return self.attempt_floor + 1

    def resolve_input(self, template: Any, item: Any = None, index: int | None = None,
                      error: Any = None) -> Any:
        """Resolve a template against this workflow's input and node outputs."""
        return resolve(template, self.input, self.outputs, item, index, error)

def task_timers(task: TaskState, key: str) -> list[tuple[str, int]]:
    """The timers implied by a task's state, as ``(timer id, fire at ms)``: the deadline
    of a queued or running attempt, and the lease of a running one (last report +
    heartbeat timeout). They are not stored: the coordinator arms them from the state,
    and the state machine checks them again when they fire."""
    out: list[tuple[str, int]] = []
    if task.status.live and task.deadline_ms is not None:
        out.append((task_timer_id(DEADLINE_TIMER, key, task.attempt), task.deadline_ms))
    if (task.status is TaskStatus.RUNNING and task.heartbeat_ms is not None
            and task.last_seen_ms is not None):
        out.append((task_timer_id(LEASE_TIMER, key, task.attempt),
                    task.last_seen_ms + task.heartbeat_ms))
    return out


def new_state(event: ev.WorkflowAccepted) -> WorkflowState:
    """The state right after ``WorkflowAccepted`` (seq 1)."""
    name = event.spec.get("name") if isinstance(event.spec, dict) else None
    state = WorkflowState(
        workflow_id=event.workflow_id,
        spec_doc=event.spec,
        input=event.input,
        tenant=event.tenant,
        name=name if isinstance(name, str) else "",
        created_at_ms=event.at_ms,
        updated_at_ms=event.at_ms,
        definition=event.definition,
        definition_version=event.definition_version,
        rerun=event.rerun,
        cache_refresh=event.cache_refresh,
    )
    try:
        spec = state.spec
    except SpecError as e:
        state.spec_error = str(e)
        return state
    state.nodes = {n.id: NodeState() for n in spec.nodes}
    state.open_nodes = len(spec.nodes)
    return state


def set_finished_output(state: WorkflowState, node_id: str) -> None:
    """Give a finished node the output its dependents see, as its status says.

    A map that succeeded: its results, in input order. A loop that succeeded: its
    ``loop_output``. Skipped, or a sleep that succeeded: ``None``. Failed with
    ``continue_on_error``: a map's results (the error objects among them), any other
    node ``{"error": <its failure>}``. Otherwise nothing: a task node's output came with
    its attempt's ``TaskSucceeded``. ``evolve`` applies it on ``NodeFinished``; a
    snapshot applies it again when it rebuilds a state.

    Args:
        state: the workflow; ``state.outputs`` is updated in place.
        node_id: a node of the workflow (``KeyError`` if it has none by that id).
    """
    node = state.nodes[node_id]
    if node.status is NodeStatus.SUCCEEDED and node.results is not None:
        state.outputs[node_id] = node.results
    elif node.status is NodeStatus.SUCCEEDED and node.decision is not None:
        state.outputs[node_id] = loop_output(node)
    elif node.status is NodeStatus.SUCCEEDED and node.code is not None:
        state.outputs[node_id] = node.code.get("finish")
    elif node.status is NodeStatus.SKIPPED:
        state.outputs[node_id] = None
    elif node.status is NodeStatus.SUCCEEDED and state.spec.node(node_id).sleep is not None:
        state.outputs[node_id] = None  # a sleep's output is null
    elif node.status is NodeStatus.FAILED and state.spec.node(node_id).continue_on_error:
        state.outputs[node_id] = (node.results if node.results is not None
                                  else {"error": node.failure})


def loop_output(node: NodeState) -> Any:
    """A loop's output: what its last decision finished with, or, when it ended by
    reaching its bounds (``on_exhausted: finish``), ``{"finished": false, "transcript":
    [...]}``."""
    if node.decision is not None and "finish" in node.decision:
        return node.decision["finish"]
    return {"finished": False, "transcript": list(node.transcript or [])}


def task_state(state: WorkflowState, node: str, index: int | None) -> TaskState:
    """The state of task ``node[index]``.

    Raises:
        IllegalTransition: the workflow has no such task.
    """
    key = task_key(node, index)
    try:
        return state.tasks[key]
    except KeyError:
        raise IllegalTransition(f"no task {key} in workflow {state.workflow_id}") from None


def node_state(state: WorkflowState, node_id: str) -> NodeState:
    """The state of node ``node_id``.

    Raises:
        IllegalTransition: the workflow has no such node.
    """
    try:
        return state.nodes[node_id]
    except KeyError:
        raise IllegalTransition(f"no node {node_id} in workflow {state.workflow_id}") from None
