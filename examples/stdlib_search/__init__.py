"""Example workflow: index the Python standard library and answer a query."""
