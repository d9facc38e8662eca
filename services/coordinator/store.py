"""The workflow table: a faust table (backed by a compacted changelog topic) holding,
per workflow, a small header, the definition once, and one entry per task — plus an
in-memory cache of decoded states.

Writing one event's effect touches the header and the changed tasks only, so the bytes
written do not grow with the workflow's size. Every entry of a workflow goes to the
changelog partition of the workflow id (``keys.entry_partition``), the partition its
input records use, so recovery hands a workflow's entries to the process that owns it.
This process is the only writer of its partitions' workflows (docs/architecture.md,
invariant 2), so the cache is exact until a rebalance, when it is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any, Protocol

from headwater.core.state import WorkflowState
from headwater.errors import DecodeError
from services.coordinator import changelog
from services.coordinator.faust_seam.app import read_entry, read_headers
from services.coordinator.keys import DEFINITION, table_entry_key
from services.coordinator.layout import (
    dump_definition,
    dump_header,
    dump_task,
    header_applied,
    header_ended,
    header_keeps_transcripts,
    load_split,
    loop_tool_keys,
)

log = logging.getLogger(__name__)


class Store(Protocol):
    """The workflow table, as the batch applier uses it (``TableStore``)."""

    def get(self, workflow_id: str) -> WorkflowState | None:
        """The workflow's state, or None."""

    def load(self, workflow_id: str) -> WorkflowState | None:
        """The workflow's state as stored, ignoring any cache."""

    def applied(self, workflow_id: str) -> dict[str, int]:
        """Input topic -> offset of the last record applied to the workflow."""

    def entries(self, state: WorkflowState, parts: set[str],
                applied: dict[str, int]) -> list[tuple[bytes, bytes | None]]:
        """The table entries of ``state``'s changed ``parts`` (None: delete it) and its
        header with the ``applied`` offsets (and cache both)."""

    def write(self, entries: list[tuple[bytes, bytes | None]]) -> list[Awaitable[Any]]:
        """Write entries in order (None deletes); futures resolve once durable."""

    def get_entry(self, key: bytes) -> bytes | None:
        """A raw entry, or None."""

    def partition(self, workflow_id: str) -> int:
        """The partition of the workflow's entries."""

    def forget(self, workflow_id: str) -> None:
        """Drop any cached copy."""

    def clear_cache(self) -> None:
        """Drop every cached copy."""


def _entry(state: WorkflowState, part: str) -> bytes | None:
    """The entry of one changed part: the definition, a task, or None for a task that
    left the state (a schedule's ended run: the entry is deleted)."""
    if part == DEFINITION:
        return dump_definition(state)
    return dump_task(state, part) if part in state.tasks else None


class TableStore:
    """``Store`` over a ``faust_seam.WorkflowTable`` with raw-bytes keys and values."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self._cache: dict[str, WorkflowState] = {}
        self._applied: dict[str, dict[str, int]] = {}
        self._transcripts_moving: set[str] = set()
        """Workflows whose header, as read, holds a loop's transcript
        (``layout.header_keeps_transcripts``)."""

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
        header = self.table.get(table_entry_key(workflow_id))
        if header is None:
            return None
        definition = self.table.get(table_entry_key(workflow_id, DEFINITION))
        state = load_split(header, definition,
                           lambda key: self.table.get(table_entry_key(workflow_id, key)))
        if header_keeps_transcripts(header):
            self._transcripts_moving.add(workflow_id)
        return state

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
            header = self.table.get(table_entry_key(workflow_id))
            applied = header_applied(header) if header is not None else {}
        return dict(applied)

    def entries(self, state: WorkflowState, parts: set[str],
                applied: dict[str, int]) -> list[tuple[bytes, bytes | None]]:
        """The table entries of ``state``'s changed ``parts`` (task keys, ``DEFINITION``;
        ``writeset.touched_parts``; None deletes the entry of a task no longer in the
        state), then its header with the ``applied`` offsets (to be written in this
        order); keep ``state`` and ``applied`` as the cached copies."""
        wid = state.workflow_id
        if wid in self._transcripts_moving:  # the header stops holding the transcript:
            parts = parts | loop_tool_keys(state)  # each call goes to its tool's entry
            self._transcripts_moving.discard(wid)
        out = [(table_entry_key(wid, part), _entry(state, part)) for part in sorted(parts)]
        out.append((table_entry_key(wid), dump_header(state, applied)))
        if state.status.terminal:
            self.forget(wid)  # no further event changes it
        else:
            self._cache[wid] = state
            self._applied[wid] = dict(applied)
        return out

    def write(self, entries: list[tuple[bytes, bytes | None]]) -> list[Awaitable[Any]]:
        """Write entries (None deletes) in order, to the local store and the changelog.

        Returns:
            Futures that resolve once the broker has every changelog record. Await them
            before the inputs are committed (``changelog.write``).
        """
        return [changelog.write(self.table, entries)] if entries else []

    def partition(self, workflow_id: str) -> int:
        """The partition of the workflow's entries and input records."""
        partition: int | None = self.table.partition_for_key(table_entry_key(workflow_id))
        assert partition is not None
        return partition

    def get_entry(self, key: bytes) -> bytes | None:
        """A raw entry of the local store."""
        return read_entry(self.table, key)

    def forget(self, workflow_id: str) -> None:
        """Drop the cached copies."""
        self._cache.pop(workflow_id, None)
        self._applied.pop(workflow_id, None)

    def clear_cache(self) -> None:
        """Drop every cached copy (on rebalance)."""
        self._cache.clear()
        self._applied.clear()

    def scan(self) -> list[WorkflowState]:
        """Decode every workflow held locally that has not ended (for re-arming timers).
        An ended one is passed over on its header alone: neither decoded nor cached, so
        the cost of a restart's scan and the memory it leaves grow with the live
        workflows, not with every one that ever finished."""
        states = []
        for key, header in read_headers(self.table):
            if header_ended(header):
                continue
            try:
                state = self.get(key.decode())
            except DecodeError as e:
                log.error("cannot re-arm the timers of %r: %s", key, e)
                continue
            if state is not None and not state.status.terminal:
                states.append(state)
        return states
