"""The pure decision core: specs and validation (``spec``, ``spec.fields``), references,
graph walks, retry policy, events, status enums, workflow state, ``evolve``, the state
machine (the ``machine`` package), the node kinds (the ``kinds`` package, one unit each,
registered in ``registry``), fencing, idempotency and id formats. Importing this package
imports ``kinds``, which registers every kind before any core module is used.

Nothing here does I/O, reads a clock or draws randomness: time comes from the input
records and retry jitter from the dispatch id, so the same inputs always give the same
decisions and replaying a history rebuilds the same state. ``test_core_boundary``
enforces the imports; see docs/architecture.md for where a new node kind goes.
"""

from headwater.core import kinds as kinds  # importing it registers every node kind
