"""Every accepted form of pointer and stream argument on a real GPU, each launch checked against torch.

The CPU tests show these with fakes; here they meet the real things: CuPy arrays, DLPack producers
(torch and CuPy behind a wrapper that has only ``__dlpack__``/``__dlpack_device__``), a plain object
with ``__cuda_array_interface__``, one with only ``data_ptr()`` and ``dtype`` (as Triton's ``reinterpret`` wrapper,
TensorWrapper), a stream given through ``__cuda_stream__``, launches of a kernel
loaded with ``checks=False``, the driver's answer about host and device memory, and which cuda-python
bindings ran all this (``TMLR_EXPECT_CUDA_BINDINGS=12.9`` makes a run with the 12.x bindings first on
PYTHONPATH prove that it used them). Uses ``examples/artifacts/add`` (sm_80 and sm_90a cubins):
``python -m pytest -m gpu tests/gpu/test_runtime_gpu_inputs.py``.
"""
from __future__ import annotations

import importlib.util
import os
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402
from tmlr_runtime import driver  # noqa: E402

pytestmark = pytest.mark.gpu

ADD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "artifacts", "add")
N = 100_000
GRID = (N + 1023) // 1024


def cupy() -> Any:
    """CuPy, or a skip naming what did not run; a CuPy that is installed but fails to import is an error."""
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed (pip install cupy-cuda12x): the CuPy cases did not run")
    import cupy as cp

    return cp


class DLPackOnly:
    """A DLPack producer and nothing else: no __cuda_array_interface__, not a torch tensor."""

    def __init__(self, array: Any) -> None:
        self._array = array

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._array.__dlpack_device__()


class ArrayInterface:
    """A plain object with a version-3 ``__cuda_array_interface__`` for ``n`` fp32 at ``address``."""

    def __init__(self, address: int, n: int = N, keep: Any = None) -> None:
        self.__cuda_array_interface__ = {"data": (address, False), "shape": (n,), "typestr": "<f4", "version": 3}
        self._keep = keep  # the owner of the memory lives as long as this object

    @classmethod
    def of(cls, t: Any) -> "ArrayInterface":
        return cls(t.data_ptr(), t.numel(), keep=t)


class Wrapped:
    """``data_ptr()`` and ``dtype`` only, as ``triton.reinterpret(t, dtype)`` gives (no ``get_device()``, no ``device``)."""

    def __init__(self, base: Any, dtype: Any) -> None:
        self._base, self.dtype = base, dtype

    def data_ptr(self) -> int:
        return self._base.data_ptr()


