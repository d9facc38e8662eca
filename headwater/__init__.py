"""Headwater: event-sourced orchestration for AI and data workflows on Apache Kafka.

What task code imports: ``@task``, the ``TaskContext`` it receives and the errors it may
raise. ``headwater.core`` is the pure decision core (specs, events, the state machine);
``headwater.codec`` and ``headwater.topics`` are the Kafka wire format. This package
never imports ``services`` or ``ops`` (docs/architecture.md §2).
"""

from headwater.context import AttemptInfo, TaskContext
from headwater.errors import NonRetryableError
from headwater.sdk import task

__all__ = ["AttemptInfo", "NonRetryableError", "TaskContext", "task"]
__version__ = "0.1.0"
