"""Headwater: event-sourced orchestration for AI and data workflows on Apache Kafka.

What task code imports: ``@task``, the ``TaskContext`` it receives and the errors it
may raise; and workflow code: ``@workflow`` and the ``WorkflowContext`` its function
gets. ``headwater.core`` is the pure decision core (specs, events, the state machine);
``headwater.codec`` and ``headwater.topics`` are the Kafka wire format. This package
never imports ``services`` or ``ops`` (docs/architecture.md §2).
"""

from headwater.context import AttemptInfo, TaskContext
from headwater.errors import NondeterminismError, NonRetryableError, StepFailed
from headwater.sdk import task
from headwater.workflows import WorkflowContext, workflow

__all__ = ["AttemptInfo", "NonRetryableError", "NondeterminismError", "StepFailed",
           "TaskContext", "WorkflowContext", "task", "workflow"]
__version__ = "0.1.0"
