"""``headwater deploy``: what a cluster needs to run a module's ``@task``s and
``@workflow``s, from the module itself (docs/deploying.md, "Deploying a module").

``discover`` imports the module in a process of its own and lists what it registers;
``pools`` turns the decorators' deploy hints into one worker pool per queue; ``image``
writes the image's build context; ``manifests`` the kustomize overlay over the
project's base manifests; ``register`` the definitions a deploy registers through the
gateway; ``plan`` ties them together (what a ``--dry-run`` prints, what a deploy writes
and registers).
"""
