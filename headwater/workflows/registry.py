"""The registry of ``@workflow``s: what the decorator recorded about each function
(``WorkflowInfo``, with the spec document of its runs), by name (``WORKFLOWS``).

The decorator (``decorator.py``) fills it; the context (``wf.call`` of a workflow), the
activations, the harness, the worker and the client read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from headwater.core.kinds.code.records import DEFAULT_MAX_EVENTS

CODE_NODE = "main"
"""The id of a code workflow's one node."""
ACTIVATION_RETRY: dict[str, Any] = {"max_attempts": 1_000_000, "backoff_base": 1.0,
                                    "backoff_max": 60.0, "multiplier": 2.0, "jitter": 0.1}
"""An activation is retried for as long as the run may take: a worker lost mid-way, or
code that no longer decides as the history did (``NondeterminismError``) until the code
that does is deployed."""
DEFAULT_ACTIVATION_TIMEOUT = 60.0
"""Seconds an activation may run: a function does its I/O in tasks, so it is quick."""


@dataclass(frozen=True)
class WorkflowInfo:
    """What ``@workflow`` recorded about a function.

    Attributes:
        name: the registered name (the definition's and the activation task's).
        fn: the ``async def`` function.
        queue: the queue of its activations (and of its tasks that name none).
        path: the HTTP path the gateway also serves it at (``POST <path>``), or None.
        timeout: seconds an activation may run.
        retry: the retry policy of its steps unless ``wf.run`` gives one.
        restart_on_failure, max_restarts: as a spec's.
        input_schema: a JSON Schema of its input (from the type hints unless given).
        max_events: the most history events one run may record.
        deploy: the scaling and resource hints given (``DEPLOY_KEYS``).
        deadline: the whole run's deadline as the spec's ``deadline`` takes it
            (seconds, a duration text such as ``"15m"``, or an RFC 3339 instant;
            ``headwater/core/deadline.py``), or None.
    """

    name: str
    fn: Callable[..., Any]
    queue: str = "cpu"
    path: str | None = None
    timeout: float = DEFAULT_ACTIVATION_TIMEOUT
    retry: dict[str, Any] | None = None
    restart_on_failure: bool = False
    max_restarts: int | None = None
    input_schema: dict[str, Any] | None = None
    max_events: int = DEFAULT_MAX_EVENTS
    deploy: dict[str, Any] = field(default_factory=dict)
    deadline: float | str | None = None

    def spec(self, code_version: str | None = None) -> dict[str, Any]:
        """The spec document of a run of this workflow; with ``code_version``, its code
        node records it, and the run's activations travel in that version's lane
        (``headwater.topics.Topics.lane``)."""
        node: dict[str, Any] = {
            "id": CODE_NODE, "kind": "code", "task": self.name, "queue": self.queue,
            "input": "${input}", "timeout": self.timeout, "retry": dict(ACTIVATION_RETRY),
            "max_events": self.max_events}
        if code_version is not None:
            node["code_version"] = code_version
        doc: dict[str, Any] = {"name": self.name, "nodes": [node], "output": "${nodes.main.output}"}
        if self.restart_on_failure:
            doc["restart_on_failure"] = True
            if self.max_restarts is not None:
                doc["max_restarts"] = self.max_restarts
        if self.deadline is not None:
            doc["deadline"] = self.deadline
        return doc


WORKFLOWS: dict[str, WorkflowInfo] = {}
"""Every ``@workflow`` imported, by name."""


def forget(name: str) -> None:
    """Unregister the workflow ``name`` (and its activation task), so that a test can
    register new code under the same name, as a deploy does in a new process."""
    from headwater.sdk import REGISTRY

    WORKFLOWS.pop(name, None)
    REGISTRY.pop(name, None)


def info_of(target: Any) -> WorkflowInfo | None:
    """The ``WorkflowInfo`` of a ``@workflow`` function or of a registered name."""
    if isinstance(target, str):
        return WORKFLOWS.get(target)
    info = getattr(target, "__headwater_workflow__", None)
    return info if isinstance(info, WorkflowInfo) else None
