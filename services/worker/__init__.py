"""The worker: a consumer-group runtime that runs registered tasks for one queue.

Modules: ``app`` wires it; ``intake`` takes dispatches within the concurrency bound and
commits; ``lifecycle`` runs one attempt (started, heartbeats, outcome); ``attempt`` is
one attempt's state and what its ``TaskContext`` calls; ``runner`` turns whatever task
code does into an outcome; ``calls`` calls task functions and streams generators;
``channel`` sends one attempt's reports in order; ``progress`` coalesces progress;
``control`` follows the coordinator's cancels; ``outbox`` and ``reports`` produce.
"""
