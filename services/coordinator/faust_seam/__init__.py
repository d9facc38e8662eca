"""The coordinator's seam with faust-streaming 0.15 (mode-streaming 0.7) and aiokafka 0.14:
the only package of the coordinator that imports them, and every workaround of theirs:
``app`` (the app, its worker and table, the process's membership in the group),
``inputs`` (the agent that reads the input topics in batches, and their offsets),
``take`` (its batches), ``rocks`` and ``partition_db`` (the table on RocksDB,
``HEADWATER_TABLE_STORE=rocksdb://``),
``restore`` (the memory store reading its new partitions' changelog itself).

The rest of the coordinator wires an app, reads and writes a table, and applies batches
of ``records.InputRecord``. Each workaround names the behaviour it answers; the tests
that show it is still needed (``tests/unit/services/coordinator/
test_coordinator_faust_seam.py``; with a broker, ``tests/e2e/test_faust_seam.py``) fail
when the library stops behaving so, and then the workaround can go:

1. Agent concurrency 1 (``add_input_agent``): above 1, faust commits past an event still
   in flight (faust-streaming issue #606: ``Consumer._new_offset`` takes one unacked
   offset at the head of the acked ones for a gap, and commits over it).
2. The batch acknowledged in the take's ``finally`` (``consume_batches``): faust's
   ``take_events``, and ``take.batches`` after it, ack a batch when the generator moves
   on or is closed, also after the loop body raised
   or was cancelled. So a batch that failed half-way ends the process before that
   ``finally`` runs, a cancelled one is finished first (``finish``), and ``aclose``
   acknowledges a finished batch at once rather than when the generator is collected.
3. The SIGTERM override (``CoordinatorWorker``): mode's ``Worker`` ignores a second signal.
4. Start offsets (``start_offsets``; also faust's record of what was committed, which a
   failed commit corrupts): aiokafka's ``seek_to_committed`` and faust's
   ``perform_seek`` take a committed offset of 0 for none and do not seek.
5. Offset continuity (``InputWatch``): faust can skip input records around a rebalance
   (faust-streaming issues #216 and #236, closed upstream; still seen in the fault suite).
   The checks are ``continuity.OffsetContinuity``'s; the hookup is here. No unit test
   can show the skip (it takes a rebalance racing a full stream buffer); the fault suite
   (``tests/faults``) runs the hookup.
6. Leaving the group (``leave_group``): aiokafka has no call that only leaves (``stop``
   and ``unsubscribe`` leave as part of closing or dropping the subscription); a process
   about to exec or exit runs its ``GroupCoordinator``'s private ``_maybe_leave_group``.
7. The root logger level (``quiet_logging``): faust's worker sets the root logger to
   DEBUG for its spinner and filters in its handler.
8. Table writes (``changelog.write``, ``read_entry``, ``WorkflowTable.partition_for_key``):
   ``table[key] = value`` drops the changelog record's future and takes its partition
   from the current event; entries go to ``table.data`` and, past faust's producer
   buffer, to the app's producer (see ``changelog``).
9. The recovery hook (``WorkflowTable.on_recovery_completed``): faust's ``on_recover``
   callbacks are called with no partitions.
10. The RocksDB store (``rocks.PartitionedRocksStore``): faust's routes writes by the
   current event (none here) and reads outside one from every open DB, drops a revoked
   partition's DB without closing it (RocksDB's lock stays until it is collected), gives
   each DB a 2 GiB block cache, and keeps a DB whatever happened to the changelog since;
   rocksdict opens a DB it finds on disk with the column family options of its OPTIONS
   file and a block cache of its own (``partition_db.BoundedOptions.open``).
11. The restore of the memory store (``restore.RestoringMemoryStore``): faust restores a
   table through the app's consumer a record at a time, each record an event waited for
   in two tasks (about 9,000 records a second); the store reads its newly assigned
   partitions' changelog with a plain consumer and gives faust the offset it read to.
12. Offsets requests (``app.offsets_on_own_connection``): aiokafka sends ListOffsets on
   the connection of its fetches, where each waits behind a fetch the broker holds up to
   faust's fixed 1.5 s; the app's consumer sends them through a plain consumer instead.
13. The batch take (``take.batches``): faust's ``take_events`` wakes every window whether
   or not a record came (500 times a second at the 2 ms window, about 7 % of a core for
   an idle coordinator); the take waits for a batch's first record without a timeout.
"""
