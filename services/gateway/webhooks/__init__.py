"""Webhooks: signed deliveries of run events (``api.py``, ``define.py``, ``views.py``)."""
