"""Registered workflow definitions: their routes, the registry's tables, and the
projector that rebuilds those tables from the ``definitions`` topic."""
