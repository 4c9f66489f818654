"""tmlr_runtime.torch_ops on a GPU, one process per torch mode (tests/gpu/torch_ops_cases.py), plus the
examples/torch_compile block: eager, torch.compile(fullgraph=True) with aot_eager, CUDA-graph trees
(backend="cudagraphs"), torch.export, all with Triton blocked; Inductor (default and mode="reduce-overhead")
with Triton importable, since Inductor refuses any graph on a CUDA device without Triton (TritonMissing),
also one made only of custom ops. Each case checks its results against torch and an in-place op.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from skip_reasons import NEEDS_SM90

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
_BLOCKED_RUN = "import runpy, sys\nsys.modules['triton'] = None\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')"
BLOCKED = ["eager", "aot_eager", "cudagraphs", "export"]
WITH_TRITON = ["inductor", "reduce_overhead"]


def run(script: str, *args: str, blocked: bool = True) -> list[str]:
    prefix = [sys.executable, "-c", _BLOCKED_RUN] if blocked else [sys.executable]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([*prefix, script, *args], capture_output=True, text=True, timeout=400, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip().splitlines()


@pytest.mark.parametrize("case", BLOCKED)
def test_op_with_triton_blocked(case: str) -> None:
    lines = run(os.path.join(HERE, "torch_ops_cases.py"), case)
    assert len(lines) == 1 and lines[0].startswith(f"PASS {case} (triton blocked)"), lines


@pytest.mark.parametrize("case", WITH_TRITON)
def test_op_under_inductor(case: str) -> None:
    if importlib.util.find_spec("triton") is None:
        pytest.skip("Inductor generates Triton code around the op: it needs Triton installed")
    lines = run(os.path.join(HERE, "torch_ops_cases.py"), case, blocked=False)
    assert len(lines) == 1 and lines[0].startswith(f"PASS {case} (triton importable)"), lines


def test_torch_compile_example_runs_with_triton_blocked() -> None:
    import torch

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip(f"{NEEDS_SM90}: the example's artifacts are sm_90a")
    lines = run(os.path.join(ROOT, "examples", "torch_compile", "run_block.py"))
    assert lines[0].startswith("PASS torch_compile block "), lines
