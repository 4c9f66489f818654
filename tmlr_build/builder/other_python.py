"""``tmlr-build --python PATH ...``: the same build, run by another interpreter with its own Triton.

A build container may hold several Triton releases, one per virtual environment. The compile side
must import the Triton it compiles with, so the whole command runs again as ``PATH -m tmlr_build``
with the other arguments unchanged, importing this tmlr_build (not one installed there): a folder
holding links to this checkout's two packages goes first on its PYTHONPATH (the folder this package
lives in may be a site-packages whose other packages, Triton included, must not shadow PATH's own).
Standard library only: tmlr-build calls this before it starts its compile processes.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Sequence

from ..common.errors import TritonVersionError, UsageError
from ..common.triton_check import DEFAULT, TESTED, check_triton_version

_PROBE = ("import importlib.metadata as m\n"
          "for name in ('triton', 'jsonschema'):\n"
          "    try:\n        print(m.version(name))\n"
          "    except m.PackageNotFoundError:\n        print('')\n")


def split_python(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """``--python PATH`` (or ``--python=PATH``) taken out of ``argv``: (PATH or None, the other arguments)."""
    rest, python, i = [], None, 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--python":
            if i + 1 >= len(argv):
                raise UsageError("--python: name an interpreter, e.g. --python /opt/venv-triton39/bin/python")
            python, i = argv[i + 1], i + 2
            continue
        if arg.startswith("--python="):
            python = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return python, rest


def check_interpreter(python: str) -> str:
    """The Triton version of interpreter ``python``; UsageError/TritonVersionError when it cannot build."""
    path = shutil.which(python)
    if path is None:
        raise UsageError(f"--python {python}: no such interpreter (give the path of a python executable, e.g. "
                         "/opt/venv/bin/python)")
    try:
        proc = subprocess.run([path, "-c", _PROBE], capture_output=True, text=True, timeout=120,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"--python {python}: cannot run it ({e})") from None
    if proc.returncode != 0 or len(proc.stdout.splitlines()) != 2:
        raise UsageError(f"--python {python}: not a working Python interpreter: {proc.stderr.strip()[-300:]}")
    triton, jsonschema = proc.stdout.splitlines()
    if not triton:
        raise TritonVersionError(f"--python {python}: has no Triton; install a supported release there: {python} -m "
                                 f"pip install 'triton=={DEFAULT}' (tested: {', '.join(TESTED)})")
    try:
        version = check_triton_version(triton)
    except TritonVersionError as e:
        raise TritonVersionError(f"--python {python}: {e}") from None
    if not jsonschema:
        raise UsageError(f"--python {python}: has Triton {version} but not jsonschema, which tmlr-build needs to "
                         f"check what it writes; install it there: {python} -m pip install jsonschema")
    return version


def run(python: str, argv: Sequence[str]) -> int:
    """Run ``python -m tmlr_build *argv`` with this checkout's tmlr_build; its exit status."""
    check_interpreter(python)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory(prefix="tmlr-build-path-") as links:
        for package in ("tmlr_build", "tmlr_runtime"):
            os.symlink(os.path.join(here, package), os.path.join(links, package))
        path = os.pathsep.join([links] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
        with subprocess.Popen([python, "-m", "tmlr_build", *argv], env={**os.environ, "PYTHONPATH": path}) as proc:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # Ctrl-C reached the child too (same process group): let it stop
                proc.wait()
                return 130
