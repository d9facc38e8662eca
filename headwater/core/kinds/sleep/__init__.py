"""The ``sleep`` node kind: wait for a duration, or until an instant, durably.

It starts by working out when to wake: ``duration`` seconds after its start, or the
instant ``until`` names (an RFC 3339 text, written in the spec or given by a ``${...}``
reference, resolved now). It records ``SleepStarted(wake_at_ms)``, which arms the timer
``sleep:<node>`` in ``state.timers`` (the coordinator arms it like any other, so the
sleep survives every restart); when that fires the node succeeds, its output null. An
instant not after its start succeeds at once; an ``until`` reference that cannot be
resolved, or that gives no RFC 3339 instant, fails the node (routed as any failure).
"""
