"""Benchmarks of Headwater against raw Kafka on the local stack (``python -m load.bench``).

Every benchmark starts a private deployment (``ops.sandbox``), measures, and stops
it; ``B1`` measures plain aiokafka on the same broker so that every other figure can be
given as a ratio to it.

The fault-injection suite (``faultsuite``) and the fuzzer (``fuzzer``) live beside this
package and borrow its stack plumbing (``kafka_io``: topic tails and readers;
``deploy``: idleness, the no-op task module); nothing here imports them.
"""
