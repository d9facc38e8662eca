"""Status enums: the lifecycle of a workflow, of a node and of a task, and how a task's
current attempt ended.

Their values are stored (snapshots, history, projection rows), so a value never changes;
a new member is a new value. docs/specs.md ("When things fail") describes what each means
to a user.
"""

from __future__ import annotations

from enum import StrEnum


class WorkflowStatus(StrEnum):
    """Lifecycle of a workflow."""

    RUNNING = "running"  # accepted; some node still has work to do
    SUCCEEDED = "succeeded"  # terminal: every node succeeded
    FAILED = "failed"  # terminal: a node failed for good, or the spec was invalid
    CANCELLED = "cancelled"  # terminal: cancelled on request

    @property
    def terminal(self) -> bool:
        """Whether no further event can change the workflow."""
        return self is not WorkflowStatus.RUNNING


class NodeStatus(StrEnum):
    """Lifecycle of a node."""

    PENDING = "pending"  # waiting for its needs
    RUNNING = "running"  # dispatched (a map: some children not finished; a wait:
    #                     waiting for its signal; a sleep: sleeping)
    SUCCEEDED = "succeeded"  # terminal: output available
    FAILED = "failed"  # terminal: retries exhausted or a non-retryable error
    UPSTREAM_FAILED = "upstream_failed"  # terminal: a node it needs failed (fail fast)
    SKIPPED = "skipped"  # terminal: a node it needs failed into an error route or was
    #                     skipped, or it is an error handler whose node did not fail, or
    #                     its ``when`` was false (a branch not taken)
    CANCELLED = "cancelled"  # terminal: the workflow ended while it was running or waiting

    @property
    def terminal(self) -> bool:
        """Whether the node is finished."""
        return self not in (NodeStatus.PENDING, NodeStatus.RUNNING)


class TaskStatus(StrEnum):
    """Lifecycle of one task (a task node, or one map item) across its attempts."""

    DISPATCHED = "dispatched"  # the current attempt is on its queue
    RUNNING = "running"  # a worker reported it started
    RETRY_WAIT = "retry_wait"  # an attempt failed; a timer will dispatch the next one
    SUCCEEDED = "succeeded"  # terminal
    FAILED = "failed"  # terminal: no attempts left
    CANCELLED = "cancelled"  # terminal: the workflow ended first
    HELD = "held"  # the attempt waits for a permit of its node's limits, not dispatched yet

    @property
    def terminal(self) -> bool:
        """Whether no report can change the task any more."""
        return self in (TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELLED)

    @property
    def live(self) -> bool:
        """Whether an attempt is on its queue or running (a report may still come)."""
        return self in (TaskStatus.DISPATCHED, TaskStatus.RUNNING)


class AttemptEnd(StrEnum):
    """How the current attempt of a task ended (``TaskState.outcome``; ``""`` while it
    has not)."""

    REPORTED = "reported"  # a worker reported success or failure
    TIMED_OUT = "timed_out"  # its deadline passed first (the coordinator's timer)
    LOST = "lost"  # no heartbeat within the heartbeat timeout
    CANCELLED = "cancelled"  # the workflow or its node ended first
    REUSED = "reused"  # a rerun took its output from the run it reruns (``TaskReused``)
