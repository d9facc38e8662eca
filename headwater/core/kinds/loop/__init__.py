"""The ``loop`` node kind: a bounded agent loop. A decide task picks, step by step, the
next tool to call from the node's ``tools``, until it finishes or a bound is reached.

Step k is two tasks of the node: index ``2k`` runs the decide task (the node's own task,
queue, retry and timeout) with ``{"input", "transcript", "step", "tools", "spent"}``;
index ``2k+1`` runs the tool it picked, as that tool's task (its own queue, retry and
timeout: ``WorkflowState.work``), with the input the decision gave it. A decision is
``{"tool": name, "input"?: {...}, "spend"?: n}`` or ``{"finish": output, "spend"?: n}``;
anything else (a tool not in ``tools``, both keys or neither, any other key, not an
object, a tool input that is not an object (the tool's keyword arguments: null or left
out is none), a spend that is not a finite number of at least 0) fails the decide
attempt with ``LoopDecisionError`` instead of being recorded as its success, and it is
retried like any failure. A valid one is recorded as ``LoopStepDecided``: ``finish``
ends the node with its output; a tool is dispatched. When the tool succeeds its call
joins the transcript (``evolve``), and then, if that was step ``max_steps - 1`` or the
decisions' spending reached ``budget``, the loop is exhausted: with ``on_exhausted:
fail`` the node fails naming the bound, with ``finish`` it succeeds with
``{"finished": false, "transcript": [...]}``; otherwise the next decide is dispatched.
A decide or tool task that fails for good fails the node.

Every step is history (the dispatches, their outcomes, ``LoopStepDecided``), so a crash
resumes the loop at the step it was in and a replay gives the same transcript.
"""
