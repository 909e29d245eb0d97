"""Dockerfile, .dockerignore and docker-compose.yml refer only to things that exist.

No container engine runs here, so these tests check what can be checked without one: the
files parse, every path they name is in the repository (and not hidden by .dockerignore), and
the commands the containers run point at files the image really contains.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from tests.pysource import parse
from workflow_manager.config import load_workflows

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


# -- reading the files -------------------------------------------------------------------


@dataclass(frozen=True)
class Copy:
    """One COPY: repository paths (relative to the build context) to an absolute image path."""

    sources: tuple[str, ...]
    dest: PurePosixPath
    into_dir: bool  # files land in `dest/<name>` rather than at `dest`

    def image_path_source(self, target: PurePosixPath) -> Path | None:
        """The repository file this COPY puts at `target`, if it puts one there."""
        for source in self.sources:
            path = ROOT / source
            if path.is_dir():  # a directory's contents are copied into dest
                if self.dest == target or self.dest in target.parents:
                    candidate = path / target.relative_to(self.dest)
                    if candidate.exists():
                        return candidate
            elif target == (self.dest / path.name if self.into_dir else self.dest):
                return path
        return None


@dataclass(frozen=True)
class Dockerfile:
    instructions: tuple[tuple[str, str], ...]  # (INSTRUCTION, arguments), in order

    @classmethod
    def parse(cls, text: str) -> Dockerfile:
        joined = re.sub(r"\\\n", " ", text)  # line continuations
        instructions = []
        for line in joined.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                keyword, _, rest = line.partition(" ")
                instructions.append((keyword.upper(), rest.strip()))
        return cls(tuple(instructions))

    def all(self, keyword: str) -> list[str]:
        return [rest for kw, rest in self.instructions if kw == keyword]

    def copies(self) -> list[Copy]:
        """The COPY instructions from the build context, destinations made absolute."""
        workdir = PurePosixPath("/")
        copies = []
        for keyword, rest in self.instructions:
            if keyword == "WORKDIR":
                workdir = workdir / rest
            elif keyword == "COPY":
                words = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
                args = [w for w in words if not w.startswith("--")]
                assert not any(w.startswith("--from") for w in words), "multi-stage COPY"
                *sources, dest = args
                into_dir = len(sources) > 1 or dest.endswith("/") or dest in {".", ".."}
                copies.append(Copy(tuple(sources), workdir / dest, into_dir))
        return copies

    def cmd(self) -> list[str]:
        (cmd,) = self.all("CMD")[-1:]
        assert cmd.startswith("["), "CMD should be in exec (JSON) form so signals reach it"
        return json.loads(cmd)


def _dockerfile() -> Dockerfile:
    return Dockerfile.parse(DOCKERFILE.read_text())


def _compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def _services() -> dict[str, dict[str, Any]]:
    return _compose()["services"]


def _command(service: dict[str, Any]) -> list[str]:
    """The command a compose service runs: its own, else (for our image) the Dockerfile's CMD."""
    command = service.get("command")
    if command is None:
        assert "build" in service, "a service without command must be built from our Dockerfile"
        return _dockerfile().cmd()
    return shlex.split(command) if isinstance(command, str) else list(command)


def _option(command: list[str], name: str) -> str:
    assert name in command, f"{name} missing from {command}"
    return command[command.index(name) + 1]


def _dockerignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*\*/?|\*|\?)", pattern.strip("/"))
    table = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(table.get(p, re.escape(p)) for p in parts))


def _ignored(path: str) -> bool:
    """Whether Docker leaves `path` (relative to the context) out of the build context."""
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for pattern in _dockerignore_patterns():
        negated = pattern.startswith("!")
        regex = _glob_regex(pattern.lstrip("!"))
        if any(regex.fullmatch(candidate) for candidate in candidates):
            ignored = not negated
    return ignored


def _repo_path_in_image(image_path: str) -> Path:
    """The repository file a path inside the image was copied from (the last COPY wins)."""
    target = PurePosixPath(image_path)
    for copy in reversed(_dockerfile().copies()):
        source = copy.image_path_source(target)
        if source is not None:
            return source
    raise AssertionError(f"no COPY of an existing repository file puts {image_path} in the image")


def _workdir() -> PurePosixPath:
    workdir = PurePosixPath("/")
    for path in _dockerfile().all("WORKDIR"):
        workdir = workdir / path
    return workdir


# -- docker-compose.yml ------------------------------------------------------------------


def test_compose_file_parses_with_services() -> None:
    compose = _compose()
    assert isinstance(compose, dict)
    assert {"rabbitmq", "manager", "workers"} <= set(compose["services"])


def test_every_service_has_an_image_or_a_build() -> None:
    for name, service in _services().items():
        assert "image" in service or "build" in service, f"service {name}"


def test_every_build_context_and_dockerfile_exists() -> None:
    for name, service in _services().items():
        build = service.get("build")
        if build is None:
            continue
        spec = {"context": build} if isinstance(build, str) else build
        context = ROOT / spec.get("context", ".")
        assert context.is_dir(), f"service {name}: build context {context} is missing"
        dockerfile = context / spec.get("dockerfile", "Dockerfile")
        assert dockerfile.is_file(), f"service {name}: {dockerfile} is missing"


def test_every_host_path_mounted_exists_and_named_volumes_are_declared() -> None:
    declared = set(_compose().get("volumes") or {})
    for name, service in _services().items():
        for volume in service.get("volumes", []):
            source = volume["source"] if isinstance(volume, dict) else volume.split(":")[0]
            if source.startswith((".", "/", "~")):
                assert (ROOT / source).exists(), f"service {name}: {source} does not exist"
            else:
                assert source in declared, f"service {name}: volume {source} is not declared"
        for env_file in service.get("env_file", []):
            assert (ROOT / env_file).is_file(), f"service {name}: {env_file} does not exist"


