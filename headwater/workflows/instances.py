"""The instances a worker keeps of its runs' functions, and what it does with them: run
an activation (``activate``: on from where the kept instance stopped, else from the
start), and, right after a step of the run succeeded on this worker, the next activation
at once (``continued``: a continuation, carried by the step's report).

A continuation saves a round trip per step: without it the coordinator records the
step's result, dispatches the next activation, and waits for its decision before the
next step is dispatched. The worker that ran the step usually holds the instance (its
activations and its steps on its own queue travel in one lane, keyed by the run's id,
so one partition and one worker): it gives the function the result itself and sends
the decision with the result. The coordinator takes it only when it is exactly the
activation it would dispatch next (``headwater/core/kinds/code/continuation.py``);
otherwise it dispatches that activation as usual, and this instance, gone ahead on
another input, no longer fits it (``Instance.fits``) and is replaced.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from headwater.codec import json_text
from headwater.core.kinds.code.decision import ENDS
from headwater.errors import WorkflowRegistrationError
from headwater.workflows.activation import Instance

if TYPE_CHECKING:
    from headwater.workflows.registry import WorkflowInfo

ACTIVATION_MARK = "__headwater_activation__"
"""Set on the task function that runs a workflow's activations."""

DEFAULT_CACHE_SIZE = 1000


def _cache_size(raw: str | None) -> int:
    """``HEADWATER_WORKFLOW_CACHE_SIZE`` as a number, else the default: importing the SDK
    must not fail on it (a client imports it too); a worker refuses a bad value at its
    start, naming it (``services.worker.settings``)."""
    try:
        return int(raw) if raw is not None else DEFAULT_CACHE_SIZE
    except ValueError:
        return DEFAULT_CACHE_SIZE


CACHE_SIZE = _cache_size(os.environ.get("HEADWATER_WORKFLOW_CACHE_SIZE"))
"""Runs whose instance a worker keeps (least recently used dropped first); 0 keeps none,
so that every activation replays from the start (what the benchmark compares)."""


class AttemptContext(Protocol):
    """What an activation uses of the attempt's ``headwater.context.TaskContext`` (named
    by its shape, so that the SDK of workflows imports nothing of the client's)."""

    node: str

    def progress(self, fraction: float, message: str = "") -> None:
        """Report progress on the run's live view."""

    async def definition(self, name: str) -> tuple[dict[str, Any], int | None]:
        """A stored definition's spec document and version, from the gateway."""


Resolver = Callable[[str], Awaitable[tuple[dict[str, Any], int | None]]]
"""A definition's name -> its spec document and version (what ``wf.call`` of a spec
definition needs; the worker asks the gateway)."""
CACHE: OrderedDict[str, Instance] = OrderedDict()
"""Run id -> its instance, most recently used last."""


async def activate(info: WorkflowInfo, payload: dict[str, Any],
                   progress: Callable[[float, str], None] | None = None,
                   resolve: Resolver | None = None, cache: bool = True,
                   node: str = "") -> dict[str, Any]:
    """Run one activation and return its decision (the activation task's output).

    Args:
        info: the workflow.
        payload: the activation's input (``journal.activation_input``).
        progress: where ``wf.progress`` goes.
        resolve: how a child step naming a definition gets its spec (None: such a
            step fails the activation).
        cache: keep and reuse the run's instance (``CACHE``).
        node: the run's code node (what ``continued`` matches a step's report with).

    Raises:
        NondeterminismError: the code parts from the history.
    """
    wid = str(payload.get("workflow_id", ""))
    inst = CACHE.get(wid) if cache else None
    if inst is None or inst.info is not info or not inst.fits(payload):
        inst = Instance(info, payload, progress)
    inst.node = node
    inst._progress = progress  # this attempt's: a cached instance's first one has ended
    inst.busy = True
    try:
        decision = inst.advance(payload)
    except BaseException:
        CACHE.pop(wid, None)
        raise
    finally:
        inst.busy = False
    decision = _as_sent(decision)
    _keep(wid, inst if cache else None, decision)
    for step in decision.get("steps") or ():
        if step["op"] == "child" and "workflow" not in step:
            if resolve is None:
                raise LookupError(f"wf.call({step['name']!r}): no @workflow of that name "
                                  "here, and no gateway to look up a definition")
            doc, version = await resolve(step["name"])
            step.update(workflow=doc, definition=step["name"], definition_version=version)
    return decision


