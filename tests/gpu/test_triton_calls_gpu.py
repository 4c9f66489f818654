"""Calls Triton's own launcher takes, on a real GPU (issue 29; the CPU tests: tests/runtime/test_runtime_triton_calls.py):
``num_warps=`` equal to the artifact's beside the arguments (another value refused); an empty grid, which launches
nothing (an object with only ``data_ptr()`` and ``dtype``: tests/gpu/test_runtime_gpu_inputs.py). Uses
``examples/artifacts/add`` (sm_80 and sm_90a cubins, num_warps 4). And the conformance losses of the small selection
(tests/conformance/results-small.json), served as the conformance plugin serves them: Triton's JIT compiles
(tests/gpu/triton_calls_kernels.py), tmlr-build builds the cache entry, tmlr_runtime launches the call, and the
result is checked: a dtype constexpr, pointers to unsigned ints (a torch.uint8 tensor, Triton's reinterpret wrapper
of uint32), a NamedTuple holding a @triton.jit function defined in a function, a builtin function of Triton's, an int
annotated tl.uint8, a tl.constexpr parameter given a tuple (as its elements, and whole: test_reshape's). ``python -m pytest -m gpu tests/gpu/test_triton_calls_gpu.py`` (Triton installed)."""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402

pytestmark = pytest.mark.gpu

ADD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "artifacts", "add")
N = 100_000
GRID = (N + 1023) // 1024


@pytest.fixture
def vectors() -> tuple[Any, Any, Any]:
    x = torch.randn(N, device="cuda")
    return x, torch.randn(N, device="cuda"), torch.zeros_like(x)


def test_num_warps_equal_to_the_build_is_taken_and_another_refused(vectors) -> None:
    x, y, out = vectors
    k = tr.Kernel.load(ADD)
    assert k.variant.num_warps == 4
    k[GRID](x, y, out, N, num_warps=4, num_stages=3, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)
    out.zero_()
    with pytest.raises(tr.LaunchOptionMismatchError, match="built with num_warps=4, called with num_warps=8"):
        k[GRID](x, y, out, N, num_warps=8)
    torch.cuda.synchronize()
    assert not out.any()


@pytest.mark.parametrize("grid", [0, (0,), (GRID, 0), lambda meta: ((meta["n"] * 0 + 1023) // meta["BLOCK"],)],
                         ids=["0", "(0,)", "(GRID, 0)", "callable"])
def test_an_empty_grid_launches_nothing(vectors, grid) -> None:
    """As triton.cdiv(0, BLOCK) in a Triton call: the arguments are checked, nothing runs, nothing fails later."""
    x, y, out = vectors
    k = tr.Kernel.load(ADD)
    k(grid, x, y, out, N)
    with pytest.raises(tr.PointerArgumentError):
        k(grid, x[1:], y, out, N)  # still checked
    torch.cuda.synchronize()
    assert not out.any()
    k(GRID, x, y, out, N)  # and the next launch runs
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


# -- the conformance losses, served as the plugin serves them -------------------------------------------------------

@pytest.fixture
def served(tmp_path, monkeypatch) -> Callable[..., None]:
    """``call(fn, grid, *args, **kwargs)``: ``fn[grid](*args, **kwargs)`` with Triton compiling and tmlr building and
    launching (tests/conformance/conformance_serve.py), then synchronized; every call must be served."""
    pytest.importorskip("triton")
    from triton.runtime.jit import JITFunction

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conformance"))
    import conformance_serve

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))  # the entries this test's calls write
    server = conformance_serve.Server(str(tmp_path / "work"))
    calls = []

    def call(fn: Any, grid: Any, *args: Any, **kwargs: Any) -> None:
        server.serve(JITFunction.run, fn, args, grid, kwargs)
        calls.append(fn)
        torch.cuda.synchronize()

    yield call
    assert server.served == len(calls) and not server.failures


def test_conformance_losses_are_served_and_compute_what_triton_does(served) -> None:
    import triton.language as tl
    from triton.language.extra.cuda import globaltimer
    from triton.runtime.jit import reinterpret

    import triton_calls_kernels as k

    x = torch.randint(-100, 100, (1024,), dtype=torch.int8, device="cuda")  # test_cast: TO_TYPE=tl.int8
    z = torch.zeros_like(x)
    served(k.cast_kernel, (1,), x, z, TO_TYPE=tl.int8, BITCAST=False, SIZE=1024, num_warps=1)
    assert torch.equal(z, x)

    u8 = torch.randint(0, 256, (128,), dtype=torch.uint8, device="cuda")  # test_masked_load: *u8
    out = torch.full_like(u8, 7)
    served(k.masked_copy, (1,), u8, out, 100, 128)
    assert torch.equal(out[:100], u8[:100]) and not out[100:].any()

    base = torch.randint(-2**31, 2**31 - 1, (32,), dtype=torch.int32, device="cuda")  # test_reduce1d: *u32
    copy = torch.zeros_like(base)
    served(k.masked_copy, (1,), reinterpret(base, tl.uint32), reinterpret(copy, tl.uint32), 32, 32)
    assert torch.equal(copy, base)

    a = torch.tensor([5.2], device="cuda")  # test_namedtuple: Function(mul, (a,)), mul defined in a function
    xf, y = torch.randn(64, device="cuda"), torch.zeros(64, device="cuda")
    served(k.apply_closure, (1,), k.Function(k.make_mul(), (a,)), xf, y, 64)
    assert torch.allclose(y, xf * a)

    t = torch.zeros(1, dtype=torch.int64, device="cuda")  # test_globaltimer: func=tl.extra.cuda.globaltimer
    served(k.timer_kernel, (1,), t, globaltimer)
    assert t.item() > 0

    ints = torch.zeros(16, device="cuda")  # test_int_annotation[False-8]: v: tl.uint8 given 3
    served(k.annotated_store_at("tl.uint8"), (1,), ints, 3)
    assert ints[3].item() == 3 and ints.sum().item() == 3

    m = torch.arange(0, 64, device="cuda").reshape(8, 8)  # test_passing_tuple_with_constexpr: shape: tl.constexpr
    expected = 8 * m
    served(k.m_to_the_n, (1,), m, m.shape, m.stride(), (2, 3))
    assert torch.equal(m, expected)

    flat = torch.randn(64, device="cuda")  # test_reshape[formats0]: out_tuple: tl.constexpr given (8, 8), recorded whole
    square = torch.zeros(8, 8, device="cuda")
    served(k.reshape_kernel, (1,), square, flat, (8, 8))
    assert torch.equal(square, flat.reshape(8, 8))
