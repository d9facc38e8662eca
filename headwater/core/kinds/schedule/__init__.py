"""The ``schedule`` node kind: run a workflow at each fire time of a cron expression.

A schedule is a workflow of this one node (``cron.py``). It starts by arming its
first fire time, the first after ``start_at`` (default: the workflow's acceptance):
``ScheduleArmed(fire_ms)``, which puts the timer ``schedule:<node>`` in ``state.timers``
(the coordinator arms it like a sleep's). When the timer fires at ``t`` (the
coordinator's time), the fire times due are those from the armed one to ``t``, at most
the latest ``catchup_max + 1`` (``cron.due_fire_times``). A due time later than
``misfire_grace`` at ``t`` is *missed*; the others are on time and run. Of the missed
ones, ``catchup: none`` runs none, ``latest`` the latest when no due time is on time,
``all`` the latest ``catchup_max``. Each due time records ``ScheduleFired(fire_ms,
outcome)``, oldest first: ``skipped_missed``, ``skipped_paused`` (while paused),
``skipped_overlap`` (``overlap: skip`` with a run still running), or ``started``; then
the next fire time after ``t`` is armed.

A started fire is an attempt of the node, as a ``workflow`` node's child is: task index
k (the k-th run started, from 0: the node's ``next_index``), attempt 1, never retried;
``TaskDispatched(task="workflow")`` becomes the child's submission with the id
``<workflow id>:<node>.<k>:1`` (``ids.child_id``), which is in ``ScheduleFired.run_id``.
The history fixes k for each fire time, so whatever crashes, a fire time runs once.
``overlap: cancel_previous`` cancels the running runs first (``TaskCancelled``, which
cancels the child); ``allow`` starts beside them. A run's end changes nothing of the
schedule: the node never finishes, and the workflow runs until it is cancelled.

Cancelling the schedule workflow (deleting the schedule) ends it, cancelling its
attempts in its history as any workflow's end does; but those cancels do not cascade to
the runs (``cancels_run``): a run started goes on to its own end.

Signals ``pause`` and ``resume`` (no fields) record ``SchedulePaused`` and
``ScheduleResumed``; a resume arms the next fire time after now (paused time is not
caught up). A repeated ``signal_id`` changes nothing; a pause while paused (a resume
while running) records nothing.
"""
