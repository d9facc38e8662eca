"""A deploy's plan: the files it writes (the image's build context under ``image/``, the
kustomize overlay under ``k8s/``) and the definitions it registers, made from a module
before anything is written; ``write`` writes the files, ``--dry-run`` only prints.

The output directory (``deploy/<module>`` by default) is the deploy's own: ``write``
replaces its ``image/`` and ``k8s/`` directories whole, so a file the module no longer
has does not linger in the image.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ops.deploy import image as image_context
from ops.deploy import manifests
from ops.deploy.discover import Definition, Found, discover
from ops.deploy.pools import Pool, pools

REPO = Path(__file__).resolve().parents[2]
DEFAULT_K8S_BASE = REPO / "infra" / "k8s" / "base"
"""The project's base manifests."""
MANAGED = ("image", "k8s")
"""The output directory's parts a deploy writes (and replaces)."""


class PlanError(Exception):
    """Raised when a plan cannot be made: the message says what to give or fix."""


@dataclass(frozen=True)
class Options:
    """``headwater deploy``'s options.

    Attributes:
        module: the module's ``.py`` file.
        out: the output directory (None: ``deploy/<module>`` under the current one).
        requirements: a requirements file (None: ``requirements.txt`` beside the
            module, if there is one).
        base_image: the image to build from.
        image: the image's name (None: the deploy's name).
        tag: the image's tag (None: the build context's digest).
        k8s_base: the kustomization to lay the overlay over.
        autoscaler: ``keda`` or ``hpa``.
        namespace: the namespace of every object, or None.
        partitions: the topics' partitions (an autoscaler's default maximum).
        code_version: the workers' ``HEADWATER_CODE_VERSION``, or None.
        name: the deploy's name (prefix of its objects' names; None: the module's).
    """

    module: Path
    out: Path | None = None
    requirements: Path | None = None
    base_image: str = image_context.DEFAULT_BASE_IMAGE
    image: str | None = None
    tag: str | None = None
    k8s_base: Path = DEFAULT_K8S_BASE
    autoscaler: str = "keda"
    namespace: str | None = None
    partitions: int = 8
    code_version: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class Plan:
    """What a deploy writes and registers.

    Attributes:
        found: what the module registers.
        app: the deploy's name.
        out: the output directory.
        image: the image's name.
        tag: its tag.
        pools: one per queue.
        files: path under ``out`` -> content.
    """

    found: Found
    app: str
    out: Path
    image: str
    tag: str
    pools: list[Pool]
    files: dict[str, bytes] = field(repr=False)

    @property
    def definitions(self) -> tuple[Definition, ...]:
        """The definitions to register."""
        return self.found.definitions


def _requirements(opts: Options) -> Path | None:
    if opts.requirements is not None:
        if not opts.requirements.is_file():
            raise PlanError(f"--requirements {opts.requirements}: no such file")
        return opts.requirements
    beside = opts.module.resolve().parent / "requirements.txt"
    return beside if beside.is_file() else None


def make(opts: Options, found: Found | None = None) -> Plan:
    """The plan of a deploy (nothing written).

    Args:
        opts: the options.
        found: what the module registers, when already discovered (None: discover).

    Raises:
        PlanError: a missing file, a module that registers no task, an unknown
            autoscaler, base manifests without a worker.
        DiscoveryError: the module cannot be imported.
    """
    found = found or discover(opts.module, opts.code_version)
    if not found.tasks and not found.definitions:
        raise PlanError(f"{found.module} registers no @task, @workflow or DEFINITIONS: "
                        "nothing to deploy")
    app = manifests.dns_label(opts.name or found.module.replace(".", "-"), 40)
    out = opts.out or Path("deploy") / found.module
    the_pools = pools(((t.name, t.queue, t.hints) for t in found.tasks), opts.partitions)
    names = [manifests.object_name(app, p.queue) for p in the_pools]
    if len(set(names)) != len(names):
        raise PlanError(f"two queues of {found.module} have the same Kubernetes name "
                        f"({', '.join(sorted(names))}): rename one")
    files = {f"image/{k}": v for k, v in image_context.context(
        found.module, found.source, found.root, opts.base_image,
        _requirements(opts)).items()}
    tag = opts.tag or image_context.tag_of(files)
    image = opts.image or app
    try:
        k8s = manifests.overlay(manifests.Overlay(
            app=app, module=found.module, pools=the_pools, base=opts.k8s_base,
            out=out / "k8s", image=image, tag=tag, autoscaler=opts.autoscaler,
            namespace=opts.namespace, code_version=opts.code_version))
    except (manifests.ManifestError, ValueError) as e:
        raise PlanError(str(e)) from e
    files |= {f"k8s/{k}": v.encode() for k, v in k8s.items()}
    return Plan(found, app, out, image, tag, the_pools, files)


def write(plan: Plan) -> list[Path]:
    """Write the plan's files (replacing the output directory's ``image/`` and
    ``k8s/``); the paths written, in order."""
    for part in MANAGED:
        shutil.rmtree(plan.out / part, ignore_errors=True)
    written = []
    for rel in sorted(plan.files):
        path = plan.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(plan.files[rel])
        written.append(path)
    return written
