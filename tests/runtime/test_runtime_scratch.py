"""Global scratch: allocated per launch (grid programs x size, aligned) after the arguments are packed,
its address packed in the hidden global_scratch slot, freed after the launch whatever the launch did
(returned an error, raised); NULL when size is 0. The tests that replace the Python path's
scratch_alloc/scratch_free plan their kernels for that path; the compiled path allocates through the
driver's entry points, which the last tests watch through the fake driver."""
from __future__ import annotations

import os
import struct

import pytest

import fake_driver
import tmlr_runtime as tr
from fake_driver import fake_launcher, metadata_doc, param

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def scratch(monkeypatch):
    monkeypatch.setattr("tmlr_runtime.launch.compiled.enabled", False)  # the Python path's functions are watched
    log = []

    def alloc(nbytes, align, stream):
        log.append(("alloc", nbytes, align, stream))
        return 0x90000 + 0x100, 0x90000

    def free(raw, stream):
        log.append(("free", raw, stream))

    monkeypatch.setattr("tmlr_runtime.launch.execute.scratch_alloc", alloc)
    monkeypatch.setattr("tmlr_runtime.launch.execute.scratch_free", free)
    return log


def test_scratch_sized_by_grid_and_packed(scratch):
    launch, rec = fake_launcher(metadata_doc([param("n", "i32")], scratch=(256, 128)))
    launch((2, 3), (5,), {}, 42)
    assert scratch == [("alloc", 6 * 256, 128, 42), ("free", 0x90000, 42)]
    p = rec.launches[-1]["params"]
    assert struct.unpack("<i", p[0])[0] == 5
    assert struct.unpack("<Q", p[1])[0] == 0x90100


def test_nothing_allocated_when_packing_fails(scratch):
    # Arguments are packed before the scratch is allocated: a refused call never touches the pool.
    launch, rec = fake_launcher(metadata_doc([param("n", "i32")], scratch=(256, 128)), checks=False)
    with pytest.raises(tr.ScalarArgumentError):
        launch(1, (2**40,), {}, 0)
    assert rec.launches == [] and scratch == []


@pytest.mark.parametrize("cooperative", [False, True], ids=["cuLaunchKernel", "cuLaunchKernelEx"])
def test_scratch_freed_when_the_launch_raises(scratch, cooperative):
    launch, rec = fake_launcher(metadata_doc([param("n", "i32")], scratch=(256, 128), launch_cooperative_grid=cooperative))
    rec.error = TypeError("the bindings refused an argument")
    with pytest.raises(TypeError, match="refused an argument"):
        launch(3, (5,), {}, 7)
    assert len(rec.launches) == 1  # it got as far as the launch call
    assert scratch == [("alloc", 3 * 256, 128, 7), ("free", 0x90000, 7)]


def test_scratch_freed_when_the_driver_refuses_the_launch(scratch):
    launch, rec = fake_launcher(metadata_doc([param("n", "i32")], scratch=(256, 128)))
    rec.result = 701
    with pytest.raises(tr.DriverError, match="CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"):
        launch(2, (5,), {}, 0)
    assert scratch == [("alloc", 2 * 256, 128, 0), ("free", 0x90000, 0)]


def test_scratch_freed_through_the_driver_when_cuLaunchKernel_raises(monkeypatch):
    """The same through Kernel.load and the (fake) driver's cuMemAllocAsync / cuMemFreeAsync."""
    torch = pytest.importorskip("torch")
    with fake_driver.installed() as fake:
        failure: list[BaseException] = []
        real_launch = fake.cuLaunchKernel

        def launch(*args):
            if failure:
                raise failure[0]
            return real_launch(*args)

        monkeypatch.setattr(fake, "cuLaunchKernel", launch)  # before load: the launcher keeps the function it got
        k = tr.Kernel.load(os.path.join(ROOT, "examples", "artifacts", "tma_scale"))
        cuda = fake_driver.fake_cuda_tensor_type(0)
        src, dst = (torch.zeros(64, 64, dtype=torch.float16).as_subclass(cuda) for _ in range(2))
        k((1, 1), src, dst, 64, 64, stream=5)
        assert [e[0] for e in fake.scratch] == ["alloc", "free"] and len(fake.launches) == 1
        failure.append(OverflowError("a value the bindings could not convert"))
        fake.scratch.clear()
        # the compiled path calls the driver's C entry point, which cannot raise: the fake's callback
        # turns the exception into CUDA_ERROR_UNKNOWN
        with pytest.raises(tr.DriverError if k._compiled is not None else OverflowError):
            k((2, 1), src, dst, 64, 64, stream=5)
        assert fake.scratch == [("alloc", 2 * 256, 5), ("free", 0x7F00_0000_0000, 5)]


def test_no_scratch_means_null_and_no_allocation(scratch):
    doc = metadata_doc([param("n", "i32")])
    doc["variants"][0]["scratch"]["hidden_params"] = ["global_scratch", "profile_scratch"]
    launch, rec = fake_launcher(doc)
    launch(4, (5,), {}, 0)
    assert scratch == []
    p = rec.launches[-1]["params"]
    assert [len(b) for b in p] == [4, 8, 8] and p[1] == p[2] == b"\0" * 8
