"""Bulk operations: one action done to every run a filter matches, recorded with its
progress and counts (``headwater.operations``; routes in ``api``)."""