class StreamProtocol:
    """A stream known only through the CUDA stream protocol's ``__cuda_stream__`` -> (version, handle)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __cuda_stream__(self) -> tuple[int, int]:
        return 0, self._stream.cuda_stream


@pytest.fixture
def vectors() -> tuple[Any, Any, Any]:
    x = torch.randn(N, device="cuda")
    y = torch.randn(N, device="cuda")
    return x, y, torch.zeros_like(x)


def launch_and_check(k: tr.Kernel, x: Any, y: Any, out: Any, result: Any, expected: Any, **kwargs: Any) -> None:
    """Launch ``k(x, y, out)`` and check ``result`` (a torch view of out's memory) against ``expected``."""
    result.zero_()
    torch.cuda.synchronize()
    k(GRID, x, y, out, N, **kwargs)
    torch.cuda.synchronize()
    assert torch.equal(result, expected)


def test_cupy_arrays() -> None:
    cp = cupy()
    x = cp.arange(N, dtype=cp.float32) * 0.5
    y = cp.full(N, 3.25, dtype=cp.float32)
    out = cp.zeros(N, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    k = tr.Kernel.load(ADD)
    launch_and_check(k, x, y, out, torch.from_dlpack(out), torch.from_dlpack(x) + torch.from_dlpack(y))


def test_dlpack_producer_torch(vectors) -> None:
    x, y, out = vectors
    assert not hasattr(DLPackOnly(x), "__cuda_array_interface__")
    launch_and_check(tr.Kernel.load(ADD), DLPackOnly(x), DLPackOnly(y), DLPackOnly(out), out, x + y)


def test_dlpack_producer_cupy(vectors) -> None:
    cp = cupy()
    x, y, _ = vectors
    cx, cy, cout = cp.asarray(x), cp.asarray(y), cp.zeros(N, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    launch_and_check(tr.Kernel.load(ADD), DLPackOnly(cx), DLPackOnly(cy), DLPackOnly(cout), torch.from_dlpack(cout), x + y)


def test_plain_cuda_array_interface_objects(vectors) -> None:
    x, y, out = vectors
    k = tr.Kernel.load(ADD)
    launch_and_check(k, ArrayInterface.of(x), ArrayInterface.of(y), ArrayInterface.of(out), out, x + y)
    launch_and_check(k, ArrayInterface.of(x), y, out.data_ptr(), out, x + y)  # mixed forms, an int address


def test_data_ptr_objects(vectors) -> None:
    """Their device is the driver's answer (test_host_memory_is_refused_and_device_memory_accepted), their dtype read by name."""
    x, y, out = vectors
    k = tr.Kernel.load(ADD)
    launch_and_check(k, Wrapped(x, torch.float32), Wrapped(y, "fp32"), Wrapped(out, None), out, x + y)
    with pytest.raises(tr.PointerArgumentError, match="reinterpret the tensor as fp32"):
        k(GRID, Wrapped(x, torch.float16), y, out, N)


def test_stream_given_through_cuda_stream_protocol(vectors) -> None:
    """The launch must be ordered after work already queued on the given stream: ``x`` changes only
    after ~0.1 s of spinning on ``s``. The same launch on torch's current stream (not ordered with
    ``s``: torch's streams are non-blocking) runs first and sees the old ``x``, which shows that the
    check can fail."""
    x, y, out = vectors
    k = tr.Kernel.load(ADD)
    old_x, new_x = x.clone(), torch.randn_like(x)
    s = torch.cuda.Stream()
    control = torch.zeros_like(out)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)
        x.copy_(new_x)
    k(GRID, x, y, out, N, stream=StreamProtocol(s))
    k(GRID, x, y, control, N)  # torch's current stream
    torch.cuda.synchronize()
    assert torch.equal(out, new_x + y)
    assert torch.equal(control, old_x + y)


def test_checks_false_launches_every_form(vectors) -> None:
    x, y, out = vectors
    k = tr.Kernel.load(ADD, checks=False)
    assert k.checks is False
    launch_and_check(k, x, y, out, out, x + y)
    for forms in [(ArrayInterface.of(x), DLPackOnly(y), out.data_ptr()), (x.data_ptr(), ArrayInterface.of(y), DLPackOnly(out))]:
        launch_and_check(k, *forms, out, x + y)
    launch_and_check(k, x, y, out, out, x + y, stream=StreamProtocol(torch.cuda.current_stream()))


def test_host_memory_is_refused_and_device_memory_accepted(vectors) -> None:
    """The driver's pointer attributes decide, for __cuda_array_interface__ and data_ptr() objects: pinned host memory
    (known to CUDA as host memory) and pageable host memory (unknown to CUDA) are refused with the
    typed error; device memory is accepted. Nothing refused reaches the GPU."""
    x, y, out = vectors
    k = tr.Kernel.load(ADD)
    pinned = torch.randn(N).pin_memory()
    pageable = torch.randn(N)
    cases = [(ArrayInterface.of(pinned), "the array lives in host memory"),
             (ArrayInterface.of(pageable), "is not memory the CUDA driver knows"),
             (DLPackOnly(pageable), "move the array to the GPU first"),
             (Wrapped(pinned, torch.float32), "the array lives in host memory"),
             (Wrapped(pageable, torch.float32), "is not memory the CUDA driver knows")]
    for host, fix in cases:
        with pytest.raises(tr.PointerArgumentError) as e:
            k(GRID, host, y, out, N)
        assert e.value.param == "x_ptr" and fix in str(e.value)
    torch.cuda.synchronize()
    assert not out.any()  # no refused call ran
    launch_and_check(k, ArrayInterface.of(x), y, out, out, x + y)


def test_runs_on_the_expected_cuda_python_bindings(vectors) -> None:
    import cuda.bindings

    version = str(cuda.bindings.__version__)
    assert int(version.split(".")[0]) in (12, 13), version
    assert driver.api().__name__ in ("cuda.bindings.driver", "cuda.cuda")
    expected = os.environ.get("TMLR_EXPECT_CUDA_BINDINGS")
    if expected:
        assert version == expected or version.startswith(expected + "."), (version, expected)
    x, y, out = vectors
    launch_and_check(tr.Kernel.load(ADD), x, y, out, out, x + y)
