"""The task SDK: ``@task`` registers a function that workers run; ``TaskContext`` is what
task code sees of its attempt.

    @task(name="docs.extract", queue="cpu")
    def extract(ctx: TaskContext, module: str) -> dict: ...

The worker calls the function with the node's resolved input as keyword arguments, and
passes the context as ``ctx`` when the function declares that parameter. Sync functions
run in a thread pool, async ones on the event loop. The return value must be JSON.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from headwater.errors import TaskRegistrationError

F = TypeVar("F", bound=Callable[..., Any])
_NAME = re.compile(r"^[A-Za-z_][\w.\-]{0,199}$")
_QUEUE = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


ProgressSink = Callable[[float, str], None]
"""Where ``TaskContext.progress`` goes: ``(fraction, message)`` (the worker's reporter)."""


@dataclass(frozen=True)
class TaskInfo:
    """What ``@task`` recorded about a function."""

    name: str
    queue: str
    fn: Callable[..., Any]
    wants_ctx: bool
    is_async: bool


class TaskContext:
    """The running attempt, as task code sees it.

    Attributes:
        workflow_id: the workflow's id.
        node: the node id.
        index: the map index, or None.
        attempt: 1-based attempt number.
        dispatch_id: ``workflow_id/node[index]/attempt``.
    """

    def __init__(
        self, workflow_id: str, node: str, index: int | None, attempt: int, dispatch_id: str,
        sink: ProgressSink | None = None,
    ) -> None:
        self.workflow_id = workflow_id
        self.node = node
        self.index = index
        self.attempt = attempt
        self.dispatch_id = dispatch_id
        self._sink = sink

    def progress(self, fraction: float, message: str = "") -> None:
        """Report progress; it shows in the workflow's status and on its SSE stream.

        Args:
            fraction: done so far, clamped to [0, 1].
            message: a short human-readable note.
        """
        if self._sink is not None:
            self._sink(min(1.0, max(0.0, float(fraction))), str(message))


REGISTRY: dict[str, TaskInfo] = {}


def _origin(fn: Callable[..., Any]) -> str:
    """``module.qualname``: the same function imported twice has the same origin."""
    return f"{fn.__module__}.{fn.__qualname__}"


@overload
def task(fn: F, /) -> F: ...
@overload
def task(*, name: str | None = None, queue: str = "cpu") -> Callable[[F], F]: ...


def task(
    fn: F | None = None, /, *, name: str | None = None, queue: str = "cpu"
) -> F | Callable[[F], F]:
    """Register a task function; usable bare (``@task``) or with options.

    Args:
        fn: the function, when used bare.
        name: registered name (default ``module.function``); letters, digits, ``_.-``.
        queue: the worker pool that runs it.

    Returns:
        The function itself, unchanged but for a ``__headwater_task__`` attribute.

    Raises:
        TaskRegistrationError: a bad name or queue, or the name is already taken by
            another function.
    """

    def register(func: F) -> F:
        task_name = name or f"{func.__module__}.{func.__qualname__}"
        if not _NAME.match(task_name):
            raise TaskRegistrationError(
                f"@task name {task_name!r} must match {_NAME.pattern}; pass name='pkg.task'"
            )
        if not _QUEUE.match(queue):
            raise TaskRegistrationError(f"@task queue {queue!r} must match {_QUEUE.pattern}")
        existing = REGISTRY.get(task_name)
        if existing is not None and _origin(existing.fn) != _origin(func):
            raise TaskRegistrationError(
                f"task name {task_name!r} is already registered by {_origin(existing.fn)}; "
                "pass another name="
            )
        info = TaskInfo(
            name=task_name,
            queue=queue,
            fn=func,
            wants_ctx="ctx" in inspect.signature(func).parameters,
            is_async=inspect.iscoroutinefunction(func),
        )
        REGISTRY[task_name] = info
        func.__headwater_task__ = info  # type: ignore[attr-defined]
        return func

    if fn is not None:
        return register(fn)
    return register
