"""The pure decision core: specs and validation, references, graph walks, retry policy,
events, workflow state and ``evolve``, the state machine, fencing, idempotency and id
formats.

Nothing here does I/O, reads a clock or draws randomness: time comes from the input
records and retry jitter from the dispatch id, so the same inputs always give the same
decisions and replaying a history rebuilds the same state. ``test_core_boundary``
enforces the imports; see docs/architecture.md for where a new node kind goes.
"""
