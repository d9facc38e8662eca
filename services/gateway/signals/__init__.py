"""A signal's fate: what the gateway accepted (``receipts``), and
``GET /v1/workflows/{id}/signals/{signal_id}`` (``fate``, ``api``). Sending one is
``control``'s."""
