"""Example workflow: index the Python standard library and answer a query.

The workflow (``workflow.yaml``), one module per step:

1. :func:`~examples.stdlib_search.sources.list_modules` lists the public
   top-level stdlib modules that have Python source, without importing any.
2. :func:`~examples.stdlib_search.corpus.extract_docs` (mapped, one task per
   module) parses one module's source with :mod:`ast` and returns the first
   paragraph of its docstrings.
3. :func:`~examples.stdlib_search.ranking.search` (fan-in) builds a BM25 index
   over every passage and answers the query;
   :func:`~examples.stdlib_search.ranking.stats` runs beside it and
   summarises the corpus.
4. :func:`~examples.stdlib_search.ranking.report` combines both into the
   workflow's output.

Those modules hold the logic as plain functions free of any Headwater import;
:mod:`examples.stdlib_search.tasks` registers them as tasks.
"""
