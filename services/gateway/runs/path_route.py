"""The route of ``POST <path>`` (``runs.paths``), and which paths the gateway's other
routes take: a definition claiming one of those is refused (``taken_paths``: at ``PUT
/v1/definitions/{name}`` and when a worker's announcement is registered), since a
``POST`` there would reach the other route (its 405 or its own answer), never the
workflow."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from headwater.core.kinds.code.records import PATH_PATTERN


class WorkflowPathRoute(APIRoute):
    """A route that matches a ``POST`` no other route of the app matches."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """``Match.FULL`` for a ``POST`` of a workflow path's form that no other route
        matches, even in part; ``Match.NONE`` otherwise."""
        path = scope.get("path", "")
        if (scope.get("type") != "http" or scope.get("method") != "POST"
                or path.startswith("/v1/") or not PATH_PATTERN.fullmatch(path)):
            return Match.NONE, {}
        if _taker(getattr(scope.get("router"), "routes", ()), scope) is not None:
            return Match.NONE, {}
        return super().matches(scope)


def _taker(routes: Iterable[BaseRoute], scope: Scope) -> BaseRoute | None:
    """The first route other than a workflow path's that matches ``scope``, even in
    part (another method), or None."""
    for route in routes:
        if not isinstance(route, WorkflowPathRoute) and route.matches(scope)[0] is not Match.NONE:
            return route
    return None


def taken(routes: Iterable[BaseRoute], path: str) -> str | None:
    """Why a workflow cannot be served at ``path`` because another route of the gateway
    takes it (``GET /health``, the web UI under ``/ui``), or None: what a definition
    claiming it is refused for, since a ``POST`` there would never run it."""
    taker = _taker(routes, {"type": "http", "method": "POST", "path": path, "root_path": "",
                            "query_string": b"", "headers": []})
    if taker is None:
        return None
    methods = sorted(getattr(taker, "methods", None) or ())
    what = f"{'/'.join(methods)} {getattr(taker, 'path', path)}".strip()
    return (f"path {path} is the gateway's own ({what}): a POST there would never run the "
            "workflow; give it another path")


def taken_paths(routes: Iterable[BaseRoute], spec: Any) -> list[str]:
    """Why each path a spec's code nodes claim is the gateway's own (``taken``)."""
    nodes = spec.get("nodes") if isinstance(spec, dict) else None
    faults = []
    for i, node in enumerate(nodes if isinstance(nodes, list) else ()):
        path = node.get("path") if isinstance(node, dict) else None
        fault = taken(routes, path) if isinstance(path, str) else None
        if fault is not None:
            faults.append(f"workflow: nodes[{i}]: {fault}")
    return faults
