"""Headwater: event-sourced orchestration for AI and data workflows on Apache Kafka.

The kernel: specs and validation, events, the pure state machine, the codec, topic
names, errors and the task SDK. It never imports ``services``.
"""

from headwater.errors import NonRetryableError
from headwater.sdk import TaskContext, task

__all__ = ["NonRetryableError", "TaskContext", "task"]
__version__ = "0.1.0"
