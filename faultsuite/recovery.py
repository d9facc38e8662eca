"""How long a restarted coordinator took to recover, from outside: from the old process
found dead to its consumer group formed again (``GroupWatch``), and to the first
history record stamped after the death (only a coordinator writes the events topic, so
with one coordinator that is the new process's first progress). The second minus the
first is roughly what the new process spent on its table (reading the changelog) and
its first batch; the first is mostly the group's wait for the dead member (its session
timeout, for a dynamic member).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient

from services.common.clock import now_ms

POLL_S = 0.25
"""Seconds between two looks at the group."""


def first_after(moments: Sequence[int], ordered: Sequence[int]) -> list[int | None]:
    """Per moment (ms), the first of ``ordered`` (ms, ascending) strictly after it, or
    None."""
    out: list[int | None] = []
    for moment in moments:
        i = bisect.bisect_right(ordered, moment)
        out.append(ordered[i] if i < len(ordered) else None)
    return out


def recovery_times(deaths_ms: Sequence[int], stamps: Iterable[int]) -> list[float | None]:
    """Per death (ms since the epoch), seconds until the first history record stamped
    after it (Kafka timestamps, ms); None: nothing after it."""
    return [None if t is None else round((t - d) / 1000, 2)
            for d, t in zip(deaths_ms, first_after(deaths_ms, sorted(stamps)), strict=True)]


def recoveries(deaths_ms: Sequence[int], formed_ms: Sequence[int],
               stamps: Iterable[int]) -> list[dict[str, float | None]]:
    """Per death (ms since the epoch): ``group_s``, seconds until the group was next
    seen formed with new members (``GroupWatch.formed_ms``), and ``first_record_s``,
    until the first history record stamped after the death (``recovery_times``);
    None: not seen."""
    groups = first_after(deaths_ms, sorted(formed_ms))
    return [{"group_s": None if g is None else round((g - d) / 1000, 2), "first_record_s": t}
            for d, g, t in zip(deaths_ms, groups, recovery_times(deaths_ms, stamps),
                               strict=True)]


@dataclass
class GroupWatch:
    """Notes each time a consumer group is seen ``Stable`` with another set of members
    than the last time (a process that joined or left), polled every ``POLL_S``.

    Attributes:
        bootstrap: the broker.
        group: the consumer group.
        formed_ms: when each new set of members was first seen stable, ms since the
            epoch (late by up to ``POLL_S`` and a round trip).
    """

    bootstrap: str
    group: str
    formed_ms: list[int] = field(default_factory=list)
    _members: frozenset[str] | None = None
    _task: asyncio.Task[None] | None = None

    def see(self, state: str, members: Iterable[str], at_ms: int) -> None:
        """Note one look at the group: its state and member ids."""
        now = frozenset(members)
        if state == "Stable" and now and now != self._members:
            if self._members is not None:
                self.formed_ms.append(at_ms)
            self._members = now

    def start(self) -> None:
        """Watch in the background until ``stop``."""
        self._task = asyncio.create_task(self._watch())

    async def stop(self) -> None:
        """Stop watching."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self) -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            while True:
                # One group per request: aiokafka 0.14 garbles answers about several.
                for response in await admin.describe_consumer_groups([self.group]):
                    for g in response.groups:
                        if g[1] == self.group:
                            self.see(g[2], (m[0] for m in g[5]), now_ms())
                await asyncio.sleep(POLL_S)
        finally:
            await admin.close()


def figures(deaths: Sequence[tuple[str, int, int | None]], watch: GroupWatch | None,
            stamps: Iterable[int]) -> list[dict[str, Any]]:
    """Per death ``(cause, ended ms, bytes of local store deleted or None)``: the cause,
    the store lost, and ``recoveries``."""
    found = recoveries([d[1] for d in deaths], watch.formed_ms if watch else [], stamps)
    return [{"cause": cause, "store_lost_bytes": lost, **times}
            for (cause, _, lost), times in zip(deaths, found, strict=True)]
