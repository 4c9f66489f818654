"""Without an NVIDIA driver, loading says so in tmlr's words (CI machines have none); so do the stage
examples, run where no GPU is visible."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import tmlr_runtime as tr
from conftest import cuda_device_count
from fake_driver import metadata_doc, param, write_artifact

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.skipif(cuda_device_count() > 0, reason="this machine has a CUDA driver and device")
def test_load_without_driver_is_a_clear_error(tmp_path):
    d = write_artifact(str(tmp_path / "k"), metadata_doc([param("x", "*fp32", 16)]))
    with pytest.raises(tr.CudaUnavailableError) as e:
        tr.Kernel.load(d)
    assert isinstance(e.value, tr.TmlrError)
    msg = str(e.value)
    assert "driver" in msg and "GPU" in msg


def test_bad_artifact_fails_before_touching_the_driver(tmp_path):
    # Metadata problems are reported even where no driver exists: validation comes first.
    doc = metadata_doc([param("x", "*fp32", 16)])
    doc["variants"][0]["launch"]["num_warps"] = "four"
    d = write_artifact(str(tmp_path / "k"), doc)
    with pytest.raises(tr.SchemaError) as e:
        tr.Kernel.load(d)
    assert e.value.json_path == "$.variants[0].launch.num_warps"


@pytest.mark.parametrize("kernel", ["softmax", "matmul", "fp8_matmul"])
def test_stage_example_without_gpu_says_so_without_traceback(kernel):
    pytest.importorskip("torch")
    stages = os.path.join(ROOT, "examples", "stages")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    p = subprocess.run([sys.executable, os.path.join(stages, f"run_{kernel}.py")], capture_output=True, text=True, env=env,
                       cwd=stages, timeout=120)
    assert p.returncode == 1
    assert p.stdout.startswith(f"FAIL {kernel} needs a CUDA GPU: ") and p.stdout.count("\n") == 1, p.stdout
    assert "Traceback" not in p.stderr, p.stderr
