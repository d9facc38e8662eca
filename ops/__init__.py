"""Operator tools: the ``headwater`` command line, the local stack, the benchmarks' and
tests' sandbox, and the audit readers of Kafka and PostgreSQL.

Task code never imports this package: ``import headwater`` pulls in the SDK and the pure
core only, while this one starts processes, reads topics and opens database connections.
It may import ``services`` (the settings, the snapshot format, the projector).
"""
