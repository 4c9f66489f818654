"""Installing tmlr does not fight the environment (issue 19).

- The ``build`` extra accepts every Triton release tmlr-build supports (an installed 3.9 is not
  downgraded); the README's commands and CI pin the reference release beside it, so the committed
  artifacts stay byte-identical.
- ``cu12`` / ``cu13`` narrow the runtime's cuda-python range to one CUDA major each.
- cuda-python 13 under a CUDA 12 driver fails with an error that names the fix.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tmlr_build.common.triton_check import DEFAULT, TESTED
from tmlr_runtime import driver
from tmlr_runtime.errors import CudaUnavailableError, DriverError

import fake_driver  # tests/ is on sys.path (rootdir conftest)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 has no tomllib
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _extra(name: str) -> list[str]:
    return PROJECT["optional-dependencies"][name]


def test_the_build_extra_accepts_every_supported_triton_release() -> None:
    last_minor = int(TESTED[-1].split(".")[1])
    assert _extra("build") == [f"triton>={TESTED[0]},<3.{last_minor + 1}"]


def test_cu12_and_cu13_narrow_the_runtime_range_to_one_cuda_major_each() -> None:
    assert "cuda-python>=12.3,<14" in PROJECT["dependencies"]
    assert _extra("cu12") == ["cuda-python>=12.3,<13"]
    assert _extra("cu13") == ["cuda-python>=13,<14"]


def test_the_readme_and_ci_pin_the_reference_triton_beside_the_build_extra() -> None:
    """fresh-check and CI run these lines on a fresh venv; the tests byte-compare 3.3.1's output."""
    readme = (ROOT / "README.md").read_text()
    fresh = readme.split("## On a fresh machine", 1)[1]
    commands = re.findall(r"```bash\n(.*?)\n```", fresh, re.S)[:2]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pip install" in line and ".[build" in line]
    for command in [*commands, *ci]:
        assert ".[build" in command and f'"triton=={DEFAULT}"' in command, command
    assert "[cu12]" in readme and "[cu13]" in readme


class _OldDriver(fake_driver.FakeDriver):
    """A CUDA 12.4 driver under cuda-python 13: cuInit answers CUDA_ERROR_SYSTEM_DRIVER_MISMATCH."""

    CUDA_VERSION = 13040

    def cuInit(self, flags: int) -> tuple[int]:
        return (803,)

    def cuDriverGetVersion(self) -> tuple[int, int]:
        return 0, 12040


def _failing_init(fake: fake_driver.FakeDriver, monkeypatch: pytest.MonkeyPatch) -> DriverError:
    monkeypatch.setattr(driver.PROCESS, "api", fake)
    monkeypatch.setattr(driver.PROCESS, "initialised", False)
    with pytest.raises(DriverError) as info:
        driver.init()
    return info.value


def test_cuda_python_13_under_a_cuda_12_driver_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    err = _failing_init(_OldDriver(driver.api(), fake_driver.H200), monkeypatch)
    assert isinstance(err, CudaUnavailableError) and err.code == "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"
    text = str(err)
    assert "built for CUDA 13.4" in text and "supports CUDA 12.4" in text
    assert "pip install 'cuda-python>=12.3,<13'" in text and ".[cu12]" in text


def test_a_later_call_needing_a_newer_driver_names_the_fix_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver.PROCESS, "api", _OldDriver(driver.api(), fake_driver.H200))
    err = driver.error(36, "cuLaunchKernelEx")
    assert err.code == "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER" and ".[cu12]" in str(err)


def test_a_driver_error_with_matching_versions_adds_no_version_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    class Matching(_OldDriver):
        def cuDriverGetVersion(self) -> tuple[int, int]:
            return 0, 13040

    err = _failing_init(Matching(driver.api(), fake_driver.H200), monkeypatch)
    assert "cu12" not in str(err) and "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" in str(err)


def test_a_cuinit_that_passes_under_an_older_driver_warns_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda-bindings 13 may init on a CUDA 12 driver and fail at a later call that the driver lacks."""
    class Passing(_OldDriver):
        def cuInit(self, flags: int) -> tuple[int]:
            return (0,)

    monkeypatch.setattr(driver.PROCESS, "api", Passing(driver.api(), fake_driver.H200))
    monkeypatch.setattr(driver.PROCESS, "initialised", False)
    with pytest.warns(RuntimeWarning, match=r"supports CUDA 12\.4: install the cuda-python of the driver's CUDA major"):
        driver.init()


def test_without_cuda_python_the_error_names_the_extra_per_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("cuda", "cuda.bindings", "cuda.bindings.driver", "cuda.cuda"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    monkeypatch.setattr(driver.PROCESS, "api", None)
    with pytest.raises(CudaUnavailableError) as info:
        driver.api()
    assert "pip install 'cuda-python>=12.3,<13' for a CUDA 12 driver" in str(info.value)
    assert "'.[cu12]' or '.[cu13]'" in str(info.value)
