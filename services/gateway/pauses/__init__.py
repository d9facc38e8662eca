"""Pausing and resuming runs at the edge: one run (``POST /v1/workflows/{id}/pause``,
``/resume``) and every run of a definition (``POST /v1/definitions/{name}/pause``,
``/resume``). The gateway only produces ``PauseRequested`` and ``ResumeRequested`` on
``control``; the coordinator decides (``headwater/core/machine/pause.py``)."""
