"""Installing tmlr does not fight the environment (issue 19).

- The ``build`` extra accepts every Triton release tmlr-build supports, and the README's build command pins none
  (an installed 3.9 is not downgraded); its test command pins the reference release, whose output the
  committed artifacts are, beside the torch release that depends on it; CI runs both as the README writes them
  (issue 28).
- ``cu12`` / ``cu13`` narrow the runtime's cuda-python range to one CUDA major each.
- cuda-python 13 under a CUDA 12 driver fails with an error that names the fix.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tmlr_build.common.triton_check import DEFAULT, TESTED, requirement
from tmlr_runtime import driver
from tmlr_runtime.errors import CudaUnavailableError, DriverError

import fake_driver  # tests/ is on sys.path (rootdir conftest)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import readme_commands  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 has no tomllib
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
TORCH_FOR_DEFAULT = "2.7.1"  # the torch release whose wheels depend on triton==DEFAULT (3.3.1)


def _extra(name: str) -> list[str]:
    return PROJECT["optional-dependencies"][name]


def test_the_build_extra_accepts_every_supported_triton_release() -> None:
    last_minor = int(TESTED[-1].split(".")[1])
    assert _extra("build") == [f"triton>={TESTED[0]},<3.{last_minor + 1}"] == [requirement()]


def test_cu12_and_cu13_narrow_the_runtime_range_to_one_cuda_major_each() -> None:
    assert "cuda-python>=12.3,<14" in PROJECT["dependencies"]
    assert _extra("cu12") == ["cuda-python>=12.3,<13"]
    assert _extra("cu13") == ["cuda-python>=13,<14"]


def test_the_readme_build_command_keeps_an_installed_triton_and_the_test_command_pins_the_reference() -> None:
    """The build command takes whatever supported Triton is installed (no pin that would downgrade it); the test
    command pins the release whose output the tests byte-compare, beside the torch release that depends on
    exactly that Triton, so the two resolve together on the public package index (torch's other releases pin
    other Tritons: ResolutionImpossible)."""
    build, test = readme_commands.fresh_machine_commands()
    assert '".[build]"' in build and "triton==" not in build and "tmlr-build" in build, build
    assert ".[build" in test and f'"triton=={DEFAULT}"' in test and f'"torch=={TORCH_FOR_DEFAULT}"' in test, test
    assert "[cu12]" in (ROOT / "README.md").read_text() and "[cu13]" in (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_commands_with_local_pip_configuration_off() -> None:
    """CI installs nothing of its own for the main run: it runs the README's commands as read from it, with pip's
    config files and PIP_* variables off (a local wheel folder would hide a command users cannot run)."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert "readme_commands.py 1" in ci and "readme_commands.py 2" in ci
    assert "PIP_CONFIG_FILE=/dev/null" in ci and "unset" in ci
    assert not [line for line in ci.splitlines() if "pip install" in line and ".[build" in line]


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
