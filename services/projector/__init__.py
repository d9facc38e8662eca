"""The projector on its own: keeps the PostgreSQL projection when coordinators run with
``HEADWATER_PROJECTION=off`` (to spread load over processes)."""
