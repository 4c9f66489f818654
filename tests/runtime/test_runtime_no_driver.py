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


RUNNERS = {"softmax": "stages/run_softmax.py", "matmul": "stages/run_matmul.py", "fp8_matmul": "stages/run_fp8_matmul.py",
           "gluon_matmul": "gluon/run_gluon_matmul.py", "matmul family": "autotune/run_matmul.py",
           "torch_compile block": "torch_compile/run_block.py"}


def _run_example(script: str, *python: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    path = os.path.join(ROOT, "examples", script)
    return subprocess.run([sys.executable, *(python or [path])], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(path), timeout=120)


@pytest.mark.parametrize("name", sorted(RUNNERS))
def test_example_runner_without_gpu_says_so_without_traceback(name):
    pytest.importorskip("torch")
    p = _run_example(RUNNERS[name])
    assert p.returncode == 1
    assert p.stdout.startswith(f"FAIL {name} needs a CUDA GPU: ") and p.stdout.count("\n") == 1, p.stdout
    assert "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("name", sorted(RUNNERS))
def test_example_runner_without_torch_says_what_to_install(name):
    path = os.path.join(ROOT, "examples", RUNNERS[name])
    blocked = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = [sys.argv[1]]; "
               "runpy.run_path(sys.argv[0], run_name='__main__')")
    p = _run_example(RUNNERS[name], "-c", blocked, path)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stdout == (f"FAIL {os.path.basename(path)} needs torch (with CUDA) for its inputs and reference: pip install "
                        "torch, or from a tmlr checkout pip install -e '.[torch]'\n")
