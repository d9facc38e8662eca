"""Payloads by reference at the gateway: a submission's input and a signal's fields
offloaded before they go on a record (``payloads``), references shown with their
``href`` (``hrefs``), and ``GET /v1/workflows/{id}/blobs/{digest}`` (``api``)."""
