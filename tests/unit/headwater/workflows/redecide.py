"""Each decision a run's history holds, decided again by the function run afresh from its
start over the history up to that activation (what a worker without the run's instance
does): a run's activations, whether a worker ran them with the instance kept, replayed
them, or a step's report carried them (a continuation), must all be what a replay
decides."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.kinds.code.journal import activation_input, is_activation
from headwater.core.state import WorkflowState
from headwater.workflows.decorator import WorkflowInfo
from headwater.workflows.instances import Resolver, activate


async def redecided(history: Sequence[ev.HistoryEvent], info: WorkflowInfo,
                    resolve: Resolver | None = None) -> list[tuple[int, Any, Any]]:
    """``(activation, recorded decision, decision replayed afresh)`` for every decision
    in ``history`` (one run's events, in order)."""
    state: WorkflowState | None = None
    out: list[tuple[int, Any, Any]] = []
    for event in history:
        body = event.body
        if isinstance(body, ev.TaskSucceeded) and is_activation(body.index):
            assert state is not None
            k = (body.index or 0) // 2
            payload = activation_input(state, body.node, k)
            fresh = await activate(info, payload, resolve=resolve, cache=False)
            out.append((k, body.output, fresh))
        state = evolve(state, event)
    return out
