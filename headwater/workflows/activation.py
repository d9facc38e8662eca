"""One activation of a ``@workflow``: run the function over its journal, up to where it
waits on steps without results, and return the decision (``headwater/core/kinds/code``).

A worker gets activation k with the results the coordinator gave activations 0..k and
the steps they issued (``journal.activation_input``). An ``Instance`` runs the function
from its start: for each earlier activation it hands in that activation's results, runs
until the function waits, and checks that it issued exactly the steps the history says
that activation issued (op and name, in order); then for activation k it does the same,
and what it issues now is the decision. A difference is a ``NondeterminismError`` (the
activation fails and is retried; the run is not failed).

A worker keeps each run's instance between activations (``instances.CACHE``): when
activation k+1 follows the k it ran, only k+1's results are handed in (no replay), and
right after a step it ran it may run k+1 at once (``Instance.go_on``, a continuation).
After a crash, on another worker, or when the cache dropped it, the function is run
from its start.
"""

from __future__ import annotations

import inspect
import itertools
import traceback
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from headwater.codec import json_text
from headwater.core.kinds.code.decision import MAX_STEPS_PER_ACTIVATION, step_fault
from headwater.core.kinds.code.journal import act_digest
from headwater.errors import NondeterminismError
from headwater.workflows.context import ContinueAsNew, Step, WorkflowContext
from headwater.workflows.driver import Driver

if TYPE_CHECKING:
    from headwater.workflows.registry import WorkflowInfo

REPLAYED: list[Callable[[WorkflowInfo, int], None]] = []
"""Called, in order, each time a replay has re-run an earlier activation (the workflow,
the activation's number), before the activation asked for runs: where a worker's fault
point ``worker.replaying`` kills it mid-replay (``services/worker/lifecycle.py``)."""
CODE_VERSION: list[Callable[[WorkflowInfo], str]] = []
"""The code version this process names for a ``@workflow`` (the last one put here; a
worker puts the rule of its announcements, ``services/worker/workflows.py``, as it
starts): a child that a run starts by ``wf.call`` of a ``@workflow`` records it in its
spec, so that the child's activations travel in that version's lane
(``headwater.topics.Topics.lane``) as its parent's do, instead of going to any worker of
the queue. Empty (the harness, a client): the child records none. A replay compares a
child step by its op and name alone (``describe``), so a history whose child recorded no
version, or another one, replays alike."""


