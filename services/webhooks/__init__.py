"""The webhooks' deliverer: deliveries of run events decided from ``events``, kept in
PostgreSQL, posted signed and retried (docs/architecture.md §4r)."""
