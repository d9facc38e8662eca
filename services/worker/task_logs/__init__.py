"""What task code logs and prints, per attempt: captured (``capture``), bounded and sent
in batches to the ``logs`` topic (``attempt_log``)."""
