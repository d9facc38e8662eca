"""``headwater deploy MODULE.py`` and ``headwater rollback NAME``: ship a module's tasks
and workflows to a cluster, and make an earlier definition version current again
(docs/deploying.md, "Deploying a module").

``deploy`` writes the image's build context and the kustomize overlay (``ops.deploy``)
into ``--out`` and registers the module's definitions through the gateway as new
versions; ``--dry-run`` prints the plan (the files, the pools, the definitions and the
version each would be, asking the gateway when it answers) and writes and registers
nothing. ``--no-register`` writes the files only. Exit status: 0 done, 2 a module that
cannot be imported or deployed, a refused definition or an unreachable gateway.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from headwater import errors
from ops.cli.common import GATEWAY, console, errors_console, fail
from ops.cli.workflows import client, gateway_errors

if TYPE_CHECKING:
    from headwater.client import Client
    from ops.deploy.plan import Plan


def deploy(
    module: Annotated[Path, typer.Argument(help="the module's .py file", exists=True,
                                           dir_okay=False)],
    out: Annotated[Path | None, typer.Option(
        help="output directory (default: deploy/<module>)")] = None,
    requirements: Annotated[Path | None, typer.Option(
        help="requirements file for the image (default: requirements.txt beside the "
             "module, if any)")] = None,
    base_image: Annotated[str, typer.Option(
        help="the image to build FROM (the project's image)")] = "headwater:local",
    image: Annotated[str | None, typer.Option(
        help="the image's name (default: the deploy's name)")] = None,
    tag: Annotated[str | None, typer.Option(
        help="the image's tag (default: a digest of the build context)")] = None,
    k8s_base: Annotated[Path | None, typer.Option(
        help="the kustomization the overlay is over (default: infra/k8s/base)")] = None,
    autoscaler: Annotated[str, typer.Option(help="keda or hpa")] = "keda",
    namespace: Annotated[str | None, typer.Option(help="every object's namespace")] = None,
    partitions: Annotated[int, typer.Option(
        min=1, help="the topics' partitions (HEADWATER_PARTITIONS): an autoscaler's "
                    "default maximum")] = 8,
    code_version: Annotated[str | None, typer.Option(
        help="the workers' HEADWATER_CODE_VERSION (default: each workflow's source "
             "digest)")] = None,
    name: Annotated[str | None, typer.Option(
        help="the deploy's name, prefix of its objects' names (default: the module's)",
    )] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="print the plan; write and register nothing")] = False,
    register: Annotated[bool, typer.Option(
        help="register the definitions through the gateway")] = True,
    gateway: str = GATEWAY,
) -> None:
    """Build what a cluster needs from MODULE: an image build context, kustomize
    overlays with a Deployment per queue, and its definitions as new versions."""
    from ops.deploy import plan as plans
    from ops.deploy.discover import DiscoveryError
    from ops.deploy.register import register as put

    opts = plans.Options(module=module, out=out, requirements=requirements,
                         base_image=base_image, image=image, tag=tag,
                         k8s_base=k8s_base or plans.DEFAULT_K8S_BASE,
                         autoscaler=autoscaler, namespace=namespace, partitions=partitions,
                         code_version=code_version, name=name)
    try:
        plan = plans.make(opts)
    except (DiscoveryError, plans.PlanError) as e:
        fail(str(e))
    _print_plan(plan, dry_run)
    hw = client(gateway) if register else None
    if dry_run:
        _print_intents(plan, hw, gateway)
        return
    for path in plans.write(plan):
        console.print(f"  wrote {escape(str(path))}")
    if hw is None:
        return
    for d in plan.definitions:
        with gateway_errors(gateway, refused=f"definition {d.name}"):
            console.print(f"  registered {escape(put(hw, d).describe())}")


def _print_intents(plan: Plan, hw: Client | None, gateway: str) -> None:
    """Each definition with the version registering it would make (unknown when the
    gateway is not asked or does not answer)."""
    from ops.deploy.register import Intent, intent

    for d in plan.definitions:
        try:
            said: Intent = intent(hw, d)
        except (errors.GatewayUnreachable, errors.HeadwaterHTTPError) as e:
            errors_console.print(f"[yellow]gateway {escape(gateway)}: {escape(str(e))}"
                                 "[/]: versions unknown")
            hw, said = None, intent(None, d)
        console.print(f"  would register {escape(said.describe())}")


def _print_plan(plan: Plan, dry_run: bool) -> None:
    found = plan.found
    console.print(f"[bold]{escape(found.module)}[/] ({len(found.tasks)} tasks, "
                  f"{len(found.definitions)} definitions) -> {escape(str(plan.out))}"
                  f"{' (dry run: nothing written or registered)' if dry_run else ''}")
    console.print(f"  image {escape(plan.image)}:{plan.tag}")
    for p in plan.pools:
        scale = (f"{p.min_replicas} replicas" if p.fixed
                 else f"{p.min_replicas}-{p.max_replicas} replicas")
        gpu = f", {p.gpu} gpu" if p.gpu else ""
        console.print(f"  queue {escape(p.queue)}: {scale}, cpu {p.cpu}, memory "
                      f"{p.memory}{gpu}; tasks {escape(', '.join(p.tasks))}")
    if dry_run:
        for rel in sorted(plan.files):
            console.print(f"  would write {escape(str(plan.out / rel))}")


def rollback(
    name: Annotated[str, typer.Argument(help="the definition's name")],
    to: Annotated[int | None, typer.Option(
        min=1, help="the version to make current (default: the one before the current)",
    )] = None,
    gateway: str = GATEWAY,
) -> None:
    """Make an earlier version of a definition current: new runs use it, runs already
    started keep theirs."""
    with gateway_errors(gateway, refused=f"rollback of {name}"):
        done = client(gateway).definitions.rollback(name, to)
    raw = done.raw
    if raw.get("changed"):
        console.print(f"{escape(name)}: version {done.version} is current (was "
                      f"{raw.get('previous')}; latest {raw.get('latest')})")
    else:
        console.print(f"{escape(name)}: version {done.version} was current already")