class Instance:
    """A run of the function, stepped activation by activation."""

    def __init__(self, info: WorkflowInfo, payload: dict[str, Any],
                 progress: Callable[[float, str], None] | None) -> None:
        self.info = info
        self.workflow_id = str(payload.get("workflow_id", ""))
        self.driver = Driver()
        self.issued: list[Step] = []
        self.issued_in: list[int] = []
        """The activation that issued each step of ``issued``."""
        self.node = ""
        """The run's code node (``instances.activate`` sets it)."""
        self.recorded: list[dict[str, Any]] = []
        self.times: list[int] = []
        self.through: list[int] = []
        self.given: list[int] = []
        """The steps whose results the function was given, in order (``fits``)."""
        self.digest = ""
        """The last activation's ``journal.act_digest`` (each chains the one before):
        what a continuation is matched with in the journal."""
        self.act = 0
        self.final = 0
        self.processed = 0
        self.fault: NondeterminismError | None = None
        self._progress = progress
        self.ctx = WorkflowContext(info, self)
        raw = payload.get("input")
        kwargs = raw if isinstance(raw, dict) else {} if raw is None else {"input": raw}
        self.chunks: list[Any] = []
        try:
            body = info.fn(self.ctx, **kwargs)
        except TypeError as e:  # the input does not fit the parameters: the function fails
            body = _refused(TypeError(
                f"workflow {info.name!r} cannot be called with its input: {e} (input keys: "
                f"{', '.join(sorted(map(str, kwargs))) or 'none'})"))
        self.driver.start_main(self._stream(body) if inspect.isasyncgen(body) else body)
        self.busy = False

    def now_ms(self) -> int:
        return int(self.times[min(self.act, len(self.times) - 1)]) if self.times else 0

    def issue(self, step: Step) -> int:
        """Number a step the function issues and check it against the history.

        Raises:
            ValueError: the step is one the core would refuse (``decision.step_fault``,
                or one step over ``MAX_STEPS_PER_ACTIVATION`` in this activation):
                raised where the function issues it, so the function fails (or catches
                it) instead of its activation being refused and retried for ever.
        """
        fault = issue_fault(step.command, len(self.issued) - len(self.recorded))
        if fault is not None:
            raise ValueError(fault)
        s = len(self.issued)
        self.issued.append(step)
        self.issued_in.append(self.act)
        new = describe(step.command)
        if s < len(self.recorded):
            rec = self.recorded[s]
            if describe(rec) != new or int(rec.get("act", -1)) != self.act:
                self._fault(NondeterminismError(s, f"{describe(rec)} (activation "
                                                   f"{rec.get('act')})", new))
        elif self.act < self.final:
            self._fault(NondeterminismError(s, "", new))
        return s

    def patched(self, change_id: str) -> bool:
        """``wf.patched``: True where the history has this change's marker (a run that
        began on the new code) or the code runs anew; False where the history went on
        without it (a run that began before the change). Issues the marker when True."""
        s = len(self.issued)
        if s < len(self.recorded):
            rec = self.recorded[s]
            if (rec.get("op"), rec.get("name"), int(rec.get("act", -1))) != (
                    "patch", change_id, self.act):
                return False
        elif self.act < self.final:
            return False  # the history's activation ended here without the marker
        marker = Step(self.ctx, {"op": "patch", "name": change_id})
        marker.start()
        marker.set_result(True)
        return True

    def progress(self, fraction: float, message: str) -> None:
        if self._progress is not None:
            self._progress(fraction, message)

    def child_spec(self, info: WorkflowInfo) -> dict[str, Any]:
        """``WorkflowInfo.spec()`` of a child, with the code version ``CODE_VERSION``
        names for it, if any."""
        return info.spec(CODE_VERSION[-1](info) if CODE_VERSION else None)

    def _fault(self, error: NondeterminismError) -> None:
        if self.fault is None:
            self.fault = error

    def advance(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Run activations ``processed``..k of ``payload`` and return k's decision.

        Raises:
            NondeterminismError: the function parts from the history.
        """
        k = int(payload["activation"])
        through = [int(t) for t in payload["through"]]
        results = payload["results"]
        self.recorded = list(payload["steps"])
        self.times = [int(t) for t in payload["times"]]
        self.final = k
        upto = _steps_through(self.recorded, k)
        for a in range(self.processed, k + 1):
            self.act = a
            self.ctx.replaying = a < k
            given = results[through[a - 1] if a else 0:through[a]]
            self.digest = act_digest(self.digest, self.times[a], [int(r[0]) for r in given])
            for s, result in given:
                if not 0 <= s < len(self.issued):
                    raise NondeterminismError(s, "a result for it", "no such step")
                self.given.append(s)
                if not self.issued[s].done:  # a patch marker is done when issued
                    self.issued[s].resolve(result)
            self.driver.wake()
            self.driver.run()
            if self.fault is not None:
                raise self.fault
            if a < k:
                self._check_replayed(a, upto[a])
                for hook in REPLAYED:
                    hook(self.info, a)
        self.processed = k + 1
        self.through = through[:k + 1]
        return self._decision(k)

    def fits(self, payload: dict[str, Any]) -> bool:
        """Whether this instance is where activation ``payload["activation"]`` starts:
        it ran every activation before it, given the same results (the same steps', in
        the same order) at the same points and the same times, and issued the same
        number of steps. One that went ahead on a continuation the coordinator ignored
        was given another result, or at another time; the times alone do not tell it
        (the coordinator may have dispatched the activation with another step's result
        in the very millisecond the continuation was given)."""
        k = int(payload["activation"])
        through = [int(t) for t in payload["through"][:k]]
        return (not self.busy and self.processed == k
                and len(self.issued) == len(payload["steps"])
                and self.through == through
                and self.times[:k] == [int(t) for t in payload["times"][:k]]
                and self.given == [int(r[0]) for r in payload["results"][:len(self.given)]]
                and len(self.given) == (through[-1] if through else 0))

    def go_on(self, s: int, result: dict[str, Any], at_ms: int) -> dict[str, Any]:
        """Run the next activation here, given step ``s``'s result alone, at ``at_ms``
        (a continuation: ``headwater.workflows.instances.continued``), and return its
        decision.

        Raises:
            NondeterminismError: the function parts from its own history.
        """
        k = self.processed
        known = len(self.recorded)  # the steps issued since are history too, by now
        self.recorded += [{"op": st.command.get("op"), "name": st.command.get("name", ""),
                           "act": a} for st, a in zip(self.issued[known:],
                                                      self.issued_in[known:], strict=True)]
        self.times = [*self.times[:k], at_ms]
        self.digest = act_digest(self.digest, at_ms, [s])
        self.through = [*self.through, (self.through[-1] if self.through else 0) + 1]
        self.act = self.final = k
        self.ctx.replaying = False
        self.given.append(s)
        self.issued[s].resolve(result)
        self.driver.wake()
        self.driver.run()
        if self.fault is not None:
            raise self.fault
        self.processed = k + 1
        return self._decision(k)

    async def _stream(self, body: AsyncIterator[Any]) -> list[Any]:
        """A streaming function: what it yields anew are chunks of the activation; its
        output is every chunk, in order."""
        every: list[Any] = []
        async for chunk in body:
            every.append(chunk)
            if self.act == self.final:  # not one yielded before, on replay
                self.chunks.append(chunk)
        return every

    def _check_replayed(self, a: int, expected: int) -> None:
        """After re-running activation ``a``: it issued every step the history has for
        it and those before (``expected`` steps), and the function has not ended (the
        history goes on)."""
        if len(self.issued) < expected:
            missing = self.recorded[len(self.issued)]
            raise NondeterminismError(len(self.issued), describe(missing), "")
        main = self.driver.main
        if main is not None and main.done:
            nxt = self.recorded[expected] if expected < len(self.recorded) else None
            raise NondeterminismError(expected, describe(nxt) if nxt else
                                      f"activation {a + 1}", "the function's end")

    def _decision(self, k: int) -> dict[str, Any]:
        main = self.driver.main
        assert main is not None
        steps = [{**s.command, "step": s.number} for s in self.issued[len(self.recorded):]]
        chunks, self.chunks = self.chunks, []
        streamed = {"chunks": chunks} if chunks else {}
        if not main.done:
            return {"steps": steps, **streamed}
        try:
            value = main.outcome()
        except ContinueAsNew as e:
            return _not_json(e.input, "the input of wf.continue_as_new") or {
                "continue_as_new": e.input}
        except BaseException as e:  # SystemExit and the like too: the function failed
            return {"fail": {"type": type(e).__name__, "message": str(e)[:2000],
                             "traceback": "".join(traceback.format_exception(e))[-8000:]}}
        return _not_json(value, "the workflow returned a value that") or {
            "steps": steps, "finish": value, **streamed}


def _not_json(value: Any, what: str) -> dict[str, Any] | None:
    """The decision that fails the function because ``value`` (``what``) is not JSON
    (``codec.json_text``: NaN and infinities included, which orjson would write as
    null), or None."""
    try:
        json_text(value)
    except TypeError as e:
        return {"fail": {"type": "TypeError", "message": f"{what} is not JSON: {e}"}}
    return None


def _steps_through(recorded: list[dict[str, Any]], k: int) -> list[int]:
    """How many of the ``recorded`` steps activations 0..a issued, for each a up to
    ``k``: counted once, so that a replay of k activations takes time in proportion to
    k (counting again after each took k^2: a second for 2,000)."""
    issued = [0] * (k + 1)
    for r in recorded:
        act = int(r.get("act", -1))
        if 0 <= act <= k:
            issued[act] += 1
    return list(itertools.accumulate(issued))


def issue_fault(command: dict[str, Any], new: int) -> str | None:
    """Why the core would refuse ``command`` as the step after ``new`` steps issued in
    this activation, or its input is not JSON, or None. A child naming a definition has
    no spec yet (it is looked up once the activation decided): only its other fields
    are checked."""
    if new >= MAX_STEPS_PER_ACTIVATION:
        return (f"an activation may issue at most {MAX_STEPS_PER_ACTIVATION} steps at once "
                "(bound the gather with max_concurrency)")
    checked = {**command, "workflow": {}} if command.get("op") == "child" and (
        "workflow" not in command) else command
    fault = step_fault(checked)
    if fault is None:
        try:  # the decision would not be JSON: the worker would fail the whole activation
            json_text(command.get("input"))
        except TypeError as e:
            fault = f"the input of {describe(command)} is not JSON: {e}"
    return fault


async def _refused(error: TypeError) -> Any:
    """The body of a function its input could not be given to: it fails at once."""
    raise error


def describe(command: dict[str, Any]) -> str:
    """How a step reads in a nondeterminism message: ``task pkg.fetch``."""
    name = command.get("name") or ""
    return f"{command.get('op', '?')} {name}".strip()


