"""The ``workflow`` node kind: a child workflow, one per attempt (per item with ``over``).

Each attempt of the node is a task attempt (``TaskDispatched(task="workflow")``) that no
worker runs: the coordinator submits the child instead (``ChildSubmitted``, id
``ids.child_id(parent, node, index, attempt)``, so a parent that is retried, replayed or
redelivered never starts a second child for the same attempt), and the child's
coordinator reports back as a worker would: ``TaskStarted(worker=<child id>)`` when the
child is accepted, ``TaskSucceeded(output)`` or ``TaskFailed("ChildWorkflowFailed",
retryable)`` / ``TaskFailed("ChildWorkflowCancelled", not retryable)`` when it ends. So a
child's deadline (the node's ``timeout``), its retries (each one a new child) and its
cancellation (the coordinator cancels the child of a cancelled or failed attempt) are a
task's, without a lease (the child reports no heartbeats).

Without ``over`` the node runs like a task: the child's output is the node's output, its
final failure the node's failure. With ``over`` it runs like a map of children, in input
order, at most ``max_concurrency`` at once (the durable ``call_parallel``).
"""
