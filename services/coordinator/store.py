"""The workflow table: a faust table (backed by a compacted changelog topic) holding,
per workflow, a small header, the definition once, and one entry per task — plus an
in-memory cache of decoded states.

Writing one event's effect touches the header and the changed tasks only, so the bytes
written do not grow with the workflow's size. Every entry of a workflow goes to the
changelog partition of the workflow id (``keys.entry_partition``), the partition its
input records use, so recovery hands a workflow's entries to the process that owns it.
This process is the only writer of its partitions' workflows (docs/architecture.md,
invariant 2), so the cache is exact until a rebalance, when it is dropped.

A batch's states are known before its entries are written: the batch first waits for
its intent (``batch``), and the timer loop's scan (``scan``, after a restart or a
rebalance) may decode the workflows meanwhile, from the table as it was before the
batch. So each state a batch computed (``entries``) is what ``get`` answers until those
entries are written (``write``), whatever the cache holds or was cleared of; only then
may an ended one leave the store's memory. (The scan once cached a workflow that had
just failed, at the seq before the batch that failed it, and the next batch published
that batch's seqs again from it, with other bodies.)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Protocol

from headwater.core.state import WorkflowState
from headwater.errors import DecodeError
from services.coordinator import changelog
from services.coordinator.faust_seam.app import read_entry, read_headers
from services.coordinator.keys import DEFINITION, TABLE_KEY_SEP, table_entry_key
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

SEP = TABLE_KEY_SEP.encode()


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


@dataclass(frozen=True)
class _Unwritten:
    """A state a batch computed (``TableStore.entries``), not written yet: its applied
    offsets and its header entry (which tells its write from any other)."""

    state: WorkflowState
    applied: dict[str, int]
    header: bytes


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
        self._unwritten: dict[str, _Unwritten] = {}
        """Workflow id -> the state a batch computed, until its entries are written."""
        self._transcripts_moving: set[str] = set()
        """Workflows whose header, as read, holds a loop's transcript
        (``layout.header_keeps_transcripts``)."""

    def get(self, workflow_id: str) -> WorkflowState | None:
        """The state of a batch whose entries are not written yet, else the cached
        state, else the table's entries decoded, else None."""
        unwritten = self._unwritten.get(workflow_id)
        if unwritten is not None:
            return unwritten.state
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
        unwritten = self._unwritten.get(workflow_id)
        applied = (unwritten.applied if unwritten is not None
                   else self._applied.get(workflow_id))
        if applied is None:
            header = self.table.get(table_entry_key(workflow_id))
            applied = header_applied(header) if header is not None else {}
        return dict(applied)

    def entries(self, state: WorkflowState, parts: set[str],
                applied: dict[str, int]) -> list[tuple[bytes, bytes | None]]:
        """The table entries of ``state``'s changed ``parts`` (task keys, ``DEFINITION``;
        ``writeset.touched_parts``; None deletes the entry of a task no longer in the
        state), then its header with the ``applied`` offsets (to be written in this
        order); ``get`` and ``applied`` answer with ``state`` and ``applied`` until
        they are written (``write``), and then from the cache, unless the workflow has
        ended (no further event changes it: it is read from the table if ever asked)."""
        wid = state.workflow_id
        if wid in self._transcripts_moving:  # the header stops holding the transcript:
            parts = parts | loop_tool_keys(state)  # each call goes to its tool's entry
            self._transcripts_moving.discard(wid)
        out = [(table_entry_key(wid, part), _entry(state, part)) for part in sorted(parts)]
        header = dump_header(state, applied)
        out.append((table_entry_key(wid), header))
        self._unwritten[wid] = _Unwritten(state, dict(applied), header)
        if state.status.terminal:
            self._cache.pop(wid, None)
            self._applied.pop(wid, None)
        else:
            self._cache[wid] = state
            self._applied[wid] = dict(applied)
        return out

    def write(self, entries: list[tuple[bytes, bytes | None]]) -> list[Awaitable[Any]]:
        """Write entries (None deletes) in order, to the local store and the changelog.

        The local store holds them on return: the states of ``entries`` computed
        for these headers leave ``_unwritten`` (an intent carried out again writes
        other headers, and leaves a batch computed since in place).

        Returns:
            Futures that resolve once the broker has every changelog record. Await them
            before the inputs are committed (``changelog.write``).
        """
        if not entries:
            return []
        written = changelog.write(self.table, entries)
        if self._unwritten:
            for key, value in entries:
                if SEP in key:  # not a header
                    continue
                wid = key.decode()
                unwritten = self._unwritten.get(wid)
                if unwritten is not None and unwritten.header == value:
                    del self._unwritten[wid]
        return [written]

    def partition(self, workflow_id: str) -> int:
        """The partition of the workflow's entries and input records."""
        partition: int | None = self.table.partition_for_key(table_entry_key(workflow_id))
        assert partition is not None
        return partition

    def get_entry(self, key: bytes) -> bytes | None:
        """A raw entry of the local store."""
        return read_entry(self.table, key)

    def forget(self, workflow_id: str) -> None:
        """Drop the cached copies, and the state a batch computed and will not write
        (it failed, or it drops what it did to the workflow)."""
        self._cache.pop(workflow_id, None)
        self._applied.pop(workflow_id, None)
        self._unwritten.pop(workflow_id, None)

    def clear_cache(self) -> None:
        """Drop every cached copy (on rebalance). The states of a batch in flight stay
        until its entries are written or it fails (``forget``): a read meanwhile would
        decode the table from before the batch."""
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
