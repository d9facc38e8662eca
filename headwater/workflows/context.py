"""``WorkflowContext``: what a ``@workflow`` function does durably, each operation a
step of its history (or derived from it).

    @workflow
    async def research(wf: WorkflowContext, question: str) -> dict:
        topic = await wf.run(classify, text=question)
        pages = await wf.gather(*(wf.run(fetch, url=u) for u in topic["urls"]),
                                max_concurrency=5)
        await wf.sleep(60)
        answer = await wf.signal("approval", timeout=86400)
        return {"pages": pages, "approved": answer}

A step is issued when it is awaited, or started by ``gather``; its number is the order
of issue, which is what a replay checks (``activation.py``).
"""

from __future__ import annotations

import random as _random
import uuid as _uuid
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from headwater.core.caching import DEFAULT_TTL_MS, ttl_ms
from headwater.core.caching import MAX_KEY_CHARS as MAX_CACHE_KEY_CHARS
from headwater.core.ids import QUEUE_PATTERN
from headwater.errors import StepFailed
from headwater.workflows.driver import AnyOf, Driver, Waitable

if TYPE_CHECKING:
    from headwater.workflows.registry import WorkflowInfo

DEFAULT_TASK_RETRY: dict[str, Any] = {"max_attempts": 3, "backoff_base": 1.0,
                                      "backoff_max": 60.0, "multiplier": 2.0, "jitter": 0.2}
"""A step's retry policy when neither ``wf.run`` nor the ``@workflow`` gives one."""
DEFAULT_HEARTBEAT_TIMEOUT = 30.0
"""Seconds: a task step's heartbeat timeout unless ``wf.run`` gives one."""


class Runtime(Protocol):
    """What runs the function (``activation.Instance``): it numbers and checks the
    steps the function issues, and knows the activation's time."""

    workflow_id: str
    driver: Driver
    node: str
    """The run's code node ("" when not known)."""

    def issue(self, step: Step) -> int:
        """Number a step the function issues (checked against the history)."""

    def now_ms(self) -> int:
        """The current activation's time, ms since the epoch."""

    def patched(self, change_id: str) -> bool:
        """``WorkflowContext.patched``."""

    def progress(self, fraction: float, message: str) -> None:
        """Report progress on the run's live view."""

    def child_spec(self, info: WorkflowInfo) -> dict[str, Any]:
        """The spec document of a child run of ``info`` (``wf.call`` of a
        ``@workflow``): pinned to the code version this process names for it, if any."""


class ContinueAsNew(BaseException):
    """Raised by ``wf.continue_as_new``: the function's run ends here and starts again
    with ``input`` and a fresh history. A ``BaseException``, so that ``except
    Exception`` in workflow code does not stop it."""

    def __init__(self, input: Any) -> None:
        super().__init__("continue as new")
        self.input = input


class Step(Waitable):
    """One durable operation: issued once (``start``), ended by its result."""

    def __init__(self, ctx: WorkflowContext, command: dict[str, Any]) -> None:
        super().__init__()
        self.ctx = ctx
        self.command = command
        self.number: int | None = None

    def start(self) -> None:
        if self.number is None:
            self.number = self.ctx._runtime.issue(self)

    def resolve(self, result: dict[str, Any]) -> None:
        """End the step with its recorded result (``{"value"}`` or ``{"error"}``)."""
        if "error" in result:
            err = result["error"] or {}
            assert self.number is not None
            node = self.ctx._runtime.node or "main"
            where = (f"{self.command.get('op')} {self.command.get('name') or ''}".rstrip()
                     + f", {node}[{2 * self.number + 1}]")
            self.set_error(StepFailed(self.number, str(err.get("type", "Error")),
                                      str(err.get("message", "")),
                                      int(err.get("attempts") or 0), where))
        else:
            self.set_result(result.get("value"))


