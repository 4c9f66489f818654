"""Stage examples on a GPU: every run_<kernel>.py against the committed artifact of each stage build whose
arch family matches this GPU (sm_90a on 9.x, sm_80 on 8.x), in a subprocess so no Triton is around."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skip_reasons import NEEDS_SM80, NEEDS_SM90

pytestmark = pytest.mark.gpu

STAGES = Path(__file__).resolve().parents[2] / "examples" / "stages"
GLUON = STAGES.parent / "gluon"
ENTRIES = json.loads((STAGES / "stages.json").read_text())["kernels"]


def _gpu_family() -> str:
    # The gpu marker ran this test only where the driver found a device: a failing query is an error here.
    from tmlr_runtime import driver

    return f"sm{driver.device_info(0).major}0"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_stage_example_runs(entry: dict) -> None:
    kernel, family, _stage = entry["name"].rsplit("_", 2)
    gpu = _gpu_family()
    if family != gpu:
        needs = {"sm80": NEEDS_SM80, "sm90": NEEDS_SM90}[family]
        pytest.skip(f"{needs}: {entry['name']} is built for {family}, this GPU is {gpu}")
    proc = subprocess.run([sys.executable, str(STAGES / f"run_{kernel}.py"), str(STAGES / "artifacts" / entry["name"])],
                          capture_output=True, text=True, timeout=120)
    lines = proc.stdout.strip().splitlines()
    # Exactly one line, PASS with this example's name and its max error.
    ok = proc.returncode == 0 and len(lines) == 1 and lines[0].startswith(f"PASS {entry['name']} ")
    assert ok, proc.stdout + proc.stderr


_BLOCKED_RUN = "import runpy, sys\nsys.modules['triton'] = None\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')"


@pytest.mark.parametrize("name", ["gluon_matmul", "gluon_matmul_ttgir"])
def test_committed_example_runs_without_triton(name: str) -> None:
    # tmlr_runtime alone (Triton blocked) launches the committed artifacts (sm_90a, built with 3.9.0) and matches torch
    if _gpu_family() != "sm90":
        pytest.skip(f"{NEEDS_SM90}: the Gluon example is built for sm_90a")
    proc = subprocess.run([sys.executable, "-c", _BLOCKED_RUN, str(GLUON / "run_gluon_matmul.py"),
                           str(GLUON / "artifacts" / name)], capture_output=True, text=True, timeout=120)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and len(lines) == 1 and lines[0].startswith(f"PASS {name} "), proc.stdout + proc.stderr
