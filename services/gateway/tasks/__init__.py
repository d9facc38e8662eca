"""A run's tasks, one at a time and a node's a page at a time, with each attempt's error
type and traceback: ``GET /v1/workflows/{id}/tasks/{node}/{index}`` and
``GET /v1/workflows/{id}/nodes/{node}/tasks`` (``api.py``), read from the projection's
``tasks`` rows and the ``events`` log (``reads.py``) and shaped in ``views.py``, which
also gives a failed run's ``failure`` to its document."""
