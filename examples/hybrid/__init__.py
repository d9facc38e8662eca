"""Example workflow: a hybrid of fixed steps and a bounded agent loop, over the Debian
packages installed on this machine (``/var/lib/dpkg/status``).

The workflow (``workflow.yaml``), one module per concern:

1. ``inventory`` (:mod:`~examples.hybrid.packages`) reads the installed packages;
   ``classify`` (a map over batches of them, :mod:`~examples.hybrid.classify`) gives
   each a class from its archive section and name; ``profile`` folds them into the
   machine's profile.
2. ``retrieve`` (:mod:`~examples.hybrid.retrieval`) finds the grounding passages for
   the question with BM25 over the packages' descriptions.
3. ``research`` is a ``kind: loop``: its decide task picks ``search``, ``read`` or
   ``answer`` (:mod:`~examples.hybrid.tools`) each step, within ``max_steps``. The
   default decider is the best-scoring-tool policy (:mod:`~examples.hybrid.policy`);
   an OpenAI-compatible endpoint named by ``HEADWATER_EXAMPLE_MODEL_URL`` takes over
   when set, its tokens streamed (:mod:`~examples.hybrid.model`).
4. ``approval`` is a ``kind: wait`` for the ``approval`` signal (``approved``:
   boolean, ``note``: optional string).
5. ``publish`` runs ``when`` approved, ``shelve`` when not
   (:mod:`~examples.hybrid.publishing`); ``report`` joins the two branches.

:mod:`~examples.hybrid.tasks` registers the tasks (queue ``hybrid``);
``python -m examples.hybrid`` (:mod:`~examples.hybrid.runner`) runs it on the local
stack.
"""
