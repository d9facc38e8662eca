"""Workflows as Python code: ``@workflow`` and the ``WorkflowContext`` its function
gets (``decorator.py``, ``context.py``), run durably by replaying the function over its
journal (``activation.py``, ``driver.py``; the coordinator's side is the ``code`` node
kind, ``headwater/core/kinds/code``)."""

from headwater.workflows.context import Step, WorkflowContext
from headwater.workflows.decorator import WORKFLOWS, WorkflowInfo, workflow

__all__ = ["WORKFLOWS", "Step", "WorkflowContext", "WorkflowInfo", "workflow"]
