"""Example: the hybrid example's research assistant written as Python code.

:mod:`~examples.research.flows` holds two ``@workflow`` functions over the hybrid
example's tasks (:mod:`examples.hybrid.tasks`): ``research`` classifies the installed
packages, calls ``research.search`` (a child workflow) for the grounding passages,
drafts the answer in a bounded loop of decide and a tool, waits for the ``approval``
signal, holds an approved answer (a day by default) and publishes it.
``python -m examples.research`` (:mod:`~examples.research.runner`) runs it on the local
stack, printing what :mod:`~examples.research.progress` reads of its events.
"""
