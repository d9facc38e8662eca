"""Which partition a key goes to: Kafka's default partitioner, in one place.

Input records are keyed by workflow id and use the producer's default partitioner
(murmur2 of the key, the positive 32 bits, modulo the partition count: Kafka's
``BuiltInPartitioner.partitionForKey``); the coordinator's table entries and the audit
tools must agree with it.
"""

from __future__ import annotations

from functools import lru_cache

from aiokafka.partitioner import murmur2

HASHES_KEPT = 1 << 16
"""Keys whose hash is kept. aiokafka's murmur2 is pure Python (about 4 µs for a
workflow id), and the coordinator asks for the partition of every table entry it reads
and writes (several per input, all of the workflows in flight): under B2c's code chains
it was 8 % of the coordinator's time."""


def partition_for(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives ``key`` among ``partitions``.

    Args:
        key: the record key's bytes (a workflow id, UTF-8).
        partitions: the topic's partition count, > 0.
    """
    return _hash(key) % partitions


@lru_cache(maxsize=HASHES_KEPT)
def _hash(key: bytes) -> int:
    hashed: int = murmur2(key)
    return hashed & 0x7FFFFFFF
