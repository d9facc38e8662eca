"""Control of a running workflow: cancels and signals, produced to the ``control``
topic, and their routes."""
