"""What the repository's Dockerfile says about the runtime image, parsed with
dockerfile-parse: the final stage's instructions, its user, its environment, the
directories it creates and who owns them."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dockerfile_parse import DockerfileParser

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = REPO / "Dockerfile"


@dataclass(frozen=True)
class Instruction:
    """One instruction: ``RUN``, ``USER``, ... and its text (continuations joined)."""

    name: str
    value: str


@dataclass(frozen=True)
class Image:
    """The runtime image as its Dockerfile builds it.

    Attributes:
        stages: each stage's instructions, ``FROM`` first; the last is the runtime one.
        env: the runtime stage's environment (``ENV``).
        user: the runtime stage's last ``USER`` (``uid[:gid]``).
        owned_dirs: ``{directory: (uid, gid)}`` that the runtime stage creates with
            ``install -d -o UID -g GID``.
    """

    stages: tuple[tuple[Instruction, ...], ...]
    env: dict[str, str]
    user: str
    owned_dirs: dict[str, tuple[str, str]]

    @property
    def runtime(self) -> tuple[Instruction, ...]:
        """The runtime stage's instructions."""
        return self.stages[-1]

    def values(self, name: str) -> list[str]:
        """The runtime stage's values of instruction ``name``."""
        return [i.value for i in self.runtime if i.name == name]

    def exec_form(self, name: str) -> list[str]:
        """The last ``CMD`` or ``ENTRYPOINT`` of the runtime stage, exec form.

        Raises:
            ValueError: it is in shell form (a JSON array is what Docker runs without a
                shell, so that the service is PID 1 and gets SIGTERM).
        """
        value = self.values(name)[-1]
        parsed = json.loads(value)
        if not isinstance(parsed, list):
            raise ValueError(f"{name} {value} is not an exec-form JSON array")
        return [str(p) for p in parsed]


def _owned_dirs(commands: list[str]) -> dict[str, tuple[str, str]]:
    """The directories that ``install -d -o U -g G ... DIR...`` commands create."""
    found: dict[str, tuple[str, str]] = {}
    for command in commands:
        for part in command.split("&&"):
            words = shlex.split(part)
            if words[:2] != ["install", "-d"]:
                continue
            owner = words[words.index("-o") + 1] if "-o" in words else "0"
            group = words[words.index("-g") + 1] if "-g" in words else "0"
            skip = {i + 1 for i, w in enumerate(words) if w in ("-o", "-g", "-m")}
            dirs = [w for i, w in enumerate(words[2:], 2)
                    if i not in skip and not w.startswith("-")]
            found.update(dict.fromkeys(dirs, (owner, group)))
    return found


@cache
def image(path: Path = DOCKERFILE) -> Image:
    """Parse ``path``."""
    parser = DockerfileParser(path=str(path))
    stages: list[list[Instruction]] = []
    for item in parser.structure:
        if item["instruction"] == "FROM":
            stages.append([])
        if stages and item["instruction"] != "COMMENT":
            stages[-1].append(Instruction(item["instruction"], item["value"]))
    runtime = stages[-1]
    users = [i.value for i in runtime if i.name == "USER"]
    runs = [i.value for i in runtime if i.name == "RUN"]
    return Image(tuple(tuple(s) for s in stages), dict(parser.envs),
                 users[-1] if users else "", _owned_dirs(runs))
