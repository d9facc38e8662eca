"""Running a ``@workflow`` by its function: ``client.run(research, question="...")``
returns what ``research`` returns, typed by its signature.

A ``@workflow`` a worker serves is a definition under the workflow's name
(``services/gateway/definitions/announced.py``), so running it is ``POST
/v1/run/{name}`` with the function's arguments (after the context) as the input, bound
by the function's signature here so that a wrong argument is a ``TypeError`` before
anything is sent. ``Client.run`` and ``AsyncClient.run`` take the function (or its
name, as before: ``run(name, input, mode=...)`` answers with a ``Run``).

    @workflow(name="research")
    async def research(wf: WorkflowContext, question: str) -> dict[str, Any]: ...

    answer: dict[str, Any] = client.run(research, question="why?")
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeAlias, TypeVar

from headwater.client import requests as req
from headwater.client.requests import Request
from headwater.client.types import Run
from headwater.workflows.context import WorkflowContext
from headwater.workflows.decorator import info_of

P = ParamSpec("P")
R = TypeVar("R")
WorkflowFunction: TypeAlias = Callable[Concatenate[WorkflowContext, P], Coroutine[Any, Any, R]]
"""A ``@workflow`` function: ``async def f(wf: WorkflowContext, ...) -> R``."""


def is_workflow(target: object) -> bool:
    """Whether ``target`` is a ``@workflow`` function (not a name)."""
    return not isinstance(target, str) and info_of(target) is not None


def workflow_call(target: Callable[..., Any], args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The definition's name and the input of a run of ``target(wf, *args, **kwargs)``.

    Args:
        target: a ``@workflow`` function.
        args, kwargs: its arguments after the context.

    Returns:
        ``(name, input)``: the input names every argument given (defaults are the
        function's own, applied when it runs).

    Raises:
        TypeError: ``target`` is no ``@workflow``, or the arguments do not fit its
            signature (named as Python names them).
    """
    info = info_of(target)
    if info is None:
        raise TypeError(f"{getattr(target, '__qualname__', target)!r} is not a @workflow "
                        "function; pass a @workflow or a definition's name")
    params = list(inspect.signature(info.fn).parameters.values())[1:]
    bound = inspect.Signature(params).bind(*args, **kwargs)
    given: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = next(p.kind for p in params if p.name == name)
        if kind is inspect.Parameter.VAR_KEYWORD:
            given.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            raise TypeError(f"@workflow {info.name} takes *{name}: its input is named "
                            "arguments only")
        else:
            given[name] = value
    return info.name, given


def workflow_request(target: Callable[..., Any], args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> Request[Run]:
    """``POST /v1/run/{name}`` of ``target(wf, *args, **kwargs)``, waiting (the client
    waits on with ``result`` if the gateway's wait ends first).

    Raises:
        TypeError: as ``workflow_call``.
    """
    name, given = workflow_call(target, args, kwargs)
    return req.run(name, given, "sync", None, None)
