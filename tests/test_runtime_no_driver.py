"""Without an NVIDIA driver, loading says so in tmlr's words (CI machines have none)."""
from __future__ import annotations

import pytest

import tmlr_runtime as tr
from conftest import cuda_device_count
from runtime_fakes import metadata_doc, param, write_artifact


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
