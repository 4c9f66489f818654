"""The runtime on a real GPU: every launch feature against torch results.

Artifacts come from ``examples/artifacts`` and ``tests/gpu/artifacts``, both built on a CPU by
tmlr-build and committed; nothing here imports Triton. Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_runtime_gpu.py``.
"""
from __future__ import annotations

import math
import os
import threading

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402
from skip_reasons import NEEDS_SM80, NEEDS_SM90  # noqa: E402
from tmlr_runtime import driver  # noqa: E402

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def art(name: str) -> str:
    """The artifact folder ``name``: from $TMLR_GPU_ARTIFACTS first when set (e.g. the examples built with
    another Triton release: ``tmlr-build --python VENV/bin/python --spec examples/kernels.json -o DIR``)."""
    other = [os.environ["TMLR_GPU_ARTIFACTS"]] if os.environ.get("TMLR_GPU_ARTIFACTS") else []
    for base in (*other, os.path.join(ROOT, "examples", "artifacts"), os.path.join(ROOT, "tests", "gpu", "artifacts")):
        if os.path.isdir(os.path.join(base, name)):
            return os.path.join(base, name)
    raise FileNotFoundError(name)


def capability() -> tuple[int, int]:
    return torch.cuda.get_device_capability()


needs_sm90 = pytest.mark.needs_sm(9, 0)  # sm_90a cubins


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


@pytest.fixture
def vectors():
    n = 100_000
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    return x, y, torch.empty_like(x), n


