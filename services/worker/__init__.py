"""The worker: a consumer-group runtime that runs registered tasks for one queue."""
