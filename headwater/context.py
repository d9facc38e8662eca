"""``TaskContext``: what task code sees of its attempt (``ctx``).

The worker passes the context as ``ctx`` when a task function declares that parameter
(``headwater.sdk``). Long tasks save their progress with ``ctx.checkpoint(state)``; the
next attempt (after a failure, a timeout or a lost worker) reads it back as
``ctx.last_checkpoint``. A cancelled attempt stops: ``async`` functions are cancelled
where they await; sync ones cannot be interrupted, so ``ctx.stop_requested`` turns true
and the next ``ctx`` call raises ``AttemptCancelled``.

Task code runs other workflows with ``ctx.call(name, input)`` and
``ctx.call_parallel([(name, input), ...])`` (sync task code: they block the task's
thread) or ``await ctx.acall(...)`` / ``await ctx.acall_parallel(...)`` (async task
code): each child is a run of a stored definition, its id derived from the task, not the
attempt, so a retried attempt finds its children rather than starting them again
(``headwater.client.calls``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import trace

from headwater.core.ids import dispatch_id
from headwater.core.limits import MAX_LIMIT
from headwater.errors import AttemptCancelled
from headwater.task_log import TaskLogger

if TYPE_CHECKING:
    from headwater.client.calls import Calls


DEFAULT_GATEWAY_URL = "http://127.0.0.1:8080"
"""Where ``ctx.call`` submits outside a worker (a worker passes its
``HEADWATER_GATEWAY_URL``)."""

ProgressSink = Callable[[float, str], None]
"""Where ``TaskContext.progress`` goes: ``(fraction, message)`` (the worker's reporter)."""


class AttemptRuntime(Protocol):
    """What the worker running an attempt lends its ``TaskContext`` (the SDK never imports
    the worker)."""

    @property
    def stop_reason(self) -> str | None:
        """Why the attempt must stop (cancelled, timed out, the worker stopping), or None
        while it may go on."""

    def checkpoint(self, state: Any) -> Awaitable[None]:
        """Save ``state`` for the next attempt; see ``TaskContext.checkpoint``."""

    def report_units(self, units: int) -> None:
        """Keep what the attempt used of its rate limits; see
        ``TaskContext.report_units``."""


class AlreadyDone:
    """An awaitable that is already complete: what ``checkpoint`` returns when there is
    nothing to wait for (outside a worker, or a sync task's acknowledged checkpoint)."""

    def __await__(self) -> Generator[Any, None, None]:
        yield from ()


@dataclass(frozen=True)
class AttemptInfo:
    """Which attempt runs: its workflow, node, map index and attempt number.

    Attributes:
        workflow_id: the workflow's id.
        node: the node id.
        index: the map index, or None.
        attempt: 1-based attempt number.
    """

    workflow_id: str
    node: str
    index: int | None
    attempt: int

    @property
    def dispatch_id(self) -> str:
        """``workflow_id/node[index]/attempt`` (``headwater.core.ids.dispatch_id``)."""
        return dispatch_id(self.workflow_id, self.node, self.index, self.attempt)


class TaskContext:
    """The running attempt, as task code sees it.

    Attributes:
        workflow_id: the workflow's id.
        node: the node id.
        index: the map index, or None.
        attempt: 1-based attempt number.
        dispatch_id: ``workflow_id/node[index]/attempt``: the same for every delivery of
            this attempt, so a key for idempotent side effects.
        span: the attempt's OpenTelemetry span (docs/tracing.md): add attributes and
            events to it, or make it current (``trace.use_span(ctx.span)``) for spans
            of your own; ``trace.INVALID_SPAN`` (which records nothing) while tracing
            is off.
        log: a logger (``headwater.task_log.TaskLogger``) whose records carry the
            trace id and the dispatch id.
    """

    def __init__(self, info: AttemptInfo, sink: ProgressSink | None = None, *,
                 last_checkpoint: Any = None, runtime: AttemptRuntime | None = None,
                 gateway_url: str | None = None, span: trace.Span | None = None) -> None:
        """Args:
            info: the attempt.
            sink: where ``progress`` goes (the worker's reporter), or None.
            last_checkpoint: what an earlier attempt saved, or None.
            runtime: the worker's side of the attempt (stop requests, checkpoints,
                heartbeats), or None outside a worker.
            gateway_url: the gateway ``call`` submits child runs to (None:
                ``DEFAULT_GATEWAY_URL``).
            span: the attempt's trace span (None: ``trace.INVALID_SPAN``).
        """
        self.span: trace.Span = span if span is not None else trace.INVALID_SPAN
        self.log = TaskLogger(self.span, info.dispatch_id, info.workflow_id)
        self.workflow_id = info.workflow_id
        self.node = info.node
        self.index = info.index
        self.attempt = info.attempt
        self.dispatch_id = info.dispatch_id
        self._sink = sink
        self._last_checkpoint = last_checkpoint
        self._runtime = runtime
        self._gateway_url = gateway_url or DEFAULT_GATEWAY_URL
        self._calls: Calls | None = None
        self._units: int | None = None

    @property
    def last_checkpoint(self) -> Any:
        """The last checkpoint an earlier attempt of this task saved (any JSON value), or
        None on the first attempt or when none was saved. It does not change when this
        attempt saves one."""
        return self._last_checkpoint

    @property
    def stop_requested(self) -> bool:
        """Whether this attempt must stop (cancelled, timed out, or the worker stopping).

        Sync task code, which the worker cannot interrupt, should check it in long loops
        and return (or let ``AttemptCancelled`` from the next ``ctx`` call propagate).
        """
        return self._runtime is not None and self._runtime.stop_reason is not None

    def progress(self, fraction: float, message: str = "") -> None:
        """Report progress; it shows in the workflow's status and on its SSE stream.

        Args:
            fraction: done so far, clamped to [0, 1].
            message: a short human-readable note.

        Raises:
            AttemptCancelled: the attempt must stop (see ``stop_requested``).
        """
        self._raise_if_stopped()
        if self._sink is not None:
            self._sink(min(1.0, max(0.0, float(fraction))), str(message))

    def heartbeat(self) -> None:
        """Say that task code is still making progress, and stop if it should not.

        The worker already heartbeats for every running attempt (sync code blocking its
        thread included), so this only matters as a cheap cancellation point in loops.

        Raises:
            AttemptCancelled: the attempt must stop (see ``stop_requested``).
        """
        self._raise_if_stopped()

    def checkpoint(self, state: Any) -> Awaitable[None]:
        """Save ``state`` so that the next attempt of this task can resume from it
        (``last_checkpoint``).

        From sync task code (a worker thread) it returns once Kafka has acknowledged the
        checkpoint: a crash right after loses nothing. From ``async`` task code it queues
        the checkpoint (in order with the attempt's other reports) and returns at once;
        awaiting the result waits for the acknowledgement, and need not be done.

        Args:
            state: any JSON value, at most the worker's ``HEADWATER_MAX_OUTPUT_BYTES``
                when encoded.

        Returns:
            An awaitable that completes when the checkpoint is acknowledged (already
            complete when called from a sync task).

        Raises:
            TypeError: ``state`` is not JSON.
            ValueError: ``state`` is too large.
            AttemptCancelled: the attempt must stop (see ``stop_requested``).
        """
        self._raise_if_stopped()
        if self._runtime is not None:
            return self._runtime.checkpoint(state)
        checkpoint_json(state)  # outside a worker (e.g. a unit test of task code)
        return AlreadyDone()

    def report_units(self, units: int) -> None:
        """Say how many units of its node's rate limits this attempt used (model tokens,
        say), when that is known only once it ran: they count in the limit's window
        instead of the ``units`` the spec asked for (docs/specs.md, "Concurrency keys
        and rate limits"). The last call counts; it is sent with the attempt's success.

        Args:
            units: an integer from 0 to ``headwater.core.limits.MAX_LIMIT``.

        Raises:
            ValueError: ``units`` is no such integer.
        """
        if type(units) is not int or not 0 <= units <= MAX_LIMIT:
            raise ValueError(f"units must be an integer from 0 to {MAX_LIMIT}, got "
                             f"{units!r}"[:200])
        self._units = units
        if self._runtime is not None:
            self._runtime.report_units(units)

    @property
    def units(self) -> int | None:
        """The units ``report_units`` was last given, or None."""
        return self._units

    def call(self, definition: str, input: Any = None) -> Any:
        """Run a stored definition as a child run and return its output; blocks (for sync
        task code: from ``async`` code, ``await ctx.acall``).

        The child's id is ``<workflow_id>:<node>[.<index>]:call.<n>`` (``n``: the
        attempt's calls so far), the same in every attempt, so a retried attempt that
        calls in the same order finds the child it had started (see
        ``headwater.client.calls``).

        Args:
            definition: ``name`` or ``name@3``.
            input: the child's input (JSON).

        Raises:
            CallFailed: the child failed or was cancelled (not retried).
            CallRefused: (``headwater.errors``) the gateway refused it for good,
                naming the definition and why: 404 unknown definition, 410 deleted, 422
                an input its schema refuses or a malformed name (not retried).
            HeadwaterHTTPError: another refusal (409 the id taken by another input).
            AttemptCancelled: the attempt must stop while it waits.
            RuntimeError: called on a running event loop.
        """
        return self.call_parallel([(definition, input)])[0]

    def call_parallel(self, calls: Sequence[tuple[str, Any]]) -> list[Any]:
        """Run several child runs at once (``(definition, input)`` each, all submitted
        before any is waited for) and return their outputs in the order given; blocks.

        Raises:
            CallFailed: a child failed or was cancelled (the first in order).
            CallRefused, HeadwaterHTTPError, AttemptCancelled, RuntimeError: as ``call``.
        """
        return self._children().run(calls)

    async def acall(self, definition: str, input: Any = None) -> Any:
        """``call`` for ``async`` task code."""
        return (await self.acall_parallel([(definition, input)]))[0]

    async def acall_parallel(self, calls: Sequence[tuple[str, Any]]) -> list[Any]:
        """``call_parallel`` for ``async`` task code (a cancelled attempt is cancelled
        where it awaits)."""
        return await self._children().arun(calls)

    async def definition(self, name: str) -> tuple[dict[str, Any], int | None]:
        """A stored definition's spec document and version (``name`` or ``name@3``),
        from the gateway: what a ``@workflow``'s ``wf.call`` of a spec definition
        records for its child."""
        from headwater.client.aio import AsyncClient

        base, _, version = name.partition("@")
        async with AsyncClient(self._gateway_url) as client:
            found = await client.definitions.get(base, int(version) if version else None)
        return found.raw["workflow"], found.version

    def _children(self) -> Calls:
        """The attempt's child runs (the client is imported on first use only)."""
        if self._calls is None:
            from headwater.client.calls import Calls

            self._calls = Calls(self.workflow_id, self.node, self.index, self._gateway_url,
                                self._raise_if_stopped, self.attempt)
        return self._calls

    def _raise_if_stopped(self) -> None:
        reason = self._runtime.stop_reason if self._runtime is not None else None
        if reason is not None:
            raise AttemptCancelled(f"{self.dispatch_id} must stop: {reason}")


def checkpoint_json(state: Any, max_bytes: int | None = None) -> bytes:
    """``state`` as JSON, checked for a checkpoint.

    Args:
        state: what task code passed to ``ctx.checkpoint``.
        max_bytes: the largest encoding allowed, bytes; None: no limit.

    Returns:
        The JSON encoding.

    Raises:
        TypeError: ``state`` is not JSON (a set, an object, a lone surrogate ...).
        ValueError: the encoding is over ``max_bytes``.
    """
    from headwater import codec  # fastavro with it: not for what only imports headwater

    try:
        data = codec.json_text(state)
    except TypeError as e:  # orjson's JSONEncodeError is one
        raise TypeError(f"a checkpoint must be JSON: {e}") from e
    if max_bytes is not None and len(data) > max_bytes:
        raise ValueError(f"the checkpoint is {len(data)} bytes, over the limit of "
                         f"{max_bytes} (HEADWATER_MAX_OUTPUT_BYTES)")
    return data
