"""Per-call checks, grids, streams, keyword handling and threads — through ``Kernel`` on the fake
driver, which records each launch (no GPU)."""
from __future__ import annotations

import os
import struct
import threading

import pytest

import tmlr_runtime as tr
from fake_driver import constexpr, equal_to_1, fake_launcher, metadata_doc, param
from tmlr_runtime.launch import compiled, streams
from tmlr_runtime.launch.pointers import tensor_pointer
from tmlr_runtime.artifact.metadata import Parameter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SIG = [param("x", "*fp32", 16), param("n", "i32", 16), param("a", "fp32"), equal_to_1("one"), constexpr("BLOCK", 128)]


@pytest.fixture
def kernel():
    return fake_launcher(metadata_doc(SIG))


def call(launch, *args, grid=1, stream=0, **kwargs):
    launch(grid, args, kwargs, stream)


@pytest.mark.parametrize(
    "args,kwargs,exc,param_name,fix",
    [
        ((0x1000, 32, 1.0), {}, tr.ArgumentCountError, "one", "call it as"),
        ((0x1000, 32, 1.0, 1, 128, 7), {}, tr.ArgumentCountError, None, "call it as"),
        ((0x1000, 32, 1.0, 1), {"bogus": 1}, tr.ArgumentCountError, "bogus", "call it as"),
        ((0x1000, 32, 1.0, 1), {"n": 32}, tr.ArgumentCountError, "n", "given twice"),
        ((0x1000, 32, 1.0, 1), {"BLOCK": 64}, tr.ConstexprMismatchError, "BLOCK", "--constexpr BLOCK=64"),
        ((0x1000, 32, 1.0, 1, 64), {}, tr.ConstexprMismatchError, "BLOCK", "pass 128"),
        ((0x1000, 32, 1.0, 2), {}, tr.ScalarArgumentError, "one", "pass 1"),
        ((0x1000, 33, 1.0, 1), {}, tr.ScalarArgumentError, "n", "multiple of 16"),
        ((0x1000, 2**31 + 16, 1.0, 1), {}, tr.ScalarArgumentError, "n", "must be in"),
        ((0x1000, 32.0, 1.0, 1), {}, tr.ScalarArgumentError, "n", "needs an integer"),
        ((0x1000, 32, "x", 1), {}, tr.ScalarArgumentError, "a", "needs a float"),
        ((0x1000, 32, 1e39, 1), {}, tr.ScalarArgumentError, "a", "overflows"),
        ((0x1008, 32, 1.0, 1), {}, tr.PointerArgumentError, "x", "aligned"),
        (("not a pointer", 32, 1.0, 1), {}, tr.PointerArgumentError, "x", "pass a CUDA torch tensor"),
        ((-5, 32, 1.0, 1), {}, tr.PointerArgumentError, "x", "device pointer"),
    ],
)
def test_checks(kernel, args, kwargs, exc, param_name, fix):
    launch, rec = kernel
    with pytest.raises(exc) as e:
        call(launch, *args, **kwargs)
    assert isinstance(e.value, tr.TmlrError)
    if param_name is not None:
        assert e.value.param == param_name
    assert fix in str(e.value)
    assert rec.launches == []  # nothing reached the driver


def test_good_calls_all_forms(kernel):
    launch, rec = kernel
    call(launch, 0x1000, 32, 1.0, 1)
    call(launch, 0x1000, 32, 1.0, 1, 128)
    call(launch, 0x1000, n=32, a=1.0, one=1, BLOCK=128)
    call(launch, 0x1000, 32, 1.0, True)  # True == 1 for the specialized int
    assert len(rec.launches) == 4
    assert len({tuple(l["params"]) for l in rec.launches}) == 1


def test_checks_off_packs_without_checking():
    launch, rec = fake_launcher(metadata_doc(SIG), checks=False)
    call(launch, 0x1008, 33, 1.0, 2, 64)
    p = rec.launches[-1]["params"]
    assert struct.unpack("<Q", p[0])[0] == 0x1008 and struct.unpack("<i", p[1])[0] == 33
    with pytest.raises(tr.ArgumentCountError):  # the count is always enforced
        call(launch, 0x1000)
    with pytest.raises(tr.ScalarArgumentError):  # and so are scalar ranges
        call(launch, 0x1000, 2**40, 1.0, 1)


