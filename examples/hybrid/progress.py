"""What the hybrid example's runner shows of a workflow's events: one line per step
as it happens, then the answer and each node's time.

:class:`Progress` folds the server-sent events of ``GET /v1/workflows/{id}/events``
(type and data, as ``ops.cli.follow.events`` yields them). Times are the
coordinator's (each event's ``at_ms``), so they do not depend on the runner's clock.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TERMINAL = {"WorkflowSucceeded": "succeeded", "WorkflowFailed": "failed",
            "WorkflowCancelled": "cancelled"}
_STARTS = frozenset({"TaskDispatched", "WaitStarted", "ConditionEvaluated", "MapExpanded"})


@dataclass
class Progress:
    """The workflow as its events told it so far.

    Attributes:
        status: ``running`` until the terminal event, then how it ended.
        output: the workflow's output, once it succeeded.
        error: why it failed or was cancelled.
        started_ms: the first event's time (ms since the epoch).
        ended_ms: the terminal event's time.
        nodes: node -> ``[first event ms, NodeFinished ms or None, status]``.
        streamed: text streamed by a node and not yet printed (no newline yet).
    """

    status: str = "running"
    output: Any = None
    error: str = ""
    started_ms: int | None = None
    ended_ms: int | None = None
    nodes: dict[str, list[Any]] = field(default_factory=dict)
    streamed: dict[str, str] = field(default_factory=dict)

    def _at(self, at_ms: int | None) -> str:
        if at_ms is None or self.started_ms is None:
            return "[      ]"
        return f"[{(at_ms - self.started_ms) / 1000:6.2f}s]"

    def apply(self, kind: str, data: dict[str, Any]) -> list[str]:
        """Fold one event; return the lines to print for it (often none)."""
        at = data.get("at_ms") if isinstance(data.get("at_ms"), int) else None
        if self.started_ms is None:
            self.started_ms = at
        node = data.get("node")
        if isinstance(node, str) and kind in _STARTS:
            self.nodes.setdefault(node, [at, None, "running"])
        if kind == "TaskOutputStreamed" and isinstance(node, str):
            return self._streamed(node, data.get("chunk"))
        if kind in TERMINAL:
            self.status, self.ended_ms = TERMINAL[kind], at
            self.output = data.get("output")
            self.error = str(data.get("error") or data.get("reason") or "")
            return [f"{self._at(at)} workflow {self.status}"
                    + (f": {self.error}" if self.error else "")]
        head: list[str] = []
        if kind == "LoopStepDecided" and isinstance(node, str):
            rest = self.streamed.pop(node, "").strip()  # a last line without a newline
            head = [f"           {node} > {rest}"] if rest else []
        return head + [f"{self._at(at)} {line}" for line in self._note(kind, data)]

    def _streamed(self, node: str, chunk: Any) -> list[str]:
        """Print a node's streamed text line by line (a model streams word pieces)."""
        text = self.streamed.get(node, "") + (chunk if isinstance(chunk, str)
                                             else json.dumps(chunk))
        *lines, rest = text.split("\n")
        self.streamed[node] = rest
        return [f"           {node} > {line}" for line in lines if line.strip()]

    def _note(self, kind: str, d: dict[str, Any]) -> list[str]:
        node = str(d.get("node", ""))
        if kind == "NodeFinished":
            entry = self.nodes.setdefault(node, [d.get("at_ms"), None, ""])
            entry[1:] = [d.get("at_ms"), d.get("status")]
            return [f"{node}: {d.get('status')}" + (f" ({d['error']})" if d.get("error")
                                                    else "")]
        if kind == "LoopStepDecided":
            step = ("finish" if d.get("finish")
                    else f"{d.get('tool')} {_brief(d.get('input'))}")
            return [f"{node} step {d.get('step')}: {step}"]
        note = _NOTES.get(kind)
        return [f"{node}: {note(d)}"] if note is not None else []

    def summary(self) -> list[str]:
        """The closing lines: the answer and its fate, then each node's time."""
        lines: list[str] = []
        out = self.output if isinstance(self.output, dict) else None
        if out is not None:
            lines += ["", str(out.get("answer", "")), ""]
            lines.append(f"published to {out['path']}" if out.get("published")
                         else "not published" + (f" ({out['note']})" if out.get("note")
                                                 else ""))
            machine = out.get("machine") or {}
            counts = machine.get("by_category") or {}
            classes = ", ".join(f"{c} {n}" for c, n in sorted(
                counts.items(), key=lambda item: (-item[1], item[0])))
            lines.append(f"this machine: {machine.get('packages')} packages, "
                         f"{machine.get('installed_mb')} MB: {classes}")
        lines += ["", "node            status        seconds"]
        for name, (start, end, status) in self.nodes.items():
            took = f"{(end - start) / 1000:7.2f}" if start is not None and end else "      -"
            lines.append(f"{name:<15} {status or 'running':<13} {took}")
        if self.started_ms is not None and self.ended_ms is not None:
            lines.append(f"{'workflow':<15} {self.status:<13} "
                         f"{(self.ended_ms - self.started_ms) / 1000:7.2f}")
        return lines


_NOTES: dict[str, Callable[[dict[str, Any]], str]] = {
    "MapExpanded": lambda d: f"{d.get('count')} items",
    "WaitStarted": lambda d: f"waiting for signal {d.get('signal')!r}",
    "SignalConsumed": lambda d: f"took {d.get('name')} {json.dumps(d.get('fields'))}",
    "ConditionEvaluated": lambda d: f"when is {str(bool(d.get('value'))).lower()}",
    "TaskFailed": lambda d: (f"attempt {d.get('attempt')} failed: {d.get('error_type')}: "
                             f"{str(d.get('error'))[:200]}"),
}
"""Event type -> the note it makes, after the node's name."""


def _brief(value: Any) -> str:
    """A tool input in a few words: the package read or the query searched."""
    if isinstance(value, dict):
        for key in ("package", "query", "question"):
            if isinstance(value.get(key), str):
                return f"{value[key]!r:.70}"
    return ""
