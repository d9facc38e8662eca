"""Running a ``@workflow`` function deterministically: its coroutines are stepped by hand,
never on an event loop, so the order in which they run depends only on the results
they are given and the order they are given in.

A *fiber* is one coroutine: the function's body, or one that ``wf.gather`` started.
It runs until it awaits something not done yet: a step (``Waitable``), another fiber,
or any of several (``AnyOf``). ``Driver.run`` steps the ready fibers, first ready first,
until none is ready; ``Driver.deliver`` gives results to steps and readies the fibers
waiting on them, in the order the fibers were started. Anything else awaited (an
asyncio future from ``asyncio.sleep``, a lock) is refused inside the fiber with a
``TypeError`` naming the durable operation to use instead.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Coroutine, Generator
from typing import Any

_PENDING = object()


class Waitable:
    """Something a fiber can await that ends once: a step, or a fiber."""

    def __init__(self) -> None:
        self._value: Any = _PENDING
        self._error: BaseException | None = None

    @property
    def done(self) -> bool:
        """Whether it has ended (with a value or an error)."""
        return self._value is not _PENDING or self._error is not None

    def set_result(self, value: Any) -> None:
        """End it with ``value``."""
        self._value = value

    def set_error(self, error: BaseException) -> None:
        """End it with ``error`` (what awaiting it raises)."""
        self._error = error

    def outcome(self) -> Any:
        """Its value, or raise its error. Only once done."""
        if self._error is not None:
            raise self._error
        return self._value

    def start(self) -> None:
        """Make it begin (a lazy step is issued; a fiber is scheduled). Idempotent."""

    def __await__(self) -> Generator[Any, Any, Any]:
        self.start()
        if not self.done:
            yield self
        return self.outcome()


class AnyOf:
    """Await until at least one of ``items`` is done; gives the list of those done."""

    def __init__(self, items: list[Waitable]) -> None:
        self.items = items

    def satisfied(self) -> bool:
        return any(w.done for w in self.items)

    def __await__(self) -> Generator[Any, Any, list[Waitable]]:
        for w in self.items:
            w.start()
        if not self.satisfied():
            yield self
        return [w for w in self.items if w.done]


class Fiber(Waitable):
    """A coroutine the driver steps; awaiting it gives what it returns."""

    def __init__(self, driver: Driver, coro: Coroutine[Any, Any, Any], order: int) -> None:
        super().__init__()
        self.driver = driver
        self.coro = coro
        self.order = order
        self.waiting: Waitable | AnyOf | None = None
        self.started = False

    def start(self) -> None:
        if not self.started:
            self.started = True
            self.driver.ready.append(self)


class Driver:
    """Steps fibers. ``main`` is the function's body."""

    def __init__(self) -> None:
        self.ready: deque[Fiber] = deque()
        self.blocked: list[Fiber] = []
        self._count = 0
        self.main: Fiber | None = None

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> Fiber:
        """A fiber for ``coro``, not started (``start`` or awaiting it starts it)."""
        fiber = Fiber(self, coro, self._count)
        self._count += 1
        return fiber

    def start_main(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.main = self.spawn(coro)
        self.main.start()

    def run(self) -> None:
        """Step ready fibers until none is ready."""
        while self.ready:
            fiber = self.ready.popleft()
            self._step(fiber)

    def wake(self) -> None:
        """Ready every blocked fiber whose wait is over, in the order they were made."""
        still: list[Fiber] = []
        for fiber in sorted(self.blocked, key=lambda f: f.order):
            wait = fiber.waiting
            over = wait.satisfied() if isinstance(wait, AnyOf) else (
                wait is not None and wait.done)
            if over:
                self.ready.append(fiber)
            else:
                still.append(fiber)
        self.blocked = still

    def _step(self, fiber: Fiber) -> None:
        send: Any = None
        error: BaseException | None = None
        wait = fiber.waiting
        fiber.waiting = None
        if isinstance(wait, AnyOf):
            send = [w for w in wait.items if w.done]
        while True:
            try:
                if error is not None:
                    got = fiber.coro.throw(error)
                    error = None
                else:
                    got = fiber.coro.send(send)
            except StopIteration as stop:
                fiber.set_result(stop.value)
                self.wake()
                return
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):  # Ctrl-C in a test: not the function's
                    raise
                fiber.set_error(e)
                self.wake()
                return
            if isinstance(got, Waitable | AnyOf):
                done = got.satisfied() if isinstance(got, AnyOf) else got.done
                if done:
                    send = [w for w in got.items if w.done] if isinstance(got, AnyOf) else None
                    continue
                fiber.waiting = got
                self.blocked.append(fiber)
                return
            send = None
            error = TypeError(
                f"a workflow awaited {type(got).__name__}, which is not durable: await "
                "only wf.run, wf.call, wf.sleep, wf.signal and wf.gather (not "
                "asyncio.sleep, asyncio.gather or I/O; do I/O in a @task)")
