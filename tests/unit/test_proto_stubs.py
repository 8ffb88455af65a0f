"""The generated stubs under src/godot_rag/v1 are what protos/ generates now (make proto)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def test_generated_stubs_are_not_stale(repo: Path, tmp_path: Path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools is in the dev extra; make test installs it")
    protos = sorted(str(p.relative_to(repo / "protos")) for p in (repo / "protos").rglob("*.proto"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            "protos",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            *protos,
        ],
        cwd=repo,
        check=True,
    )
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.py*") if p.is_file())
    assert generated
    stale = [str(p) for p in generated if (repo / "src" / p).read_bytes() != (tmp_path / p).read_bytes()]
    assert not stale, f"stale generated stubs (run make proto): {stale}"
