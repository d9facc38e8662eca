"""Testing workflows without a broker: ``Environment`` runs a ``@workflow`` (or a spec)
in-process with the real pure core and your real task functions, time skipped for
sleeps, timeouts and backoffs, signals sent by the test (``environment.py``)."""

from headwater.testing.environment import Environment

__all__ = ["Environment"]