def test_vector_add_all_call_forms(vectors):
    x, y, out, n = vectors
    k = tr.Kernel.load(art("add"))
    k(cdiv(n, 1024), x, y, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)
    out.zero_()
    k[(cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)
    out.zero_()
    k[lambda meta: (cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n, stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


def test_every_scalar_type_arrives_intact():
    k = tr.Kernel.load(art("scalars"))
    ints = torch.zeros(8, dtype=torch.int64, device="cuda")
    floats = torch.zeros(4, dtype=torch.float64, device="cuda")
    values = dict(b=True, i8=-100, i16=-30000, i32=-2_000_000_000, i64=-(2**62) + 5, u32=4_000_000_000,
                  u64=2**64 - 3, h=-2.25, bh=3.140625, f=1.25e-3, d=math.pi)
    k(1, ints, floats, *values.values())
    torch.cuda.synchronize()
    got = ints.tolist()
    assert got[:7] == [1, -100, -30000, -2_000_000_000, -(2**62) + 5, 4_000_000_000, -3]
    fl = floats.tolist()
    assert fl[0] == -2.25  # fp16 passed as 2 bytes (Triton 3.3's launcher passes 4 and the kernel sees 0.0)
    assert fl[1] == 3.140625
    assert fl[2] == torch.tensor(1.25e-3, dtype=torch.float32).item()
    assert fl[3] == math.pi


@pytest.mark.parametrize("config", ["matmul", "matmul_big_smem"])
def test_fp16_matmul(config):
    k = tr.Kernel.load(art(config))
    bm, bn = k.metadata.constexprs["BM"], k.metadata.constexprs["BN"]
    bk = k.metadata.constexprs["BK"]
    M, N, K = 2 * bm, 2 * bn, 4 * bk
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    k((M // bm, N // bn), a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))
    torch.cuda.synchronize()
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=0.1, rtol=0.02)
    if config == "matmul_big_smem":
        assert k.variant.shared > 48 * 1024


@needs_sm90
def test_cluster_kernel_num_ctas_2(vectors):
    x, y, out, n = vectors
    k = tr.Kernel.load(art("cluster_add"))
    assert k.variant.cluster_dims == (2, 1, 1)
    k(cdiv(n, 1024), x, y, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


def test_cooperative_launch_grid_barrier():
    k = tr.Kernel.load(art("grid_sync"))
    assert k.variant.cooperative
    grid = torch.cuda.get_device_properties(0).multi_processor_count * 2
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.zeros(grid, dtype=torch.int32, device="cuda")
    k(grid, counter, out)
    torch.cuda.synchronize()
    # every program passed the barrier only after all had arrived
    assert int(counter.item()) == grid
    assert bool((out == grid).all())


@needs_sm90
def test_device_side_tma_uses_global_scratch():
    k = tr.Kernel.load(art("tma_scale"))
    assert k.variant.scratch_size > 0
    M, N = 256, 512
    src = torch.randn(M, N, device="cuda", dtype=torch.float16)
    dst = torch.zeros_like(src)
    k((M // 64, N // 64), src, dst, M, N)
    torch.cuda.synchronize()
    assert torch.equal(dst, src * 2)


@needs_sm90
def test_host_tma_descriptor():
    k = tr.Kernel.load(art("tma_host_copy"))
    M, N = 128, 256
    src = torch.randn(M, N, device="cuda", dtype=torch.float16)
    dst = torch.zeros_like(src)
    desc = tr.make_tensor_map(src, block_shape=(64, 64))
    k((M // 64, N // 64), desc, dst, N)
    torch.cuda.synchronize()
    assert torch.equal(dst, src)


@pytest.mark.parametrize("name, major", [("desc_scale", 9), ("desc_scale_sm80", 8)])
def test_host_tensor_descriptors(name, major):
    """Triton 3.9.0 artifacts of examples/kernels/host_desc.py: out = 2 * in, 64x128 blocks; TMA form
    (CUtensorMap encoded per launch) on sm_90a, pointer form (base, shapes, strides, padding, tf32) on sm_8x."""
    if not torch.cuda.is_available() or capability()[0] != major or (major == 9 and capability() != (9, 0)):
        pytest.skip(f"{NEEDS_SM80 if major == 8 else NEEDS_SM90}: {name} has a cubin for compute capability {major}.x only")
    k = tr.Kernel.load(art(name))
    M, N = 256, 512
    src = torch.randn(M, N, device="cuda", dtype=torch.float16)
    dst = torch.zeros_like(src)
    k((M // 64, N // 128), tr.TensorDescriptor.from_tensor(src, [64, 128]), tr.TensorDescriptor.from_tensor(dst, [64, 128]))
    torch.cuda.synchronize()
    assert torch.equal(dst, src * 2)
    # a strided view (a row pitch of 768 elements) goes through the same descriptor
    wide = torch.randn(M, 768, device="cuda", dtype=torch.float16)
    dst.zero_()
    k((M // 64, N // 128), tr.TensorDescriptor.from_tensor(wide[:, :N], [64, 128]), tr.TensorDescriptor.from_tensor(dst, [64, 128]))
    torch.cuda.synchronize()
    assert torch.equal(dst, wide[:, :N] * 2)


def test_cuda_graph_capture_and_replay(vectors):
    x, y, out, n = vectors
    k = tr.Kernel.load(art("add"))
    k(cdiv(n, 1024), x, y, out, n)  # load and warm outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        k(cdiv(n, 1024), x, y, out, n)
    out.zero_()
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


@needs_sm90
def test_scratch_kernel_under_graph_capture_and_two_streams():
    k = tr.Kernel.load(art("tma_scale"))
    M, N = 256, 256
    srcs = [torch.randn(M, N, device="cuda", dtype=torch.float16) for _ in range(2)]
    dsts = [torch.zeros_like(s) for s in srcs]
    streams = [torch.cuda.Stream() for _ in range(2)]
    torch.cuda.synchronize()
    for _ in range(50):
        for s, src, dst in zip(streams, srcs, dsts):
            k((M // 64, N // 64), src, dst, M, N, stream=s)
    torch.cuda.synchronize()
    for src, dst in zip(srcs, dsts):
        assert torch.equal(dst, src * 2)
    g = torch.cuda.CUDAGraph()
    dsts[0].zero_()
    with torch.cuda.graph(g):
        k((M // 64, N // 64), srcs[0], dsts[0], M, N)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(dsts[0], srcs[0] * 2)


def test_two_streams(vectors):
    x, y, out, n = vectors
    k = tr.Kernel.load(art("add"))
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    out2 = torch.empty_like(out)
    y2 = torch.randn_like(y)
    torch.cuda.synchronize()
    k(cdiv(n, 1024), x, y, out, n, stream=s1)
    k(cdiv(n, 1024), x, y2, out2, n, stream=s2.cuda_stream)
    with torch.cuda.stream(s2):
        k(cdiv(n, 1024), x, y2, out2, n)  # torch's current stream when none is given
    torch.cuda.synchronize()
    assert torch.equal(out, x + y) and torch.equal(out2, x + y2)


def test_eight_threads_one_kernel():
    k = tr.Kernel.load(art("add"))
    n = 4096
    xs = [torch.full((n,), float(i), device="cuda") for i in range(8)]
    ys = [torch.full((n,), 0.5, device="cuda") for _ in range(8)]
    outs = [torch.zeros(n, device="cuda") for _ in range(8)]
    torch.cuda.synchronize()
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            torch.cuda.set_device(0)
            s = torch.cuda.Stream()
            for _ in range(500):
                k(cdiv(n, 1024), xs[i], ys[i], outs[i], n, stream=s)
            s.synchronize()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(8):
        assert torch.equal(outs[i], xs[i] + 0.5)


def test_errors_are_typed_and_not_sticky(vectors):
    x, y, out, n = vectors
    k = tr.Kernel.load(art("add"))
    cases = [
        (lambda: k(1, x.cpu(), y, out, n), tr.PointerArgumentError),
        (lambda: k(1, x.half(), y, out, n), tr.PointerArgumentError),
        (lambda: k(1, x[1:], y, out, n), tr.PointerArgumentError),
        (lambda: k(1, x, y, out, 2**40), tr.ScalarArgumentError),
        (lambda: k(1, x, y, out), tr.ArgumentCountError),
        (lambda: k(-1, x, y, out, n), tr.GridError),  # a grid of 0 blocks launches nothing, as in Triton
        (lambda: k(1, x, y, out, n, BLOCK=512), tr.ConstexprMismatchError),
        (lambda: k(1, x, y, out, n, stream="s"), tr.StreamError),
    ]
    for call, exc in cases:
        with pytest.raises(exc):
            call()
    out.zero_()
    k(0, x, y, out, n)  # an empty grid: checked, nothing launched
    torch.cuda.synchronize()
    assert not out.any()
    k(cdiv(n, 1024), x, y, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


def test_load_again_does_no_driver_work():
    k = tr.Kernel.load(art("add"))
    modules = dict(driver.PROCESS.modules)
    assert tr.Kernel.load(art("add")) is k
    unchecked = tr.Kernel.load(art("add"), checks=False)
    assert unchecked is not k and unchecked.function is k.function
    assert driver.PROCESS.modules == modules  # no module loaded again


@pytest.mark.needs_gpus(2)
def test_launch_while_second_device_current():
    k = tr.Kernel.load(art("add"))
    n = 10_000
    for dev in (0, 1, 0, 1):
        with torch.cuda.device(dev):
            x = torch.randn(n, device=f"cuda:{dev}")
            y = torch.randn(n, device=f"cuda:{dev}")
            out = torch.empty_like(x)
            k(cdiv(n, 1024), x, y, out, n)
            torch.cuda.synchronize()
            assert torch.equal(out, x + y)
    x1 = torch.randn(n, device="cuda:1")
    with torch.cuda.device(0), pytest.raises(tr.PointerArgumentError):
        k(1, x1, x1, x1, n)
