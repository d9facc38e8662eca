"""Benchmarks of Headwater against raw Kafka on the local stack (``python -m load.bench``).

Every benchmark starts a private deployment (``ops.sandbox``), measures, and stops
it; ``B1`` measures plain aiokafka on the same broker so that every other figure can be
given as a ratio to it.
"""
