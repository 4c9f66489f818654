"""Record, build, serve (issue 30): a workload launches tests/data/kernlib's kernels with Triton under
``tmlr-build record``; the spec it wrote builds (no GPU needed for that); the families it built serve the same
calls with the configs Triton chose, without Triton's JIT and without benchmarking (``tuning="strict"``).
Run: ``python -m pytest -m gpu tests/gpu/test_record_gpu.py``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402

pytestmark = [pytest.mark.gpu]

ROOT = Path(__file__).resolve().parents[2]
def _workload(path: Path) -> None:
    path.write_text(
        "import torch\nimport triton\nfrom kernlib.ops import heur, plain, tuned\n\n"
        "for dtype in (torch.float32, torch.float16):\n"
        "    for n, block in ((4096, 256), (1000, 1024)):\n"
        "        x = torch.randn(n, device='cuda').to(dtype)\n"
        "        out = torch.empty_like(x)\n"
        "        plain.scale[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)\n"
        "        assert torch.equal(out, x * 2)\n"
        "for n in (100, 1000):\n"
        "    x = torch.randn(n, device='cuda')\n"
        "    heur.heur_scale[(1,)](x, torch.empty_like(x), n)\n"
        "for n in (4096, 1 << 20):\n"
        "    x = torch.randn(n, device='cuda')\n"
        "    tuned.tuned_scale[lambda m: (triton.cdiv(n, m['BLOCK']),)](x, torch.empty_like(x), n)\n"
        "torch.cuda.synchronize()\n")


def test_a_recorded_workload_builds_and_serves_what_triton_chose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tmlr_build.cli import run

    monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path / "cache"))
    _workload(tmp_path / "serve.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "data")]))
    done = subprocess.run([sys.executable, "-m", "tmlr_build", "record", "-o", "spec.json", "--", sys.executable,
                           "serve.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    spec = json.loads((tmp_path / "spec.json").read_text())
    by_name = {e["kernel"]: e for e in spec["kernels"]}
    assert by_name["scale"]["signature"] == "*T:16, *T:16, i32:16?"
    assert by_name["scale"]["constexprs"] == {"BLOCK": [256, 1024]}
    assert by_name["heur_scale"]["heuristics"] == {"BLOCK": [128, 1024]}
    choices = by_name["tuned_scale"]["tuning"]
    assert sorted(c["key"][0] for c in choices) == [4096, 1 << 20] and "not_recorded" not in spec

    report, _ = run(["--spec", str(tmp_path / "spec.json"), "-o", str(tmp_path / "out"), "-q"])
    assert sorted(os.path.basename(w) for w in report.written) == ["heur_scale", "scale", "tuned_scale"]

    scale = tr.Kernel.load(str(tmp_path / "out" / "scale"))
    for dtype in (torch.float32, torch.float16):
        for n, block in ((4096, 256), (1000, 1024)):
            x = torch.randn(n, device="cuda").to(dtype)
            out = torch.empty_like(x)
            scale(((n + block - 1) // block,), x, out, n, BLOCK=block)
            torch.cuda.synchronize()
            assert torch.equal(out, x * 2)
    tuned = tr.Kernel.load(str(tmp_path / "out" / "tuned_scale"), tuning="strict", fallback="error")
    configs = json.loads((tmp_path / "out" / "tuned_scale" / "metadata.json").read_text())["autotune"]["configs"]
    for choice in choices:
        n = choice["key"][0]
        x = torch.randn(n, device="cuda")
        out = torch.empty_like(x)
        assert configs[tuned.choose(x, out, n).config] == choice["config"]  # from the table, no benchmark
        tuned(lambda m: ((n + m["BLOCK"] - 1) // m["BLOCK"],), x, out, n)
        torch.cuda.synchronize()
        assert torch.equal(out, x * 3)
