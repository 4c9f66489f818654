"""``tmlr-build --python PATH``: the command runs again in another interpreter, with its Triton and this
checkout's tmlr_build; an interpreter that cannot build is refused before anything runs.

``TMLR_TEST_OTHER_PYTHON=/venv/bin/python`` (CI sets it to its Triton 3.9.0 venv) adds a build with
another release than the one running the tests."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tmlr_build.cli import main, run
from tmlr_build.common import errors as E

ROOT = Path(__file__).resolve().parents[2]
ADD = f"{ROOT}/examples/kernels/vector_add.py:add"
ADD_SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"


def _triton_of(python: str) -> str:
    return subprocess.run([python, "-c", "import triton; print(triton.__version__)"], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": ""}).stdout.strip()


def _build_with(python: str, out: Path) -> dict:
    assert main(["--python", python, ADD, "--signature", ADD_SIG, "-o", str(out), "--arch", "90", "-q"]) == 0
    return json.loads((out / "add" / "metadata.json").read_text())


def test_this_interpreter_through_the_handoff(tmp_path: Path) -> None:
    doc = _build_with(sys.executable, tmp_path)
    import triton

    assert doc["variants"][0]["provenance"]["triton_version"] == triton.__version__


@pytest.mark.skipif(not os.environ.get("TMLR_TEST_OTHER_PYTHON"), reason="TMLR_TEST_OTHER_PYTHON not set")
def test_another_interpreters_triton_builds(tmp_path: Path) -> None:
    python = os.environ["TMLR_TEST_OTHER_PYTHON"]
    doc = _build_with(python, tmp_path)
    assert doc["variants"][0]["provenance"]["triton_version"] == _triton_of(python)


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with no packages: no Triton, no jsonschema."""
    d = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d)], check=True)
    return d


def _fake_distribution(venv: Path, name: str, version: str) -> None:
    # importlib.metadata finds a distribution by its .dist-info folder: enough to look installed
    site = next(venv.glob("lib/python3*/site-packages"))
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_interpreters_that_cannot_build_are_refused(bare_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    python = str(bare_venv / "bin" / "python")
    argv = [ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "90"]
    assert main(["--python", str(tmp_path / "nope"), *argv]) == 2
    assert "no such interpreter" in capsys.readouterr().err
    assert main([f"--python={python}", *argv]) == 1
    assert "has no Triton; install a supported release there" in capsys.readouterr().err
    _fake_distribution(bare_venv, "triton", "3.10.0")
    assert main(["--python", python, *argv]) == 1
    err = capsys.readouterr().err
    assert f"--python {python}: Triton 3.10.0 is installed" in err and "3.3, 3.4, 3.5, 3.6, 3.7, 3.8, 3.9" in err
    shutil.rmtree(next(bare_venv.glob("lib/python3*/site-packages")) / "triton-3.10.0.dist-info")
    _fake_distribution(bare_venv, "triton", "3.9.0")
    assert main(["--python", python, *argv]) == 2
    assert "not jsonschema" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_python_is_for_the_command_not_the_library(tmp_path: Path) -> None:
    with pytest.raises(E.UsageError, match="--python runs the whole tmlr-build command"):
        run(["--python", sys.executable, ADD, "--signature", ADD_SIG, "-o", str(tmp_path)])
    assert main(["--python"]) == 2
