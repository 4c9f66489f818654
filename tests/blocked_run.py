"""A GPU test's own file run again in a process where Triton cannot be imported, as a deployed service runs (or, with
``blocked=False``, in a process of its own with Triton as installed).

The file's ``__main__`` prints one ``PASS <check>`` or ``FAIL <check>`` line per check; :func:`assert_checks_pass`
runs it and asserts that exactly ``checks`` passed, in that order."""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_BLOCKED_RUN = "import runpy, sys\nsys.modules['triton'] = None\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')"


def assert_checks_pass(path: str, checks: Sequence[str], args: Sequence[str] = (), env: dict[str, str] | None = None,
                       timeout: int = 300, blocked: bool = True) -> None:
    """Run ``path`` with ``args`` (and ``env`` added to the environment) where Triton cannot be imported (``blocked``)."""
    run_env = {**os.environ, **(env or {})}
    run_env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    prefix = [sys.executable, "-c", _BLOCKED_RUN] if blocked else [sys.executable]
    proc = subprocess.run([*prefix, path, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=run_env)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and [line.split()[1] for line in lines] == list(checks), proc.stdout + proc.stderr
    assert all(line.startswith("PASS ") for line in lines), proc.stdout + proc.stderr
