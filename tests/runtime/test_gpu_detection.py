"""How the test suite decides whether GPU tests run (tests/conftest.py), and which of their skips
tests/gpu_all.sh accepts (tests/skip_reasons.py). Driver answers are faked: this runs anywhere."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
import skip_reasons
from tmlr_runtime import CudaUnavailableError

ROOT = Path(__file__).resolve().parents[2]


class FakeDrv:
    def __init__(self, count: int) -> None:
        self.count = count

    def cuDeviceGetCount(self) -> tuple[int, int]:
        return 0, self.count


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch):
    """Set what the probe finds: ``probe(library, init)`` with ``init`` a driver or an exception."""

    def set_(library: bool, init: object) -> None:
        def fake_init() -> object:
            if isinstance(init, BaseException):
                raise init
            return init

        monkeypatch.setattr(conftest, "driver_library_present", lambda: library)
        monkeypatch.setattr(conftest.driver, "init", fake_init)
        conftest.gpu_probe.cache_clear()

    yield set_
    conftest.gpu_probe.cache_clear()  # the next caller asks the real driver again


@pytest.mark.parametrize("expr,asked", [("gpu", True), ("gpu and not slow", True), ("(gpu)", True), ("not gpu", False),
                                        ("", False), ("slow", False), ("not gpu or gpu", True), ("gpus", False)])
def test_gpu_requested(expr: str, asked: bool) -> None:
    assert conftest.gpu_requested(expr) is asked


def test_no_driver_library_skips_even_under_m_gpu(probe) -> None:
    probe(False, AssertionError("the driver must not be asked without its library"))
    for expr in ("gpu", ""):
        reason = conftest.gpu_skip_reason(expr)
        assert reason == f"needs a CUDA device ({conftest.NO_DRIVER_LIBRARY})"


def test_failing_driver_is_an_error_under_m_gpu(probe) -> None:
    probe(True, CudaUnavailableError("CUDA_ERROR_NO_DEVICE: no CUDA-capable device is visible"))
    with pytest.raises(pytest.UsageError) as e:
        conftest.gpu_skip_reason("gpu")
    assert "no CUDA device can be used" in str(e.value) and "CUDA_ERROR_NO_DEVICE" in str(e.value)
    reason = conftest.gpu_skip_reason("")  # a plain run skips, saying why
    assert reason is not None and "present but failed" in reason and "CUDA_ERROR_NO_DEVICE" in reason


def test_zero_devices_is_an_error_under_m_gpu(probe) -> None:
    probe(True, FakeDrv(0))
    with pytest.raises(pytest.UsageError, match="reports 0 devices"):
        conftest.gpu_skip_reason("gpu and not slow")
    assert conftest.cuda_device_count() == 0


def test_devices_found_run_the_gpu_tests(probe) -> None:
    probe(True, FakeDrv(2))
    assert conftest.gpu_skip_reason("gpu") is None and conftest.gpu_skip_reason("") is None
    assert conftest.cuda_device_count() == 2


LOG = """\
........s
=========================== short test summary info ============================
SKIPPED [4] tests/gpu/test_multi_gpu.py: needs two GPUs
SKIPPED [1] tests/gpu/test_runtime_gpu.py:260: needs two GPUs
SKIPPED [5] tests/gpu/test_examples_gpu.py:34: needs an sm_80 GPU: softmax_sm80_ttir is built for sm_80, this GPU is sm_90
SKIPPED [1] tests/gpu/test_runtime_gpu_inputs.py:40: CuPy is not installed (pip install cupy-cuda12x)
SKIPPED [1] tests/gpu/test_runtime_gpu.py:101: needs an sm_90 GPU (sm_90a cubins)
SKIPPED [2] tests/runtime/test_bad_inputs.py:477: needs a CUDA device (the NVIDIA driver reports 0 devices)
40 passed, 14 skipped in 12.00s
"""


def test_only_named_skips_are_allowed() -> None:
    bad = skip_reasons.unexpected_skips(LOG)
    assert [line.split("] ")[1].split(":")[0] for line in bad] == [
        "tests/gpu/test_runtime_gpu_inputs.py", "tests/gpu/test_runtime_gpu.py", "tests/runtime/test_bad_inputs.py"]
    assert skip_reasons.ALLOWED == ("needs an sm_80 GPU", "needs two GPUs")


def test_skip_check_command(tmp_path: Path) -> None:
    log = tmp_path / "pytest_gpu.log"
    log.write_text(LOG)
    run = [sys.executable, str(ROOT / "tests" / "skip_reasons.py"), str(log)]
    p = subprocess.run(run, capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout.count("unexpected skip: SKIPPED") == 3 and "CuPy is not installed" in p.stdout
    env = {"GPU_ALL_ALLOW_SKIPS": "needs an sm_90 GPU|CuPy is not installed|needs a CUDA device"}
    p = subprocess.run(run, capture_output=True, text=True, env={**os.environ, **env})
    assert p.returncode == 0 and p.stdout == ""
    log.write_text(LOG.replace("SKIPPED [1] tests/gpu/test_runtime_gpu_inputs", "xx").replace("SKIPPED [1] tests/gpu/test_runtime_gpu.py:101", "xx")
                   .replace("SKIPPED [2] tests/runtime/test_bad_inputs", "xx"))
    assert subprocess.run(run, capture_output=True, text=True).returncode == 0


def test_gpu_tests_that_need_more_skip_only_for_allowed_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    """needs_gpus / needs_sm markers are judged by the driver's devices, and skip in skip_reasons' words:
    one H200 allows a two-GPU test's skip, never an sm_90 test's."""
    from types import SimpleNamespace

    h200 = SimpleNamespace(major=9, minor=0)
    monkeypatch.setattr(conftest, "cuda_device_count", lambda: 1)
    monkeypatch.setattr(conftest.driver, "device_info", lambda ordinal: h200)
    item = lambda *marks: SimpleNamespace(get_closest_marker=lambda name: next((m for m in marks if m.name == name), None))  # noqa: E731
    two, sm90, sm80 = pytest.mark.needs_gpus(2).mark, pytest.mark.needs_sm(9, 0).mark, pytest.mark.needs_sm(8, 0).mark
    assert conftest.need_skip_reason(item(sm90)) is None and conftest.need_skip_reason(item()) is None
    assert conftest.need_skip_reason(item(two)).startswith(skip_reasons.ALLOWED)
    assert conftest.need_skip_reason(item(sm80)).startswith(skip_reasons.NEEDS_SM80)
    h200.minor = 9  # another sm_9x: an sm_90 test's skip is not allowed there
    assert not conftest.need_skip_reason(item(sm90)).startswith(skip_reasons.ALLOWED)
