"""The ``loop`` kind's records: its spec fields (``LoopSpec``, ``ToolSpec``) and its
event, with how it reads (``DESCRIBE``: its timeline detail; ``FOLLOW``: its live-view
line).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core.retry import RetryPolicy
from headwater.core.wording import Describe, Follow, FollowNote, short


@dataclass(frozen=True)
class ToolSpec:
    """One tool a loop's decide task may pick: it runs as task ``task`` on ``queue``,
    with its own retry policy, timeout and heartbeat timeout (seconds)."""

    name: str
    task: str
    queue: str
    retry: RetryPolicy
    timeout: float | None
    heartbeat_timeout: float


@dataclass(frozen=True)
class LoopSpec:
    """A loop node: its tools, at most ``max_steps`` steps, what reaching the bound does
    (``"fail"`` or ``"finish"``), and an optional budget of what decide reports spent."""

    tools: tuple[ToolSpec, ...]
    max_steps: int
    on_exhausted: str = "fail"
    budget: float | None = None

    def tool(self, name: str) -> ToolSpec | None:
        """The tool named ``name``, or None."""
        return next((t for t in self.tools if t.name == name), None)


@dataclass(frozen=True)
class LoopStepDecided:
    """History: step ``step`` (0-based) of a ``loop`` node was decided: call ``tool``
    with ``input``, or (``finish``) end the loop with ``output``. ``spend`` is what the
    decision reported against the loop's ``budget``."""

    workflow_id: str
    node: str
    step: int
    at_ms: int
    tool: str = ""
    input: Any = None
    finish: bool = False
    output: Any = None
    spend: float = 0.0


def _step(b: LoopStepDecided) -> str:
    spend = f" spend {b.spend:g}" if b.spend else ""
    if b.finish:
        return short(f"step {b.step}: finish {short(b.output)}{spend}")
    return short(f"step {b.step}: {b.tool} {short(b.input)}{spend}")


def _step_decided(data: Mapping[str, Any]) -> FollowNote:
    step = data.get("step")
    note = (f"loop step {step}: finish" if data.get("finish")
            else f"loop step {step}: {data.get('tool')}")
    return FollowNote(f"{data.get('node')}: {note}", detail=note)


DESCRIBE: dict[type[Any], Describe] = {LoopStepDecided: _step}
"""The event's timeline detail."""

FOLLOW: dict[type[Any], Follow | None] = {LoopStepDecided: _step_decided}
"""The event's line in the live view (``ops/cli/follow.py``)."""
