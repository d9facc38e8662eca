"""The workflow table: a faust ``Table`` (backed by a compacted changelog topic) holding,
per workflow, a small header, the definition once, and one entry per task — plus an
in-memory cache of decoded states.

Writing one event's effect touches the header and the changed tasks only, so the bytes
written do not grow with the workflow's size. Every entry of a workflow goes to the
changelog partition of the workflow id (``partition_for_key``), the partition its input
records use, so recovery hands a workflow's entries to the process that owns it.
This process is the only writer of its partitions' workflows (DESIGN.md §3.2), so the
cache is exact until a rebalance, when it is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import faust
from aiokafka.partitioner import murmur2

from headwater.core.state import WorkflowState
from headwater.errors import DecodeError
from services.coordinator.keys import (
    DEFINITION,
    TABLE_KEY_SEP,
    intent_partition,
    table_entry_key,
    table_entry_workflow,
)
from services.coordinator.snapshot import (
    dump_definition,
    dump_header,
    dump_task,
    header_applied,
    load_split,
)

log = logging.getLogger(__name__)
SEP = TABLE_KEY_SEP  # workflow id, SEP, task key (or DEFINITION): the key format is in topics
entry_key = table_entry_key


class WorkflowTable(faust.Table[bytes, bytes]):
    """A table whose entries are partitioned by the workflow id in front of the key.

    ``on_recovered``, when set, is awaited with the partitions this process owns once
    faust has restored them from the changelog and before their input streams resume.
    """

    on_recovered: Callable[[set[int]], Awaitable[None]] | None = None

    async def on_recovery_completed(self, active_tps: set[Any], standby_tps: set[Any]) -> None:
        """faust's hook after recovery (``faust.tables.recovery``, before ``resume_flow``)."""
        await super().on_recovery_completed(active_tps, standby_tps)
        if self.on_recovered is not None:
            await self.on_recovered({tp.partition for tp in active_tps})

    def partition_for_key(self, key: Any) -> int | None:
        """The partition the workflow's input records use (Kafka's murmur2 partitioner)."""
        partitions: int = self.partitions or self.app.conf.topic_partitions
        slot = intent_partition(bytes(key))
        if slot is not None:  # an intent's slot: its own partition
            return slot % partitions
        hashed: int = murmur2(table_entry_workflow(bytes(key)).encode())
        return (hashed & 0x7FFFFFFF) % partitions


class TableStore:
    """``Store`` over a ``WorkflowTable`` with raw-bytes keys and values."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self._cache: dict[str, WorkflowState] = {}
        self._applied: dict[str, dict[str, int]] = {}

    def get(self, workflow_id: str) -> WorkflowState | None:
        """The cached state, else the table's entries decoded, else None."""
        state = self._cache.get(workflow_id)
        if state is None:
            state = self.load(workflow_id)
            if state is not None:
                self._cache[workflow_id] = state
        return state

    def load(self, workflow_id: str) -> WorkflowState | None:
        """Decode the workflow from the table, ignoring the cache.

        Raises:
            DecodeError: an entry is malformed or missing.
        """
        header = self.table.get(entry_key(workflow_id))
        if header is None:
            return None
        definition = self.table.get(entry_key(workflow_id, DEFINITION))
        return load_split(header, definition,
                          lambda key: self.table.get(entry_key(workflow_id, key)))

    def applied(self, workflow_id: str) -> dict[str, int]:
        """Input topic -> offset of the last record applied to the workflow (its records
        are all on one partition of each topic), as stored beside its header; empty for
        an unknown workflow. Records at or below these offsets, delivered again after a
        crash because their offsets were not committed yet, must not be applied twice.

        Raises:
            DecodeError: the header is malformed.
        """
        applied = self._applied.get(workflow_id)
        if applied is None:
            header = self.table.get(entry_key(workflow_id))
            applied = header_applied(header) if header is not None else {}
        return dict(applied)

    def entries(self, state: WorkflowState, parts: set[str],
                applied: dict[str, int]) -> list[tuple[bytes, bytes]]:
        """The table entries of ``state``'s changed ``parts`` (task keys, ``DEFINITION``;
        ``writeset.touched_parts``), then its header with the ``applied`` offsets (to be
        written in this order); keep ``state`` and ``applied`` as the cached copies."""
        wid = state.workflow_id
        out = [(entry_key(wid, part),
                dump_definition(state) if part == DEFINITION else dump_task(state, part))
               for part in sorted(parts)]
        out.append((entry_key(wid), dump_header(state, applied)))
        if state.status.terminal:
            self.forget(wid)  # no further event changes it
        else:
            self._cache[wid] = state
            self._applied[wid] = dict(applied)
        return out

    def write(self, entries: list[tuple[bytes, bytes | None]]) -> list[Awaitable[Any]]:
        """Write entries (None deletes) in order, to the local store and the changelog.

        Returns:
            One future per changelog record; they resolve once the broker has it. Await
            them before the inputs are committed: faust's own ``flush`` may return with
            records still buffered.
        """
        return [self._write(key, value) for key, value in entries]

    def partition(self, workflow_id: str) -> int:
        """The partition of the workflow's entries and input records."""
        partition: int | None = self.table.partition_for_key(entry_key(workflow_id))
        assert partition is not None
        return partition

    def get_entry(self, key: bytes) -> bytes | None:
        """A raw entry of the local store."""
        value: bytes | None = self.table.data.get(key)
        return value

    def _write(self, key: bytes, value: bytes | None) -> Awaitable[Any]:
        if value is None:
            self.table.data.pop(key, None)
        else:
            self.table.data[key] = value  # the local store, without a second changelog record
        future: Awaitable[Any] = self.table.send_changelog(
            self.table.partition_for_key(key), key, value)
        return future

    def forget(self, workflow_id: str) -> None:
        """Drop the cached copies."""
        self._cache.pop(workflow_id, None)
        self._applied.pop(workflow_id, None)

    def clear_cache(self) -> None:
        """Drop every cached copy (on rebalance)."""
        self._cache.clear()
        self._applied.clear()

    def scan(self) -> list[WorkflowState]:
        """Decode every non-terminal workflow held locally (for re-arming timers)."""
        states = []
        for key in list(self.table.keys()):
            if SEP.encode() in bytes(key):
                continue
            try:
                state = self.get(bytes(key).decode())
            except DecodeError as e:
                log.error("cannot re-arm the timers of %r: %s", key, e)
                continue
            if state is not None and not state.status.terminal:
                states.append(state)
        return states
