"""The Dockerfile, read with BuildKit's own parser (the `dockerfile` package wraps it): two
stages, a final one that runs `baton` as a non-root user from pinned base images, a build that
installs what pyproject.toml declares and checks the Whisper model, and a .dockerignore that
keeps secrets and the local venv out while letting in everything the install needs."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import dockerfile  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _stages() -> list[list[dockerfile.Command]]:
    stages: list[list[dockerfile.Command]] = []
    for command in dockerfile.parse_file(str(ROOT / "Dockerfile")):
        if command.cmd == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(command)
    return stages


def _python_snippets(stage: list[dockerfile.Command]) -> list[str]:
    """The `python -c "..."` programs a stage's RUN lines execute."""
    runs = " ".join(c.value[0] for c in stage if c.cmd == "RUN")
    return re.findall(r'python -c "([^"]+)"', runs)


def test_the_final_stage_runs_baton_as_a_non_root_user() -> None:
    build, final = _stages()
    assert next(c.value for c in build if c.cmd == "FROM")[-2:] == ("AS", "build")
    users = [c.value[0] for c in final if c.cmd == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    entrypoint = [c for c in final if c.cmd == "ENTRYPOINT"][-1]
    assert entrypoint.json and entrypoint.value == ("baton",)
    assert PYPROJECT["project"]["scripts"]["baton"] == "baton.cli:run"
    copies = [c for c in final if c.cmd == "COPY"]
    assert copies and all(c.flags == ("--from=build",) for c in copies)  # nothing from the host


def test_base_images_are_pinned_to_a_patch_release() -> None:
    args = dict(
        c.value[0].split("=", 1)
        for c in dockerfile.parse_file(str(ROOT / "Dockerfile"))
        if c.cmd == "ARG" and "=" in c.value[0]
    )
    image = args["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", image), image
    assert image.split(":")[1].startswith(PYPROJECT["project"]["requires-python"][2:])


def test_the_build_installs_exactly_the_declared_dependencies(tmp_path: Path) -> None:
    build, _ = _stages()
    listing = next(s for s in _python_snippets(build) if "pyproject.toml" in s)
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    printed = subprocess.run(
        [sys.executable, "-c", listing], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert printed.stdout.split("\n")[:-1] == PYPROJECT["project"]["dependencies"]


def test_the_build_loads_the_measured_whisper_model(tmp_path: Path) -> None:
    build, _ = _stages()
    check = next(s for s in _python_snippets(build) if "Whisper" in s)
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "offline recognizer loaded" in done.stdout + done.stderr


def test_the_build_derives_the_offline_policys_model_where_the_runtime_looks(
    tmp_path: Path,
) -> None:
    # The image's runtime stage reads the int8 sentence model from the build's cache folder
    # (it never derives it): the same folder in both stages, and the build's program makes it.
    build, final = _stages()
    derived = next(s for s in _python_snippets(build) if "runnable_model" in s)
    folders = [
        dict(c.value[i : i + 2] for i in range(0, len(c.value), 2)).get("BATON_CACHE_DIR")
        for stage in (build, final)
        for c in stage
        if c.cmd == "ENV"
    ]
    assert [f for f in folders if f] == ["/opt/baton/cache", "/opt/baton/cache"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "BATON_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", derived], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    made = Path(done.stdout.strip().splitlines()[-1])  # after the log lines
    assert made.parent == tmp_path / "sentence-model"
    assert [p.name for p in made.parent.iterdir()] == [made.name]  # no scratch files left
    # Derived in another process, it is the very file this machine's cache holds: the
    # derivation is deterministic, so every process's vectors are the same.
    from activities.chat_models.offline.model_file import runnable_model

    assert made.read_bytes() == runnable_model().read_bytes()


def _ignored(path: str, patterns: list[str]) -> bool:
    # .dockerignore's rules for the plain patterns it holds (no `!` exceptions): a pattern
    # matches the path or one of its parent folders; `**/` matches any depth.
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        flat = pattern.removeprefix("**/")
        for prefix in prefixes:
            if fnmatch.fnmatch(prefix, pattern) or (
                pattern.startswith("**/") and fnmatch.fnmatch(prefix.split("/")[-1], flat)
            ):
                return True
    return False


def test_dockerignore_keeps_secrets_out_and_lets_the_install_in() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert not any(p.startswith("!") for p in patterns)  # _ignored does not model exceptions
    for private in (".env", "prod.env", ".venv/bin/python", ".git/config", ".baton/codec-keys"):
        assert _ignored(private, patterns), private
    needed = ["pyproject.toml", "setup.py", PYPROJECT["project"]["readme"]]
    needed += PYPROJECT["project"]["license-files"]
    needed += [
        p.rstrip("*") + "/__init__.py"
        for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    ]
    needed += ["registries/scenariostore/banking/scenario.yaml", "contracts/proto/media.proto"]
    for path in needed:
        assert (ROOT / path).exists(), path
        assert not _ignored(path, patterns), f".dockerignore leaves out {path}"
