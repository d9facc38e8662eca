"""Which partition a key goes to: Kafka's default partitioner, in one place.

Input records are keyed by workflow id and use the producer's default partitioner
(murmur2 of the key, the positive 32 bits, modulo the partition count: Kafka's
``BuiltInPartitioner.partitionForKey``); the coordinator's table entries and the audit
tools must agree with it.
"""

from __future__ import annotations

from aiokafka.partitioner import murmur2


def partition_for(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives ``key`` among ``partitions``.

    Args:
        key: the record key's bytes (a workflow id, UTF-8).
        partitions: the topic's partition count, > 0.
    """
    hashed: int = murmur2(key)
    return (hashed & 0x7FFFFFFF) % partitions
