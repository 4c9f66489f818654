"""The same inputs give the same artifact wherever tmlr-build runs.

Two builds as subprocesses that differ in everything a build machine may differ in — working
directory, relative vs absolute source and output paths, TMPDIR, HOME, and above all where Triton
is installed and when its files were written (a copy of Triton's Python files in a temp dir, their
times set to 2021) — give byte-identical cubins and metadata.json. The softmax calls ``tl.max`` and
``tl.sum`` from Triton's own ``standard.py``, whose path and timestamps once reached the cubin.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNELS = [
    (ROOT / "examples" / "kernels" / "vector_add.py", "add", "*fp32:16, *fp32:16, *fp32:16, i32, 1024"),
    (ROOT / "examples" / "stages" / "src" / "softmax.py", "softmax", "*fp32:16, *fp32:16, i32:16, i32:16, i32, 1024"),
]
OLD = time.mktime((2021, 6, 1, 12, 0, 0, 0, 0, -1))


def tmlr_build(cwd: Path, source: str, kernel: str, signature: str, out: str, env: dict[str, str]) -> None:
    env = {**os.environ, "TMPDIR": str(cwd), **env}  # the build's scratch directory differs too
    proc = subprocess.run([sys.executable, "-m", "tmlr_build", f"{source}:{kernel}", "--signature", signature,
                           "-o", out, "--arch", "80,90", "-q"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def files(artifact: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(artifact.iterdir())}


def triton_copy(dest: Path) -> Path:
    """Triton's package under ``dest``: its Python files copied with 2021 times, the rest linked."""
    import triton

    src = Path(triton.__file__).parent

    def copy(s: str, d: str) -> None:
        if s.endswith(".py"):
            shutil.copyfile(s, d)
            os.utime(d, (OLD, OLD))
        else:
            os.symlink(s, d)

    shutil.copytree(src, dest / "site-packages" / "triton", copy_function=copy)
    return dest / "site-packages"


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment variables for a build machine with another Triton install and another HOME."""
    root = tmp_path_factory.mktemp("machine")
    site = triton_copy(root)
    (root / "home").mkdir()
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "HOME": str(root / "home")}
    where = subprocess.run([sys.executable, "-c", "import triton; print(triton.__file__)"],
                           env={**os.environ, **env}, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(site)), where  # the copy, not the installed Triton, is what builds
    return env


@pytest.mark.parametrize("source, kernel, signature", KERNELS, ids=[k for _, k, _ in KERNELS])
def test_builds_on_two_machines_are_byte_identical(tmp_path: Path, elsewhere: dict[str, str], source: Path,
                                                   kernel: str, signature: str) -> None:
    first, second = tmp_path / "first", tmp_path / "second" / "nested"
    first.mkdir()
    second.mkdir(parents=True)
    here = {"PYTHONPATH": str(ROOT)}
    tmlr_build(first, str(source), kernel, signature, "out", here)  # absolute source, relative output
    tmlr_build(second, os.path.relpath(source, second), kernel, signature, str(tmp_path / "elsewhere" / "deep"),
               elsewhere)  # the other way round, with the other Triton install
    a, b = files(first / "out" / kernel), files(tmp_path / "elsewhere" / "deep" / kernel)
    assert sorted(a) == sorted([f"{kernel}.sm_80.cubin", f"{kernel}.sm_90a.cubin", "metadata.json"])
    assert a == b
    for blob in a.values():
        for directory in (str(tmp_path), str(ROOT), elsewhere["HOME"], os.path.expanduser("~")):
            assert directory.encode() not in blob


def test_source_names_become_import_paths(tmp_path: Path) -> None:
    from tmlr_build.compile.source_names import stable_name, stable_text

    std = "/opt/venv/lib/python3.11/site-packages/triton/language/standard.py"
    assert stable_name(std) == "triton/language/standard.py"
    assert stable_name("/usr/lib/python3/dist-packages/mylib/ops.py") == "mylib/ops.py"
    assert stable_name("softmax.py") == "softmax.py"  # relative names are left alone
    (tmp_path / "pkg" / "ops").mkdir(parents=True)
    for init in (tmp_path / "pkg" / "__init__.py", tmp_path / "pkg" / "ops" / "__init__.py"):
        init.write_text("")
    assert stable_name(str(tmp_path / "pkg" / "ops" / "norm.py")) == "pkg/ops/norm.py"
    assert stable_name(str(tmp_path / "loose.py")) == "loose.py"

    text = "\n".join([f'#loc9 = loc("{std}":184:40)', '#loc = loc("softmax.py":7:0)',
                      f'!18 = !DIFile(filename: "standard.py", directory: "{os.path.dirname(std)}")',
                      f'\t.file\t2 "{std}", 1622548800, 9000', '\t.file\t1 "softmax.py"'])
    assert stable_text(text).splitlines() == [
        '#loc9 = loc("triton/language/standard.py":184:40)', '#loc = loc("softmax.py":7:0)',
        '!18 = !DIFile(filename: "standard.py", directory: "triton/language")',
        '\t.file\t2 "triton/language/standard.py"', '\t.file\t1 "softmax.py"']
