"""The same inputs give the same artifact wherever tmlr-build runs: two runs of the command (as
subprocesses) from different working directories, naming the source by another relative path and
writing to different output paths, give byte-identical cubins and metadata.json."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "examples" / "kernels" / "vector_add.py"
SIGNATURE = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"


def tmlr_build(cwd: Path, source: str, out: str) -> None:
    exe = shutil.which("tmlr-build")
    command = [exe] if exe else [sys.executable, "-m", "tmlr_build"]
    env = dict(os.environ, TMPDIR=str(cwd))  # the build's scratch directory differs too
    proc = subprocess.run(command + [f"{source}:add", "--signature", SIGNATURE, "-o", out, "--arch", "80,90", "-q"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def files(artifact: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(artifact.iterdir())}


def test_two_builds_in_different_directories_are_byte_identical(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second" / "nested"
    first.mkdir()
    second.mkdir(parents=True)
    tmlr_build(first, str(SOURCE), "out")  # absolute source, relative output
    tmlr_build(second, os.path.relpath(SOURCE, second), str(tmp_path / "elsewhere" / "deep"))  # the other way round
    a, b = files(first / "out" / "add"), files(tmp_path / "elsewhere" / "deep" / "add")
    assert sorted(a) == ["add.sm_80.cubin", "add.sm_90a.cubin", "metadata.json"]
    assert a == b
    for directory in (str(tmp_path), str(ROOT)):
        assert directory.encode() not in a["metadata.json"]
