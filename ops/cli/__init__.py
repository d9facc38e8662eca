"""The ``headwater`` command line."""

from ops.cli.app import app, main

__all__ = ["app", "main"]
