"""``@workflow``: an ``async def f(wf, **input)`` becomes a durable workflow.

    @workflow(name="research", path="/research", queue="cpu")
    async def research(wf: WorkflowContext, question: str) -> dict: ...

The decorator registers the function (``WORKFLOWS``) and, under the same name, the task
a worker runs for each of its activations (``headwater.sdk.REGISTRY``), so any worker
that imports the module serves it. ``WorkflowInfo.spec`` is the spec document of a run:
one ``code`` node whose task is the workflow (``headwater/core/kinds/code``). Options
that are not known are refused here, naming the nearest known one.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any, TypeVar, overload

from headwater.core.deadline import parse_deadline
from headwater.core.ids import QUEUE_PATTERN
from headwater.core.kinds.code.records import DEFAULT_MAX_EVENTS, MAX_EVENTS_LIMIT, path_fault
from headwater.core.suggest import did_you_mean
from headwater.errors import WorkflowRegistrationError
from headwater.scaling import DEPLOY_KEYS, hint_fault, hints_of
from headwater.workflows.registry import (
    ACTIVATION_RETRY,
    CODE_NODE,
    DEFAULT_ACTIVATION_TIMEOUT,
    WORKFLOWS,
    WorkflowInfo,
    forget,
    info_of,
)

__all__ = ["ACTIVATION_RETRY", "CODE_NODE", "DEFAULT_ACTIVATION_TIMEOUT", "DEPLOY_KEYS",
           "WORKFLOWS",
           "WorkflowInfo", "forget", "info_of", "input_schema_of", "workflow"]

F = TypeVar("F", bound=Callable[..., Any])
_NAME = re.compile(r"^[A-Za-z_][\w.\-]{0,199}$")
_OPTIONS = ("name", "path", "queue", "timeout", "retry", "restart_on_failure",
            "max_restarts", "input_schema", "max_events", *DEPLOY_KEYS, "deadline")


@overload
def workflow(fn: F, /) -> F: ...
@overload
def workflow(*, name: str | None = None, path: str | None = None, queue: str = "cpu",
             timeout: float = DEFAULT_ACTIVATION_TIMEOUT, retry: dict[str, Any] | None = None,
             restart_on_failure: bool = False, max_restarts: int | None = None,
             input_schema: dict[str, Any] | None = None, max_events: int = DEFAULT_MAX_EVENTS,
             deadline: float | str | None = None, **hints: Any) -> Callable[[F], F]: ...


def workflow(fn: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
    """Register an ``async def f(wf: WorkflowContext, **input)`` as a durable workflow;
    usable bare or with options (``name``, ``path``, ``queue``, ``timeout``, ``retry``,
    ``restart_on_failure``, ``max_restarts``, ``input_schema``, ``max_events``,
    ``deadline``: the whole run's, as a spec's, e.g. ``3600``, ``"15m"`` or an RFC 3339
    instant; and the deploy hints ``replicas``, ``min_replicas``, ``max_replicas``,
    ``cpu``, ``memory``, ``gpu``).

    Raises:
        WorkflowRegistrationError: an unknown option (the nearest known one named), a
            bad name, path, queue, ``max_events`` or ``deadline``, a function that is not ``async
            def`` or does not take the context first, or a name already taken.
    """
    for key in options:
        if key not in _OPTIONS:
            hint = did_you_mean(key, _OPTIONS)
            raise WorkflowRegistrationError(
                f"@workflow has no option {key!r}{hint}; its options are "
                f"{', '.join(_OPTIONS)}")

    def register(func: F) -> F:
        info = _info(func, options)
        existing = WORKFLOWS.get(info.name)
        if existing is not None and _origin(existing.fn) != _origin(func):
            raise WorkflowRegistrationError(
                f"workflow name {info.name!r} is already registered by "
                f"{_origin(existing.fn)}; pass another name=")
        from headwater.workflows.instances import register_activation

        register_activation(info)
        WORKFLOWS[info.name] = info
        func.__headwater_workflow__ = info  # type: ignore[attr-defined]
        return func

    if fn is not None:
        return register(fn)
    return register


def _info(func: Callable[..., Any], options: dict[str, Any]) -> WorkflowInfo:
    where = f"@workflow {getattr(func, '__qualname__', func)!r}"
    if not (inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func)):
        raise WorkflowRegistrationError(f"{where} must be an async def function "
                                        "(async def f(wf: WorkflowContext, ...); one that "
                                        "yields streams its chunks)")
    params = list(inspect.signature(func).parameters.values())
    if not params or params[0].kind not in (params[0].POSITIONAL_ONLY,
                                            params[0].POSITIONAL_OR_KEYWORD):
        raise WorkflowRegistrationError(f"{where} must take the WorkflowContext as its "
                                        "first parameter (async def f(wf, ...))")
    name = options.get("name") or f"{func.__module__}.{func.__qualname__}"
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise WorkflowRegistrationError(f"{where}: name {name!r} must match {_NAME.pattern}")
    queue = options.get("queue", "cpu")
    if not isinstance(queue, str) or not QUEUE_PATTERN.fullmatch(queue):
        raise WorkflowRegistrationError(
            f"{where}: queue {queue!r} must match {QUEUE_PATTERN.pattern}")
    fault = _option_fault(options)
    if fault is not None:
        raise WorkflowRegistrationError(f"{where}: {fault}")
    cap = options.get("max_events", DEFAULT_MAX_EVENTS)
    timeout = options.get("timeout", DEFAULT_ACTIVATION_TIMEOUT)
    path, deadline = options.get("path"), options.get("deadline")
    return WorkflowInfo(
        name=name, fn=func, queue=queue, path=path, timeout=float(timeout), deadline=deadline,
        retry=options.get("retry"),
        restart_on_failure=bool(options.get("restart_on_failure", False)),
        max_restarts=options.get("max_restarts"),
        input_schema=options.get("input_schema") or input_schema_of(func),
        max_events=cap, deploy=hints_of(options))


def _option_fault(options: dict[str, Any]) -> str | None:
    """The first fault of the options besides the name and the queue (path,
    ``max_events``, deploy hints, timeout, deadline), or None."""
    path = options.get("path")
    fault = path_fault(path) if path is not None else None
    if fault is not None:
        return fault
    cap = options.get("max_events", DEFAULT_MAX_EVENTS)
    if isinstance(cap, bool) or not isinstance(cap, int) or not 10 <= cap <= MAX_EVENTS_LIMIT:
        return f"max_events must be a whole number from 10 to {MAX_EVENTS_LIMIT}"
    fault = hint_fault(options)
    if fault is not None:
        return fault
    timeout = options.get("timeout", DEFAULT_ACTIVATION_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        return "timeout must be a number of seconds > 0"
    faults: list[str] = []
    if options.get("deadline") is not None:
        parse_deadline({"deadline": options["deadline"]}, faults)
    return faults[0] if faults else None


_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number",
                               bool: "boolean", list: "array", dict: "object"}


def input_schema_of(func: Callable[..., Any]) -> dict[str, Any]:
    """A JSON Schema of the function's input from its type hints: an object with one
    property per parameter after the context (typed where the hint is a plain JSON
    type), those without a default required, and no others unless it takes
    ``**kwargs`` (an input key the function has no parameter for would fail the run:
    the gateway answers 422 instead)."""
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        hints = {}
    props: dict[str, Any] = {}
    required: list[str] = []
    closed = True
    for p in list(inspect.signature(func).parameters.values())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            closed = closed and p.kind is p.VAR_POSITIONAL
            continue
        hint = hints.get(p.name)
        origin = typing.get_origin(hint) or hint
        props[p.name] = {"type": _JSON_TYPES[origin]} if origin in _JSON_TYPES else {}
        if p.default is p.empty:
            required.append(p.name)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    return schema


def _origin(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"
