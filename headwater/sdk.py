"""The task SDK: ``@task`` registers a function that workers run (``REGISTRY``).

    @task(name="docs.extract", queue="cpu")
    def extract(ctx: TaskContext, module: str) -> dict: ...

``queue`` names the worker pool; the deploy hints (``replicas``, ``min_replicas``,
``max_replicas``, ``cpu``, ``memory``, ``gpu``: ``headwater.scaling``) say how
``headwater deploy`` sizes and scales that pool's workers:

    @task(name="embed", queue="gpu", gpu=1, memory="8Gi", min_replicas=1, max_replicas=4)

The worker calls the function with the node's resolved input as keyword arguments, and
passes the context (``headwater.context.TaskContext``) as ``ctx`` when the function
declares that parameter. Sync functions run in a thread pool, async ones on the event
loop. The return value must be JSON.

A generator function (sync or ``async``) streams: each value it yields is sent at once as
a ``TaskOutputStreamed`` chunk (JSON, numbered 0, 1, 2 ... per attempt), and the attempt's
output is the list of every chunk, unless a sync generator ``return``s a value other than
None, which is then the output.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, overload

from headwater.core.ids import QUEUE_PATTERN
from headwater.core.suggest import did_you_mean
from headwater.errors import TaskRegistrationError
from headwater.scaling import DEPLOY_KEYS, hint_fault, hints_of

if TYPE_CHECKING:
    pass


F = TypeVar("F", bound=Callable[..., Any])
_NAME = re.compile(r"^[A-Za-z_][\w.\-]{0,199}$")
_OPTIONS = ("name", "queue", *DEPLOY_KEYS)


@dataclass(frozen=True)
class TaskInfo:
    """What ``@task`` recorded about a function.

    Attributes:
        name: the registered name.
        queue: the worker pool that runs it.
        fn: the function.
        wants_ctx: it declares a ``ctx`` parameter.
        is_async: an ``async def`` coroutine function (runs on the worker's loop).
        is_generator: a sync generator function (streams; pulled in the thread pool).
        is_async_generator: an ``async def`` generator function (streams, on the loop).
        deploy: the deploy hints given (``headwater.scaling.DEPLOY_KEYS``).
    """

    name: str
    queue: str
    fn: Callable[..., Any]
    wants_ctx: bool
    is_async: bool
    is_generator: bool = False
    is_async_generator: bool = False
    deploy: dict[str, Any] = field(default_factory=dict)


REGISTRY: dict[str, TaskInfo] = {}


def _origin(fn: Callable[..., Any]) -> str:
    """``module.qualname``: the same function imported twice has the same origin."""
    return f"{fn.__module__}.{fn.__qualname__}"


def _hints(name: str | None, hints: dict[str, Any]) -> dict[str, Any]:
    """The deploy hints given to ``@task``.

    Raises:
        TaskRegistrationError: an unknown option (the nearest known one named) or a bad
            hint (``headwater.scaling.hint_fault``).
    """
    for key in hints:
        if key not in DEPLOY_KEYS:
            raise TaskRegistrationError(
                f"@task has no option {key!r}{did_you_mean(key, _OPTIONS)}; its options "
                f"are {', '.join(_OPTIONS)}")
    fault = hint_fault(hints)
    if fault is not None:
        raise TaskRegistrationError(f"@task {name or ''}: {fault}".replace(" :", ":"))
    return hints_of(hints)


@overload
def task(fn: F, /) -> F: ...
@overload
def task(*, name: str | None = None, queue: str = "cpu", replicas: int | None = None,
         min_replicas: int | None = None, max_replicas: int | None = None,
         cpu: str | float | None = None, memory: str | int | None = None,
         gpu: int | None = None) -> Callable[[F], F]: ...


def task(
    fn: F | None = None, /, *, name: str | None = None, queue: str = "cpu", **hints: Any,
) -> F | Callable[[F], F]:
    """Register a task function; usable bare (``@task``) or with options.

    The function may be sync or ``async``, and either may be a generator (streaming its
    yielded values as output chunks).

    Args:
        fn: the function, when used bare.
        name: registered name (default ``module.function``); letters, digits, ``_.-``.
        queue: the worker pool that runs it.
        **hints: the deploy hints (``headwater.scaling``): ``replicas`` (the pool's
            fixed number of workers, no autoscaler), ``min_replicas`` and
            ``max_replicas`` (an autoscaler's bounds), ``cpu`` and ``memory`` (what
            each worker requests, Kubernetes quantities: ``"500m"``, ``"2Gi"``),
            ``gpu`` (GPUs per worker).

    Returns:
        The function itself, unchanged but for a ``__headwater_task__`` attribute.

    Raises:
        TaskRegistrationError: a bad name, queue or deploy hint (an unknown one named
            with the nearest known), or the name is already taken by another function.
    """
    given = _hints(name, hints)

    def register(func: F) -> F:
        task_name = name or f"{func.__module__}.{func.__qualname__}"
        if not _NAME.fullmatch(task_name):
            raise TaskRegistrationError(
                f"@task name {task_name!r} must match {_NAME.pattern}; pass name='pkg.task'"
            )
        if not QUEUE_PATTERN.fullmatch(queue):
            raise TaskRegistrationError(
                f"@task queue {queue!r} must match {QUEUE_PATTERN.pattern}")
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
            is_generator=inspect.isgeneratorfunction(func),
            is_async_generator=inspect.isasyncgenfunction(func),
            deploy=given,
        )
        REGISTRY[task_name] = info
        func.__headwater_task__ = info  # type: ignore[attr-defined]
        return func

    if fn is not None:
        return register(fn)
    return register