def _as_sent(decision: dict[str, Any]) -> dict[str, Any]:
    """``decision`` as JSON gives it back, now: its report is encoded later, and the
    function may run on meanwhile (a step of the run that ends on this worker carries a
    continuation, ``continued``) and change a value it gave a step of this decision.
    One that is not JSON is left as it is (the worker fails the attempt, naming why)."""
    try:
        return orjson.loads(json_text(decision))  # type: ignore[no-any-return]
    except TypeError:
        return decision


def register_activation(info: WorkflowInfo) -> None:
    """Register the task a worker runs for the workflow's activations (its name)."""
    from headwater.sdk import REGISTRY, TaskInfo

    async def run_activation(ctx: AttemptContext, **payload: Any) -> dict[str, Any]:
        return await activate(info, payload, ctx.progress, _gateway_resolver(ctx),
                              node=ctx.node)

    run_activation.__qualname__ = f"{info.fn.__qualname__}.<activation>"
    run_activation.__module__ = info.fn.__module__
    existing = REGISTRY.get(info.name)
    if existing is not None and not getattr(existing.fn, ACTIVATION_MARK, False):
        raise WorkflowRegistrationError(
            f"workflow name {info.name!r} is taken by the @task {existing.fn.__module__}."
            f"{existing.fn.__qualname__}; pass another name=")
    setattr(run_activation, ACTIVATION_MARK, True)
    REGISTRY[info.name] = TaskInfo(name=info.name, queue=info.queue, fn=run_activation,
                                   wants_ctx=True, is_async=True)


def _gateway_resolver(ctx: AttemptContext) -> Resolver:
    async def resolve(name: str) -> tuple[dict[str, Any], int | None]:
        return await ctx.definition(name)
    return resolve


def _keep(wid: str, inst: Instance | None, decision: dict[str, Any]) -> None:
    """Keep ``inst`` as the run's instance (most recently used), unless its function has
    ended or the cache is off; else drop the run's."""
    if inst is not None and CACHE_SIZE > 0 and not any(key in decision for key in ENDS):
        CACHE[wid] = inst
        CACHE.move_to_end(wid)
        while len(CACHE) > CACHE_SIZE:
            CACHE.popitem(last=False)
    else:
        CACHE.pop(wid, None)


def continued(workflow_id: str, node: str, index: int | None, output: Any,
              at_ms: int) -> dict[str, Any] | None:
    """The continuation for a step that succeeded on this worker with ``output``: the
    decision of the run's next activation, reached here with the instance this worker
    kept, at ``at_ms`` (not before its last activation's time), given this result alone;
    None when it holds no instance waiting on that step, the function raised anything
    its driver lets out or parted from its history, or the decision needs what only an
    activation has (a definition looked up at the gateway).

    Returns:
        ``{"act", "through", "at_ms", "first_ms", "after_ms", "digest", "decision"}``
        (``first_ms`` and ``after_ms``: the times of the first and the last activation
        the instance ran, ``digest``: the last one's ``journal.act_digest``, which tie
        it to this run's history: an instance of an earlier run under the same id, or
        one gone ahead on a continuation the coordinator ignored, has others), and
        ``"progress": [fraction, message]`` when the function reported progress in it
        (the last report).
    """
    inst = CACHE.get(workflow_id)
    if (inst is None or inst.busy or inst.node != node or index is None or index % 2 == 0
            or not 0 <= index // 2 < len(inst.issued) or inst.issued[index // 2].done):
        return None
    k = inst.processed
    if not 0 < k <= len(inst.times):
        return None
    at, before = max(at_ms, inst.times[k - 1]), inst.digest
    reported: list[list[Any]] = []
    inst._progress = lambda fraction, message: reported.append([fraction, message])
    inst.busy = True
    try:  # the result as the journal holds it, and as a replay would give it: JSON's
        result = {"value": orjson.loads(json_text(output))}
        # the decision as it is now: the function may change a value it gave a step later
        decision = orjson.loads(json_text(inst.go_on(index // 2, result, at)))
    except BaseException:  # KeyboardInterrupt too (the driver lets it out): the worker
        CACHE.pop(workflow_id, None)  # outlives its functions; gone ahead, or out of
        return None  # step: not to be reused (the activation sent instead says why)
    finally:
        inst.busy = False
        inst._progress = None
    if any(s["op"] == "child" and "workflow" not in s for s in decision.get("steps") or ()):
        CACHE.pop(workflow_id, None)
        return None
    _keep(workflow_id, inst, decision)
    taken: dict[str, Any] = {"act": k, "through": inst.through[-1], "at_ms": at,
                             "first_ms": inst.times[0], "after_ms": inst.times[k - 1],
                             "digest": before, "decision": decision}
    if reported:
        taken["progress"] = reported[-1]
    return taken