def test_files_a_command_copies_from_a_bind_mount_exist() -> None:
    checked = 0
    for name, service in _services().items():
        mounts = dict(v.split(":")[:2][::-1] for v in service.get("volumes", []) if v[0] == ".")
        if not mounts or "command" not in service:
            continue
        text = " ".join(_command(service))
        # `cd <mounted dir> && cp [-r] FILES... <dest>`: each FILE must be in the checkout.
        for target, files in re.findall(r"cd (/\S+) && cp (?:-r )?(.+?) ~/", text):
            assert target in mounts, f"service {name}: {target} is not a bind mount"
            for pattern in files.split():
                found = list((ROOT / mounts[target]).glob(pattern))
                assert found, f"service {name}: nothing at {target}/{pattern}"
                checked += 1
    assert checked, "expected the js-worker to copy its files from a bind mount"


def test_depends_on_healthy_services_have_a_healthcheck() -> None:
    services = _services()
    for name, service in services.items():
        depends = service.get("depends_on", {})
        for other, spec in depends.items() if isinstance(depends, dict) else []:
            assert other in services, f"service {name} depends on unknown {other}"
            if spec.get("condition") == "service_healthy":
                assert "healthcheck" in services[other], f"{other} has no healthcheck"


def test_amqp_urls_point_at_the_rabbitmq_service() -> None:
    for name, service in _services().items():
        url = (service.get("environment") or {}).get("AMQP_URL")
        if url is not None:
            host = re.match(r"amqps?://(?:[^@/]*@)?([^:/]+)", url)
            assert host and host.group(1) in _services(), f"service {name}: {url}"


# -- Dockerfile and .dockerignore --------------------------------------------------------


def test_dockerfile_copy_sources_exist_and_are_in_the_build_context() -> None:
    copies = _dockerfile().copies()
    assert copies
    for copy in copies:
        for source in copy.sources:
            assert list(ROOT.glob(source)), f"COPY source {source} is missing from the repository"
            assert not _ignored(source), f"COPY source {source} is excluded by .dockerignore"


def test_dockerignore_keeps_local_state_out() -> None:
    for path in [".git", ".venv", "wm.db", "examples/word-counts/js/node_modules"]:
        assert _ignored(path), f"{path} would be sent to the Docker daemon"


def test_manager_config_is_a_valid_workflow_file_copied_into_the_image() -> None:
    command = _command(_services()["manager"])
    assert command[:2] == ["workflow-manager", "serve"]
    config = _repo_path_in_image(_option(command, "--config"))
    assert config.is_file()
    assert load_workflows(config), f"{config} defines no workflow"


def test_manager_journal_is_on_the_data_volume() -> None:
    command = _command(_services()["manager"])
    db = PurePosixPath(_option(command, "--db"))
    volumes = [v for rest in _dockerfile().all("VOLUME") for v in json.loads(rest)]
    assert any(PurePosixPath(v) in db.parents for v in volumes), f"{db} is not under {volumes}"
    mounts = [v.split(":")[1] for v in _services()["manager"].get("volumes", [])]
    assert any(PurePosixPath(m) in db.parents for m in mounts), f"no volume mounted for {db}"


def test_manager_port_is_exposed_and_published() -> None:
    command = _command(_services()["manager"])
    port = _option(command, "--port")
    assert _option(command, "--host") == "0.0.0.0"
    assert port in " ".join(_dockerfile().all("EXPOSE")).split()
    published = [str(p).rsplit(":", 1)[-1] for p in _services()["manager"].get("ports", [])]
    assert port in published


def test_image_runs_as_a_non_root_user() -> None:
    users = _dockerfile().all("USER")
    assert users and users[-1].split(":")[0] not in {"root", "0"}


def test_python_worker_command_names_a_worker_object_in_the_image() -> None:
    command = _command(_services()["workers"])
    assert command[0] == "pyworker"
    file_name, _, attribute = command[1].partition(":")
    image_path = file_name if file_name.startswith("/") else str(_workdir() / file_name)
    module = _repo_path_in_image(image_path)
    assert module.is_file(), f"{module} is missing"
    tree = parse(module.read_text())
    names = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assert attribute in names, f"{module} defines no module-level {attribute!r}"


@pytest.mark.parametrize("folder", ["jsworker", "examples/word-counts/js"])
def test_node_lockfiles_match_their_package_json(folder: str) -> None:
    js = ROOT / folder
    package = json.loads((js / "package.json").read_text())
    lock = json.loads((js / "package-lock.json").read_text())
    assert lock["packages"][""]["dependencies"] == package["dependencies"], "run npm install"
    for name, version in package["dependencies"].items():
        if version.startswith("file:"):  # a package of this repository
            assert (js / version.removeprefix("file:") / "package.json").is_file(), version
            continue
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} should be pinned, not {version}"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


def test_bridge_serves_the_managers_workflow_file_and_waits_for_http_steps() -> None:
    services = _services()
    command = _command(services["bridge"])
    assert command[:2] == ["workflow-manager", "bridge"]
    config = _option(command, "--config")
    assert config == _option(_command(services["manager"]), "--config"), "one file for both"
    workflows = load_workflows(_repo_path_in_image(config))
    has_http = any(
        step.http
        for workflow in workflows.values()
        for flow in (workflow, *workflow.tasks, *workflow.branches.values())
        for step in flow.steps
    )
    # With no HTTP step in the file the bridge would exit at once: it must be opt-in.
    assert has_http or services["bridge"].get("profiles"), "the bridge needs a profile"
    assert int(_option(command, "--concurrency")) >= 1
