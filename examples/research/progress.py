"""What the research example's runner shows of a code workflow's events: a line for each
decision of the function (the steps it issued), decide's reasoning as it streams, the
function's progress reports, the signal and the timer, then the answer and the time
each task took.

A code workflow's history is that of one node (``main``): activations at even task
indexes, whose output is the function's decision (``{"steps": [...]}``, with
``finish`` or ``fail`` at its end), and the steps at odd ones
(``headwater/core/kinds/code``). :class:`Progress` folds the server-sent events of
``GET /v1/workflows/{id}/events`` (type and data). Times are the coordinator's.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

TERMINAL = {"WorkflowSucceeded": "succeeded", "WorkflowFailed": "failed",
            "WorkflowCancelled": "cancelled"}


def _issued(step: dict[str, Any]) -> str:
    """How one issued step reads."""
    op, name = step.get("op"), step.get("name", "")
    if op == "sleep":
        return f"sleep {float(step.get('seconds') or 0):g} s"
    if op == "signal":
        timeout = step.get("timeout")
        return f"wait for signal {name!r}" + (f" (timeout {timeout:g} s)" if timeout else "")
    if op == "child":
        return f"child workflow {name}"
    return str(name)


def decision_line(decision: Any) -> str:
    """One activation's decision: what it issued (a task issued n times as ``name xn``), and
    how the function ended if it did."""
    if not isinstance(decision, dict):
        return "decided nothing readable"
    counts = Counter(_issued(s) for s in decision.get("steps") or [] if isinstance(s, dict))
    parts = [f"{what} x{n}" if n > 1 else what for what, n in counts.items()]
    if "finish" in decision:
        parts.append("returned")
    if isinstance(decision.get("fail"), dict):
        fail = decision["fail"]
        parts.append(f"raised {fail.get('type')}: {fail.get('message', '')}"[:200])
    return ", ".join(parts) or "waits"


def waits_for(decision: Any, signal: str) -> bool:
    """Whether an activation's decision issued a wait for ``signal``."""
    steps = decision.get("steps") if isinstance(decision, dict) else None
    return any(isinstance(s, dict) and s.get("op") == "signal" and s.get("name") == signal
               for s in steps or [])


@dataclass
class Progress:
    """The run as its events told it so far.

    Attributes:
        status: ``running`` until the terminal event, then how it ended.
        output: the workflow's output, once it succeeded.
        error: why it failed or was cancelled.
        started_ms, ended_ms: the first and the terminal event's time.
        steps: what each step the function issued reads as, in issue order (step s
            is task index ``2s + 1``).
        began: task index -> when its first attempt was dispatched.
        took: task name -> [count, seconds in all] of the steps that ended.
        streamed: text decide streamed and not yet printed (no newline yet).
        last_decision: the latest activation's decision.
    """

    status: str = "running"
    output: Any = None
    error: str = ""
    started_ms: int | None = None
    ended_ms: int | None = None
    steps: list[str] = field(default_factory=list)
    began: dict[int, int] = field(default_factory=dict)
    took: dict[str, list[float]] = field(default_factory=dict)
    streamed: str = ""
    last_decision: Any = None

    def _at(self, at_ms: int | None) -> str:
        if at_ms is None or self.started_ms is None:
            return "[       ]"
        return f"[{(at_ms - self.started_ms) / 1000:7.2f}s]"

    def apply(self, kind: str, data: dict[str, Any]) -> list[str]:
        """Fold one event; return the lines to print for it (often none)."""
        at = data.get("at_ms") if isinstance(data.get("at_ms"), int) else None
        if self.started_ms is None:
            self.started_ms = at
        index = data.get("index") if isinstance(data.get("index"), int) else None
        lines: list[str] = []
        if kind == "TaskDispatched" and index is not None:
            self.began.setdefault(index, at or 0)
        elif kind == "TaskSucceeded" and index is not None:
            lines = self._succeeded(index, data.get("output"), at)
        elif kind == "TaskFailed" and index is not None:
            lines = [f"{self._at(at)} {self._name(index)} attempt "
                     f"{data.get('attempt')} failed: {data.get('error', '')}"[:300]]
        elif kind == "TaskOutputStreamed":
            lines = self._streamed(data.get("chunk"), at)
        elif kind == "TaskProgressed":
            lines = [f"{self._at(at)} {float(data.get('fraction') or 0):4.0%} "
                     f"{data.get('message', '')}"]
        elif kind == "SignalConsumed":
            lines = [f"{self._at(at)} signal {data.get('name')!r} received: "
                     f"{json.dumps(data.get('fields'))}"]
        elif kind == "TimerFired":
            lines = [f"{self._at(at)} the timer fired"]
        elif kind in TERMINAL:
            self.status, self.ended_ms = TERMINAL[kind], at
            self.output = data.get("output")
            self.error = str(data.get("error") or "")
        return lines

    def _succeeded(self, index: int, output: Any, at: int | None) -> list[str]:
        if index % 2 == 0:  # an activation: the function decided
            self.last_decision = output
            steps = output.get("steps") if isinstance(output, dict) else None
            self.steps += [_issued(s) for s in steps or [] if isinstance(s, dict)]
            return [f"{self._at(at)} the function: {decision_line(output)}"]
        name = self._name(index)
        entry = self.took.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += ((at or 0) - self.began.get(index, at or 0)) / 1000
        return []

    def _name(self, index: int) -> str:
        """What the step at task index ``index`` reads as (an activation: ``the
        function``)."""
        if index % 2 == 0:
            return "the function"
        s = index // 2
        return self.steps[s] if s < len(self.steps) else f"step {s}"

    def _streamed(self, chunk: Any, at: int | None) -> list[str]:
        text = self.streamed + (chunk if isinstance(chunk, str) else json.dumps(chunk))
        *lines, self.streamed = text.split("\n")
        return [f"{self._at(at)}   decide: {line}" for line in lines if line.strip()]

    def summary(self) -> list[str]:
        """The lines printed at the end: the outcome, the answer, what became of it, and
        each task's count and time."""
        took = ((self.ended_ms or 0) - (self.started_ms or 0)) / 1000
        lines = ["", f"workflow        {self.status} in {took:.2f} s"]
        if self.status != "succeeded":
            return [*lines, f"error           {self.error}"]
        out = self.output if isinstance(self.output, dict) else {}
        lines += ["", str(out.get("answer", "")), ""]
        machine = out.get("machine") or {}
        lines.append(f"machine         {machine.get('packages')} packages, "
                     f"{machine.get('installed_mb')} MB; draft rounds {out.get('steps')}")
        lines.append(f"published       {out.get('path')}" if out.get("published")
                     else f"shelved         {out.get('note', '')}")
        lines += ["", f"{'step':32s}count   seconds (dispatch to result, summed)"]
        lines += [f"{name:32s}{int(n):5d}   {s:7.2f}" for name, (n, s) in self.took.items()]
        return lines
