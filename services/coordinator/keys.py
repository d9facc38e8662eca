"""Key formats of the coordinator's table: a workflow's entries and the intents' slots.

Every entry of a workflow is keyed by its id, so all of them go to the partition of the
workflow's input records (``store.entry_partition``).
"""

from __future__ import annotations

from services.common.partitioning import partition_for

TABLE_KEY_SEP = "\x1f"
"""Separates the workflow id from the part in the coordinator table's keys (ids and task
keys never contain it)."""


def table_entry_key(workflow_id: str, part: str | None = None) -> bytes:
    """The coordinator table's key (and its changelog record's key) of a workflow's
    header (``part`` None), its definition (``state.DEFINITION``) or one of its tasks
    (``part`` = the task key): the workflow id, then ``TABLE_KEY_SEP`` and the part, UTF-8."""
    return (workflow_id if part is None else f"{workflow_id}{TABLE_KEY_SEP}{part}").encode()


def table_entry_workflow(key: bytes) -> str:
    """The workflow id of a coordinator table key made by ``table_entry_key``."""
    return key.split(TABLE_KEY_SEP.encode(), 1)[0].decode()


INTENT_KEY_PREFIX = f"{TABLE_KEY_SEP}wal{TABLE_KEY_SEP}".encode()
"""The coordinator table's keys of intents (``services/coordinator/intents.py``) start
with it; no workflow id is empty, so no workflow's key does. Its bytes are a stored
format (the tables and changelogs of running deployments hold them): they stay as they
are, whatever the module is called."""


def intent_key(partition: int, chunk: int | None = None) -> bytes:
    """The coordinator table's key of a partition's intent head (``chunk`` None) or of
    its chunk number ``chunk``: ``INTENT_KEY_PREFIX``, the partition, then
    ``TABLE_KEY_SEP`` and the chunk."""
    tail = str(partition) if chunk is None else f"{partition}{TABLE_KEY_SEP}{chunk}"
    return INTENT_KEY_PREFIX + tail.encode()


def intent_partition(key: bytes) -> int | None:
    """The partition of an intent key (head or chunk); None for any other key."""
    if not key.startswith(INTENT_KEY_PREFIX):
        return None
    return int(key[len(INTENT_KEY_PREFIX):].split(TABLE_KEY_SEP.encode(), 1)[0])


def entry_partition(key: bytes, partitions: int) -> int:
    """The partition of a coordinator table key among ``partitions``: an intent's slot
    its own partition (modulo the count); a workflow's entry that of its workflow id by
    Kafka's default partitioner, the partition its input records use."""
    slot = intent_partition(key)
    if slot is not None:
        return slot % partitions
    return partition_for(table_entry_workflow(key).encode(), partitions)


DEFINITION = "@def"
"""The part under which a workflow's definition (spec, input, tenant) is stored, once; no
task key can be it (node ids start with a letter or ``_``)."""


DEFERRED = "@waiting"
"""The part under which inputs that arrived before their workflow's submission are kept
(``deferred``); no task key can be it. The name predates the module's and stays: it is
in every table already written."""
