"""Task logs: the lines task attempts logged and printed, read from the projection's
``task_logs`` (``reads``), paged or followed as Server-Sent Events (``follow``), at
``/v1/workflows/{id}/tasks/{node}/{index}/logs`` and ``/v1/workflows/{id}/logs``
(``api``)."""
