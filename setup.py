"""Generates the media plane's gRPC code from its .proto as part of every build.

The generated modules are build output, never committed: `pip install .` and `pip install -e .`
both run `build_py`, which calls grpcio-tools' protoc (a build requirement) before packaging.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PROTO_DIR = Path(__file__).parent / "contracts" / "proto"


def generate_media_plane() -> None:
    from grpc_tools import protoc  # build requirement, see pyproject.toml

    proto = PROTO_DIR / "media.proto"
    # -I at the repository root makes the generated imports absolute
    # (`from contracts.proto import media_pb2`), so they work from any working directory.
    root = PROTO_DIR.parent.parent
    args = [
        "protoc",
        f"-I{root}",
        f"--python_out={root}",
        f"--pyi_out={root}",
        f"--grpc_python_out={root}",
        str(proto.relative_to(root)),
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed on {proto}")


class BuildPyWithProtos(build_py):
    def run(self) -> None:
        # Written beside the .proto in both modes: an editable install imports from the source
        # tree, and a regular build then copies the fresh files into the wheel.
        generate_media_plane()
        super().run()


setup(cmdclass={"build_py": BuildPyWithProtos})
