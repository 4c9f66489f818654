"""Stage examples on a GPU: every run_<kernel>.py against the committed artifact of each stage build whose
arch family matches this GPU (sm_90a on 9.x, sm_80 on 8.x), in a subprocess so no Triton is around."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

STAGES = Path(__file__).resolve().parents[1] / "examples" / "stages"
ENTRIES = json.loads((STAGES / "stages.json").read_text())["kernels"]


def _gpu_family() -> str | None:
    try:
        from cuda.bindings import driver

        driver.cuInit(0)
        _, dev = driver.cuDeviceGet(0)
        _, major, _ = driver.cuDeviceComputeCapability(dev)
    except Exception:  # no driver: the gpu marker skips these tests anyway
        return None
    return {8: "sm80", 9: "sm90"}.get(int(major))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_stage_example_runs(entry: dict) -> None:
    kernel, family, _stage = entry["name"].rsplit("_", 2)
    if family != _gpu_family():
        pytest.skip(f"{entry['name']} is for {family}, this GPU is {_gpu_family()}")
    proc = subprocess.run([sys.executable, str(STAGES / f"run_{kernel}.py"), str(STAGES / "artifacts" / entry["name"])],
                          capture_output=True, text=True, timeout=120)
    lines = proc.stdout.strip().splitlines()
    # Exactly one line, PASS with this example's name and its max error.
    ok = proc.returncode == 0 and len(lines) == 1 and lines[0].startswith(f"PASS {entry['name']} ")
    assert ok, proc.stdout + proc.stderr
