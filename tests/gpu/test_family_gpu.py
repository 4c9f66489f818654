"""A family artifact on a real GPU: dtypes, non-divisible sizes and misaligned views through one
directory, tuning at run time (in place, under CUDA-graph capture), ``tmlr tune`` and strict mode.

The family is tests/gpu/artifacts/add_family (sm_90a; made on a CPU by tests/gpu/make_add_family.py):
``add`` in 18 variants, 2 autotune configs (BLOCK 1024 / 4 warps, BLOCK 2048 / 8 warps) x fp32, fp16,
bf16 x three alignment patterns. Run: ``python -m pytest -m gpu tests/gpu/test_family_gpu.py``.
"""
from __future__ import annotations

import json
import os

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402
from tmlr_runtime.cli import main  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.needs_sm(9, 0)]  # sm_90a cubins

FAMILY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts", "add_family")


def grid(meta):
    return ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n,offset,pattern", [(1 << 20, 0, "i32:16"), (100_003, 0, "i32"), (100_000, 1, "*")])
def test_dtypes_sizes_and_views_through_one_family(dtype, n, offset, pattern):
    family = tr.Kernel.load(FAMILY)
    base = torch.randn(n + offset, device="cuda").to(dtype)
    x, y = base[offset:], torch.randn(n, device="cuda").to(dtype)
    out = torch.empty(n + offset, device="cuda", dtype=dtype)[offset:]
    family(grid, x, y, out, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    chosen = family.choose(x, y, out, n).signature
    want_ptr = f"*{ {torch.float32: 'fp32', torch.float16: 'fp16', torch.bfloat16: 'bf16'}[dtype]}"
    assert chosen.startswith(want_ptr + ("," if offset else ":16,"))
    assert pattern == "*" or chosen.split(", ")[3] == pattern


def test_an_in_place_kernel_tuned_at_run_time_leaves_the_callers_data(cache):
    family = tr.Kernel.load(FAMILY)
    n = 1 << 22
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    want = x + y
    family(grid, x, y, x, n)  # benchmarks both configs first (restore_value=["out_ptr"]): x += y exactly once
    torch.cuda.synchronize()
    torch.testing.assert_close(x, want, rtol=0, atol=0)
    [entry] = json.loads((cache / "tuning" / f"{family.index.sha256}.json").read_text())["entries"]
    assert entry["key"] == [n, "fp32", "fp32", "fp32"] and entry["device"] == torch.cuda.get_device_name()
    assert entry["config"] == min(range(2), key=lambda c: entry["times_ms"][c])


def test_tuning_under_graph_capture_is_refused_and_a_tuned_key_captures(tmp_path):
    family = tr.Kernel.load(FAMILY)
    n = 1 << 16
    x, y, out = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(tr.TuningError, match="captured into a CUDA graph"):
        with torch.cuda.graph(graph, stream=stream):
            family(grid, x, y, out, n)
    torch.cuda.synchronize()
    family(grid, x, y, out, n)  # tuned outside capture
    out.zero_()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        family(grid, x, y, out, n)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


CASES = '''
import torch

def cases():
    for n in (1 << 16, 1 << 24):
        x = torch.randn(n, device="cuda", dtype=torch.float16)
        yield (lambda meta: ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)), (x, x.clone(), torch.empty_like(x), n), {}
'''


def test_tmlr_tune_table_serves_strict_mode(tmp_path, cache):
    (tmp_path / "cases.py").write_text(CASES)
    table = tmp_path / "tuning.json"
    assert main(["tune", FAMILY, "--cases", f"{tmp_path / 'cases.py'}:cases", "--out", str(table)]) == 0
    entries = json.loads(table.read_text())["entries"]
    assert [e["key"][0] for e in entries] == [1 << 16, 1 << 24] and not cache.exists()
    family = tr.Kernel.load(FAMILY, tuning="strict", fallback="error")
    family.tuner.table.update({tuple(e["key"]): e["config"] for e in entries})  # as if shipped as FAMILY/tuning.json
    x = torch.randn(1 << 24, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    family(grid, x, x, out, 1 << 24)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + x, rtol=0, atol=0)
    assert family.choose(x, x, out, 1 << 24).config == entries[1]["config"]
    with pytest.raises(tr.UnseenKeyError):
        family(grid, x, x, out, (1 << 24) - 16)


def test_verify_loads_every_variant_on_the_device(capsys):
    assert main(["verify", FAMILY]) == 0
    assert "every variant loads on this device" in capsys.readouterr().out


def test_the_committed_autotune_example_runs_from_its_carried_over_table():
    # issue 19: examples/autotune/artifacts/matmul/tuning.json, measured on an H200, was carried over by a
    # rebuild that re-stamped it for the index that now records each cubin's sha256; the example loads the
    # family with tuning="strict", fallback="error", so a table that no longer matched would fail every shape
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "examples", "autotune", "artifacts", "matmul", "tuning.json")) as f:
        devices = {e["device"] for e in json.load(f)["entries"]}
    done = subprocess.run([sys.executable, os.path.join(root, "examples", "autotune", "run_matmul.py")], cwd=root,
                          env={**os.environ, "PYTHONPATH": root}, capture_output=True, text=True)
    device = torch.cuda.get_device_name()
    if device in devices:
        assert done.returncode == 0 and done.stdout.startswith("PASS"), done.stdout + done.stderr
    else:  # another GPU: the table has nothing for it, and strict mode refuses to launch untuned, naming the device
        assert done.returncode != 0 and "UnseenKeyError" in done.stderr and device in done.stderr, done.stdout + done.stderr
