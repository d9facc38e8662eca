"""The ``headwater`` command line."""

from headwater.cli.app import app, main

__all__ = ["app", "main"]