class WorkflowContext:
    """The running workflow, as its function sees it.

    Attributes:
        workflow_id: the run's id.
        info: the ``@workflow`` being run.
        replaying: True while the function re-runs what the history has (an
            activation's new part runs with False): progress is not sent again.
    """

    def __init__(self, info: WorkflowInfo, runtime: Runtime) -> None:
        self.info = info
        self.workflow_id = runtime.workflow_id
        self.replaying = True
        self._runtime = runtime
        self._rng = _random.Random(f"headwater:{self.workflow_id}")

    # -- steps ---------------------------------------------------------------------------

    def run(self, task: Callable[..., Any] | str, /, *, queue: str | None = None,
            retry: dict[str, Any] | None = None, timeout: float | None = None,
            heartbeat_timeout: float | None = None, **kwargs: Any) -> Step:
        """Run a ``@task`` (the function, or its registered name) as an attempt on its
        queue, with ``kwargs`` as its input; awaiting gives its output, or raises
        ``StepFailed`` once its last attempt failed.

        Args:
            task: a ``@task`` function or a task name.
            queue: the queue (default: the task's own).
            retry: a retry policy (``max_attempts``, ``backoff_base``, ...; default:
                the ``@workflow``'s ``retry``).
            timeout: seconds per attempt, from dispatch.
            heartbeat_timeout: seconds without a report after which an attempt is lost.
            kwargs: the task's input, except two keywords ``run`` takes for itself:
                ``cache_key`` caches the step's result under this text (with the task's
                name and the run's tenant): a later step or run giving the same key gets
                the stored output without running the task (``headwater.core.caching``);
                ``cache_ttl``, how long it is kept: seconds, or a duration text such as
                ``"12h"`` or ``"7d"`` (default 7 days).
        """
        cache_key, cache_ttl = kwargs.pop("cache_key", None), kwargs.pop("cache_ttl", None)
        name, own_queue = _task_of(task)
        q = queue or own_queue or self.info.queue
        if not QUEUE_PATTERN.fullmatch(q):
            raise ValueError(f"queue {q!r} must match {QUEUE_PATTERN.pattern}")
        command: dict[str, Any] = {
            "op": "task", "name": name, "input": kwargs or None, "queue": q,
            "retry": dict(retry or self.info.retry or DEFAULT_TASK_RETRY),
            "heartbeat_timeout": heartbeat_timeout or DEFAULT_HEARTBEAT_TIMEOUT}
        if timeout is not None:
            command["timeout"] = timeout
        if cache_key is not None:
            command["cache"] = _cache_command(cache_key, cache_ttl)
        elif cache_ttl is not None:
            raise ValueError("wf.run's cache_ttl goes with a cache_key")
        return Step(self, command)

    def call(self, workflow: Any, input: Any = None, *, retry: dict[str, Any] | None = None,
             timeout: float | None = None) -> Step:
        """Run a child workflow: a ``@workflow`` (the function or its name) or a
        registered definition (its name); awaiting gives its output, or raises
        ``StepFailed`` when it failed (after ``retry``) or was cancelled. The child is
        linked to this run: cancelling this run cancels it. A ``@workflow``'s child run
        records the code version the worker announces for it, so that it runs on the
        code that called it (``activation.CODE_VERSION``)."""
        from headwater.workflows.registry import info_of

        info = info_of(workflow)
        command: dict[str, Any] = {"op": "child", "input": input}
        if info is not None:
            command.update(name=info.name, workflow=self._runtime.child_spec(info),
                           definition=info.name)
        elif isinstance(workflow, str):
            command["name"] = workflow  # a definition: resolved when issued
        else:
            raise TypeError(f"wf.call takes a @workflow or a definition's name, not "
                            f"{type(workflow).__name__}")
        if retry is not None:
            command["retry"] = dict(retry)
        if timeout is not None:
            command["timeout"] = timeout
        return Step(self, command)

    def sleep(self, seconds: float | None = None, *, until: datetime | None = None) -> Step:
        """Sleep durably for ``seconds``, or until the instant ``until``."""
        if (seconds is None) == (until is None):
            raise ValueError("wf.sleep takes seconds or until=, not both or neither")
        if until is not None:
            if until.tzinfo is None:
                raise ValueError("wf.sleep(until=...) needs an aware datetime (with tzinfo)")
            return Step(self, {"op": "sleep", "until_ms": round(until.timestamp() * 1000)})
        if seconds is None or seconds < 0:
            raise ValueError(f"wf.sleep needs seconds >= 0, not {seconds!r}")
        return Step(self, {"op": "sleep", "seconds": float(seconds)})

    def signal(self, name: str, *, timeout: float | None = None) -> Step:
        """Wait for the signal ``name`` (``POST /v1/workflows/{id}/signals/{name}``,
        ``headwater signal``); awaiting gives its fields, or raises ``StepFailed``
        (``TimeoutError``) after ``timeout`` seconds. A signal sent before the wait
        began is kept for it."""
        command: dict[str, Any] = {"op": "signal", "name": name}
        if timeout is not None:
            command["timeout"] = float(timeout)
        return Step(self, command)

    async def gather(self, *items: Awaitable[Any], max_concurrency: int | None = None,
                     return_exceptions: bool = False) -> list[Any]:
        """Await steps and coroutines (of durable operations) together; results in the
        order given. At most ``max_concurrency`` run at once (the rest start as earlier
        ones end). The first failure (in order) is raised once all have ended, unless
        ``return_exceptions``."""
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        waitables = [self._waitable(item) for item in items]
        limit = max_concurrency or len(waitables) or 1
        queue = list(waitables)
        running: list[Waitable] = []
        while queue or running:
            while queue and len(running) < limit:
                w = queue.pop(0)
                w.start()
                running.append(w)
            done = await AnyOf(running)
            running = [w for w in running if w not in done]
        results: list[Any] = []
        for w in waitables:
            try:
                results.append(w.outcome())
            except Exception as e:
                if not return_exceptions:
                    raise
                results.append(e)
        return results

    def _waitable(self, item: Awaitable[Any]) -> Waitable:
        if isinstance(item, Waitable):
            return item
        if isinstance(item, Coroutine):
            return self._runtime.driver.spawn(item)
        raise TypeError(f"wf.gather takes steps and coroutines, not {type(item).__name__}")

    # -- derived from the history ----------------------------------------------------------

    def now(self) -> datetime:
        """The time of the current activation (the same on every replay)."""
        return datetime.fromtimestamp(self._runtime.now_ms() / 1000, tz=UTC)

    def random(self) -> float:
        """A number in [0, 1), from a generator seeded by the run's id."""
        return self._rng.random()

    def uuid(self) -> _uuid.UUID:
        """A version-4 UUID drawn from the same generator as ``random``."""
        return _uuid.UUID(int=self._rng.getrandbits(128), version=4)

    def patched(self, change_id: str) -> bool:
        """Whether to take the new code path of a change named ``change_id``: True in a
        run that reaches this point on code that has it (the choice is recorded), False
        in a run whose history passed this point before the change was deployed. Keep
        the old path until no run that began before the change is left::

            if wf.patched("summarise-v2"):
                summary = await wf.run(summarise_v2, text=text)
            else:
                summary = await wf.run(summarise, text=text)
        """
        return self._runtime.patched(change_id)

    def continue_as_new(self, input: Any = None, /, **kwargs: Any) -> NoReturn:
        """End this run of the function and start it again from the top with
        ``input`` (or the keyword arguments) as its input and a fresh history: how a
        loop that runs for days keeps its history (and its ``max_events``) bounded.
        The run keeps its id; ``GET /v1/workflows/{id}`` shows its generation."""
        raise ContinueAsNew(input if input is not None else kwargs)

    def progress(self, fraction: float, message: str = "") -> None:
        """Report progress (0..1) on the run's live view; not sent again on replay."""
        if not self.replaying:
            self._runtime.progress(fraction, message)


def _task_of(task: Callable[..., Any] | str) -> tuple[str, str | None]:
    """The task name (and queue) of a ``@task`` function or a name."""
    if isinstance(task, str):
        from headwater.sdk import REGISTRY

        info = REGISTRY.get(task)
        return task, info.queue if info is not None else None
    info = getattr(task, "__headwater_task__", None)
    if info is None:
        raise TypeError(f"wf.run takes a @task function or a task name; "
                        f"{getattr(task, '__name__', task)!r} is not a @task")
    return str(info.name), str(info.queue)


def _cache_command(key: str, ttl: float | str | None) -> dict[str, Any]:
    """A step's ``cache`` (``{"key", "ttl_ms"}``), checked as the coordinator will.

    Raises:
        ValueError: a key that is no text of 1 to ``MAX_KEY_CHARS`` characters, or a bad
            ttl.
    """
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_CACHE_KEY_CHARS:
        raise ValueError(f"wf.run's cache_key must be a text of 1 to "
                         f"{MAX_CACHE_KEY_CHARS} characters")
    return {"key": key, "ttl_ms": DEFAULT_TTL_MS if ttl is None else ttl_ms(ttl)}
