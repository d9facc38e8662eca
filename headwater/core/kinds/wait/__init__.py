"""The ``wait`` node kind: wait for a named signal, up to the node's timeout.

It starts by recording ``WaitStarted`` (with ``over``: ``MapExpanded``, then one
``WaitStarted`` per item, all at once), which arms its timeout timer
(``wait:<task key>``) when it has one, and takes a signal kept for it if one came
before it started (``SignalConsumed``). A signal that comes while it waits is recorded
(``SignalSent``) and taken at once; one that comes before it starts is recorded and kept
(``WorkflowState.signals``), at most one per wait (item): a further one for the same
wait (item) is recorded as ``SignalDiscarded`` at once, so that a sender cannot pile up
signals no wait will take; one that comes after its wait ended, or for a node that
will never wait (skipped, cancelled), is recorded as ``SignalDiscarded``; one whose
``signal_id`` was recorded already changes nothing. The signal's fields are the node's
output (an item's result). When the timeout fires first, the node (the item) fails with
``TimeoutError: no signal <name> within <t> s``, which routes as any failure
(``on_error``, ``continue_on_error``; an item of a ``continue_on_error`` wait keeps the
error as its result and the others go on). Exactly one outcome per wait: what comes
second is discarded (a signal) or changes nothing (a timer already dropped).

In the state, a waiting node (or item) holds a ``wait:<task key>`` timer in
``state.timers`` when it has a timeout (``TimerState`` with attempt 0). Signals taken
before their wait started are kept in ``state.signals`` by ``signals.signal_key``; every
recorded ``signal_id`` is kept in ``state.signal_ids``. A wait with ``over`` keeps one
result per item, as a map does: an item is waiting while its result is None (a signal's
fields are always an object).
"""