@pytest.mark.parametrize(
    "grid,expected",
    [(3, (3, 1, 1)), ((3,), (3, 1, 1)), ((3, 4), (3, 4, 1)), ((3, 4, 5), (3, 4, 5)), ([2, 2], (2, 2, 1)),
     (lambda m: (m["n"] // m["BLOCK"],), (2, 1, 1))],
)
def test_grids(kernel, grid, expected):
    launch, rec = kernel
    call(launch, 0x1000, 256, 1.0, 1, grid=grid)
    assert rec.launches[-1]["grid"] == expected


def test_callable_grid_sees_args_and_constexprs(kernel):
    launch, rec = kernel
    seen = {}

    def grid(meta):
        seen.update(meta)
        return 1

    call(launch, 0x1000, 256, 2.5, 1, grid=grid)
    assert seen == {"x": 0x1000, "n": 256, "a": 2.5, "one": 1, "BLOCK": 128}


@pytest.mark.parametrize("grid", [-1, (1, -1), 2**31, (1, 65536), (1, 1, 65536), 1.5, "4", (1, 2, 3, 4), (), None,
                                  lambda m: -1, lambda m: 1 / 0])
def test_bad_grids(kernel, grid):
    launch, rec = kernel
    with pytest.raises(tr.GridError):
        call(launch, 0x1000, 32, 1.0, 1, grid=grid)
    assert rec.launches == []


def test_cluster_grid_multiplies_and_is_limit_checked():
    launch, rec = fake_launcher(metadata_doc([param("x", "*fp32")], num_ctas=2, cluster_dims=[2, 1, 1]), max_grid=(100, 10, 10))
    launch(7, (0x1000,), {}, 0)
    assert rec.launches[-1]["grid"] == (14, 1, 1)
    assert "config" in rec.launches[-1]  # cluster launches go through cuLaunchKernelEx
    with pytest.raises(tr.GridError) as e:
        launch(51, (0x1000,), {}, 0)
    assert "cluster" in str(e.value)


def test_cooperative_and_pdl_use_launch_ex():
    launch, rec = fake_launcher(metadata_doc([param("x", "*fp32")], launch_cooperative_grid=True))
    launch(3, (0x1000,), {}, 5)
    assert rec.launches[-1]["grid"] == (3, 1, 1) and rec.launches[-1]["stream"] == 5


class _Stream:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


class _TorchLikeStream:
    cuda_stream = 77


def test_streams(kernel):
    launch, rec = kernel
    for given, expected in [(0, 0), (123, 123), (_Stream(456), 456), (_TorchLikeStream(), 77)]:
        call(launch, 0x1000, 32, 1.0, 1, stream=given)
        assert rec.launches[-1]["stream"] == expected
    for bad in ("stream", 1.5, -1, object()):
        with pytest.raises(tr.StreamError):
            call(launch, 0x1000, 32, 1.0, 1, stream=bad)


def test_default_stream_without_torch(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)
    assert streams.default_stream(0) == 0


class FakeTensor:
    """What the pointer checks read from a torch tensor."""

    def __init__(self, device=0, dtype=None, ptr=0x1000):
        import torch

        self._device, self.dtype, self._ptr = device, dtype or torch.float32, ptr

    def get_device(self):
        return self._device

    def data_ptr(self):
        return self._ptr


@pytest.mark.parametrize(
    "tensor_kwargs,fix",
    [({"device": -1}, "CPU tensor"), ({"device": 1}, "cuda:1"), ({"ptr": 0x1004}, "aligned")],
)
def test_tensor_checks(tensor_kwargs, fix):
    p = Parameter("x", "runtime", "*fp32", 16)
    with pytest.raises(tr.PointerArgumentError) as e:
        tensor_pointer(p, FakeTensor(**tensor_kwargs), 0, True)
    assert fix in str(e.value) and e.value.param == "x"
    assert tensor_pointer(p, FakeTensor(**tensor_kwargs), 0, False) == tensor_kwargs.get("ptr", 0x1000)


def test_tensor_dtype_check():
    import torch

    p = Parameter("x", "runtime", "*fp16", 16)
    with pytest.raises(tr.PointerArgumentError) as e:
        tensor_pointer(p, FakeTensor(dtype=torch.float32), 0, True)
    assert "torch.float32" in str(e.value) and ".to(torch.float16)" in str(e.value)
    assert tensor_pointer(p, FakeTensor(dtype=torch.float16), 0, True) == 0x1000


def test_cpu_torch_tensor_rejected(kernel):
    import torch

    launch, rec = kernel
    with pytest.raises(tr.PointerArgumentError) as e:
        call(launch, torch.zeros(4), 32, 1.0, 1)
    assert "CPU tensor" in str(e.value)


def test_launch_while_another_context_is_current_plans_for_it_once():
    """A launch finding another context current loads the module there and launches there; its
    plan serves the next launches in that context, and the first context's plan is kept."""
    import fake_driver

    with fake_driver.installed() as fake:
        k = tr.Kernel.load(os.path.join(ROOT, "examples", "artifacts", "add"))
        k(1, 0x1000, 0x2000, 0x3000, 0)  # n = 0: the fake add kernel touches no memory
        fake.context = 0xC0C1
        k(2, 0x1000, 0x2000, 0x3000, 0)
        k(3, 0x1000, 0x2000, 0x3000, 0)
        fake.context = 0xC0C0
        k(4, 0x1000, 0x2000, 0x3000, 0)
        assert sorted(k._contexts) == [0xC0C0, 0xC0C1]
    assert len(fake.loaded) == 2  # one module per context
    assert [launch["grid"][0] for launch in fake.launches] == [1, 2, 3, 4]


def test_context_handles_without_value_equality_are_compared_as_ints(monkeypatch):
    """Bindings whose context handles compare by identity (a new object per cuCtxGetCurrent) must
    not make every launch look like one in another context."""
    import fake_driver

    class Handle:
        def __init__(self, value):
            self.value = value

        def __int__(self):
            return self.value

    with fake_driver.installed() as fake:
        monkeypatch.setattr(fake, "cuCtxGetCurrent", lambda: (0, Handle(fake.context)))
        k = tr.Kernel.load(os.path.join(ROOT, "examples", "artifacts", "add"))
        for grid in (1, 2):
            k(grid, 0x1000, 0x2000, 0x3000, 0)
        assert list(k._contexts) == [fake.context] and len(fake.launches) == 2


def test_threads_get_their_own_buffers():
    launch, rec = fake_launcher(metadata_doc([param("x", "*fp32"), param("n", "i64")]))
    errors = []

    def work(i):
        try:
            for j in range(300):
                launch(1, (0x1000 * (i + 1), i * 1000 + j), {}, 0)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    seen = [(struct.unpack("<Q", r["params"][0])[0], struct.unpack("<q", r["params"][1])[0]) for r in rec.launches]
    assert len(seen) == 2400 and rec.c_calls.get("cuLaunchKernel", 0) == (2400 if compiled.enabled else 0)  # the compiled path's buffers too
    for ptr, n in seen:
        assert ptr == 0x1000 * (n // 1000 + 1)  # each launch saw its own thread's values
