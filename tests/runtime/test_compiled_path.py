"""The compiled launch path (tmlr_runtime/launch/_fastlaunch.c) against the Python one, with the fake driver.

Each case launches one kernel twice, once planned for each path: the same bytes, grid, block and
stream reach the driver, or the same typed error with the same message comes back and nothing was
launched. The fake device has ordinal -1, so plain CPU torch tensors pass as tensors on the launch
device and take the compiled path's own tensor reads (a FakeCudaTensor, a subclass, goes through the
Python converter, as in the Python path). The fake counts the calls that came through its C entry
points, which shows the compiled path ran them. The whole suite also runs on each path (CI runs it
again with TMLR_PURE_PYTHON=1): test_runtime_calls' eight threads share one executor's buffers there.
"""
from __future__ import annotations

import hashlib
import os
import sys
from typing import Any

import numpy as np
import pytest

from tmlr_runtime import records
import tmlr_runtime as tr
from family_sample import make_family, signature
from fake_driver import (H200, ROOT, constexpr, equal_to_1, fake_cuda_tensor_type, fake_launcher, installed, metadata_doc, nop_cubin, param,
                         write_artifact)
from tmlr_runtime import driver as _driver
from tmlr_runtime.family.choose import fast_key
from tmlr_runtime.launch import compiled

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(compiled.fastlaunch is None, reason=f"no compiled path here: {compiled.why_not}")

SCALARS = [param("a", "*fp32", 16), param("b", "*fp16"), param("n", "i32", 16), param("i8", "i8"), param("u8", "u8"),
           param("i16", "i16"), param("u16", "u16"), param("u32", "u32"), param("i64", "i64"), param("u64", "u64"),
           param("h", "fp16"), param("f", "fp32"), param("d", "fp64"), param("bf", "bf16"), param("flag", "i1"),
           equal_to_1("one"), param("tail", "i32"), constexpr("BLOCK", 64)]


def good_args() -> list[Any]:
    return [torch.zeros(64), torch.zeros(64, dtype=torch.float16), 4096, -5, 200, -300, 60000, 2**32 - 1, -(2**40), 2**64 - 1,
            1.5, -2.25, 1e300, 3.0, True, 1, 7]


def outcome(doc: dict[str, Any], path: str, args: list[Any], kwargs: dict[str, Any] | None = None, grid: Any = 2,
            stream: Any = 5, checks: bool = True, device: int = -1) -> tuple[Any, ...]:
    """What a launch on ``path`` gave: ("launched", what the driver got, came through C) or (error type, message)."""
    compiled.enabled = path == "compiled"
    try:
        launch, fake = fake_launcher(doc, checks=checks, device=device)
        try:
            with installed(records.replace(H200, ordinal=device)):  # the Python path allocates global scratch through
                # the module's driver, and a pointer's device (of an object that has only data_ptr()) is asked of it
                launch(grid, tuple(args), kwargs or {}, stream)
        except tr.TmlrError as e:
            assert fake.launches == [], "a refused call reached the driver"
            return type(e), str(e)
    finally:
        compiled.enabled = compiled.fastlaunch is not None
    if not fake.launches:  # an empty grid: checked, nothing launched
        return "nothing launched", None, None
    record = {k: v for k, v in fake.launches[-1].items() if k != "config"}
    config = fake.launches[-1].get("config")
    if config is not None:  # the launch attributes: test_launch_attributes
        record["ex"] = (config.blockDimX, config.blockDimY, config.blockDimZ, config.sharedMemBytes)
    return "launched", record, fake.c_calls.get("cuLaunchKernel", 0) + fake.c_calls.get("cuLaunchKernelEx", 0)


def same_on_both_paths(*a: Any, **k: Any) -> tuple[Any, ...]:
    c, p = outcome(*a, path="compiled", **k), outcome(*a, path="python", **k)
    assert c[:2] == p[:2]
    if c[0] == "launched":
        assert c[2] == 1 and p[2] == 0  # the compiled path called the driver from C, the Python path did not
    return c


class Wrapped:
    """As Triton's reinterpret wrapper (TensorWrapper): data_ptr() and dtype, no get_device()."""

    def __init__(self, address: Any, dtype: Any) -> None:
        self.address, self.dtype = address, dtype

    def data_ptr(self) -> Any:
        return self.address


def with_arg(name: str, value: Any) -> list[Any]:
    names = [p["name"] for p in SCALARS if p["kind"] != "constexpr"]
    args = good_args()
    args[names.index(name)] = value
    return args


def test_every_scalar_type_packs_the_same_bytes():
    got = same_on_both_paths(metadata_doc(SCALARS), args=good_args())
    assert got[1]["grid"] == (2, 1, 1) and got[1]["stream"] == 5


@pytest.mark.parametrize("name,value", [
    ("a", None), ("a", 0x7000_0000), ("n", np.int64(32)), ("i8", np.int8(-3)), ("f", 3), ("d", np.float32(0.5)),
    ("flag", 0), ("flag", np.bool_(True)), ("flag", 2), ("flag", -(2**31)), ("flag", np.int64(3)), ("bf", float("inf")),
    ("h", float("nan")), ("one", True),
    ("a", torch.zeros(64).as_subclass(fake_cuda_tensor_type(-1))), ("a", Wrapped(0x7000_0000, torch.float32)),
    ("b", Wrapped(0x7000_0008, "fp16")),
], ids=lambda v: type(v).__name__)
def test_other_accepted_values_pack_the_same_bytes(name, value):
    same_on_both_paths(metadata_doc(SCALARS), args=with_arg(name, value))


@pytest.mark.parametrize("name,value", [
    ("a", torch.zeros(64, dtype=torch.float16)), ("a", torch.zeros(65)[1:]), ("a", torch.zeros(64).as_subclass(fake_cuda_tensor_type(1))),
    ("a", "x"), ("a", torch.zeros(4).to_sparse()), ("b", torch.zeros(64)), ("n", 4001), ("n", 2**31), ("n", 16.0),
    ("i8", 128), ("u8", -1), ("i16", 2**15), ("u16", 2**16), ("u32", -1), ("i64", 2**63), ("u64", 2**64), ("u64", -1),
    ("h", 1e6), ("f", 1e39), ("f", "x"), ("d", None), ("bf", "x"), ("flag", 2**31), ("flag", 0.5), ("one", 2), ("tail", 1.5),
    ("tail", np.array([1, 2])), ("a", Wrapped(0x7000_0000, torch.float16)), ("a", Wrapped(0x7000_0008, None)),
    ("a", Wrapped("0x7000", None)),
], ids=lambda v: type(v).__name__)
def test_bad_values_raise_the_same_error(name, value):
    got = same_on_both_paths(metadata_doc(SCALARS), args=with_arg(name, value))
    assert issubclass(got[0], tr.TmlrError)


@pytest.mark.parametrize("grid", [0, (4, 0), (0, 2, 1), lambda meta: 0, -1, (2, -1), 2**31, (1, 65536), (1, 1, 1, 1), (), 1.5, "4", None, np.array([4, 1]), True,
                                  lambda meta: meta["missing"], (3,), (3, 2, 1), [4, 2], np.int64(3), lambda meta: (meta["n"] // 2048,)],
                         ids=repr)
def test_grids_give_the_same_launch_or_error(grid):
    same_on_both_paths(metadata_doc(SCALARS), args=good_args(), grid=grid)


@pytest.mark.parametrize("stream", [None, 0, 7, -1, 2**64, "s", 1.5, True, np.int64(3)], ids=repr)
def test_streams_give_the_same_launch_or_error(stream):
    same_on_both_paths(metadata_doc(SCALARS), args=good_args(), stream=stream)


@pytest.mark.parametrize("kwargs,cut", [({"BLOCK": 64}, 0), ({"BLOCK": 32}, 0), ({"tail": 7}, 1), ({"bogus": 1}, 0), ({}, 1), ({}, -1),
                                        ({"num_warps": 4, "num_ctas": 1}, 0), ({"num_warps": 8}, 0), ({"num_stages": 3}, 0)],
                         ids=repr)
def test_keywords_and_argument_counts(kwargs, cut):
    args = good_args()
    args = args[: len(args) - cut] if cut >= 0 else args + [64, 65]
    same_on_both_paths(metadata_doc(SCALARS), args=args, kwargs=kwargs)


@pytest.mark.parametrize("checks", [True, False])
def test_checks_off_skips_the_same_checks(checks):
    for name, value in [("a", torch.zeros(64, dtype=torch.float16)), ("a", torch.zeros(65)[1:]), ("n", 4001), ("one", 2),
                        ("n", 2**31), ("flag", 7)]:
        same_on_both_paths(metadata_doc(SCALARS), args=with_arg(name, value), checks=checks)


@pytest.mark.parametrize("launch", [{"num_ctas": 2, "cluster_dims": [2, 1, 1]}, {"launch_cooperative_grid": True},
                                    {"launch_pdl": True}, {"scratch": (256, 128)}, {"scratch": (64, 1024), "launch_pdl": True}],
                         ids=repr)
def test_launch_kinds(launch):
    doc = metadata_doc([param("x", "*fp32", 16), param("n", "i32")], **launch)
    got = same_on_both_paths(doc, args=[torch.zeros(16), 5], grid=(3, 2))
    assert got[1]["grid"][1] == 2


def test_tma_descriptor_bytes():
    doc = metadata_doc([param("n", "i8"), param("desc", "nvTmaDesc"), param("m", "i32")])
    same_on_both_paths(doc, args=[3, bytes(range(128)), 9])
    same_on_both_paths(doc, args=[3, bytes(127), 9])


def test_a_kernel_without_arguments():
    assert same_on_both_paths(metadata_doc([]), args=[])[1]["params"] == [bytes(8)]


def test_launch_attributes():
    """cuLaunchKernelEx gets the attributes attributes.launch_config gives the Python path, as numbers."""
    A = _driver.api().CUlaunchAttributeID
    doc = metadata_doc([param("x", "*fp32", 16)], num_ctas=2, cluster_dims=[2, 1, 1], launch_cooperative_grid=True, launch_pdl=True)
    _, record, _ = outcome(doc, "compiled", [torch.zeros(4)], grid=(3, 2))
    launch, fake = fake_launcher(doc, device=-1)
    launch((3, 2), (torch.zeros(4),), {}, 0)
    attrs = {i: words[:3] for i, words in fake.launches[-1]["config"].attrs}
    assert attrs == {int(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION): (2, 1, 1), int(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE): (1, 0, 0),
                     int(A.CU_LAUNCH_ATTRIBUTE_COOPERATIVE): (1, 0, 0), int(A.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION): (1, 0, 0)}
    assert record["grid"] == (6, 2, 1)


def test_another_context_goes_through_python_and_plans_for_it(tmp_path):
    cubin = nop_cubin()
    doc = metadata_doc([param("x", "*fp32", 16)], name="nop")
    doc["variants"][0]["cubin"].update(sha256=hashlib.sha256(cubin).hexdigest(), size=len(cubin))
    with installed(records.replace(H200, ordinal=-1)) as fake:
        kernel = tr.Kernel.load(write_artifact(str(tmp_path), doc, cubin))
        x = torch.zeros(4)
        kernel(1, x)
        fake.context = 0xBEEF  # another context: the executor declines, Python plans for it, then C launches there
        kernel(1, x)
        kernel(1, x)
    assert len(fake.launches) == 3 and fake.c_calls["cuLaunchKernel"] == 2 and len(kernel._contexts) == 2


def test_a_driver_error_is_raised_once_and_not_retried():
    launch, fake = fake_launcher(metadata_doc([param("x", "*fp32", 16)]), device=-1)
    fake.result = 701
    with pytest.raises(tr.DriverError, match="CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"):
        launch(1, (torch.zeros(4),), {}, 0)
    assert len(fake.launches) == 1


@pytest.mark.parametrize("parts", [((0, 0), (1, 1), (2, 2), (3, 3)), ((2, 2),), ((3, 3), (0, 1))], ids=repr)
def test_family_key_is_the_python_key(parts):
    key = compiled.family_key(parts, 4, {}, lambda *a, **k: None)
    for args in [(torch.zeros(4), torch.zeros(5)[1:], 32, "v"), (torch.zeros(4, dtype=torch.float16), torch.zeros(4), 1, 2.5),
                 (torch.zeros(4), torch.zeros(4), np.int64(48), None), (torch.zeros(4), torch.zeros(4), 2**70, 0)]:
        assert key(args) == fast_key(parts)(args)
    with pytest.raises(Exception):  # a dtype or data_ptr() of an int, 1.5 & 15: the general path
        key((5, 5, 1.5, 0))


def python_functions_run(call: Any) -> list[str]:
    """The functions of tmlr_runtime's Python code that ``call()`` ran."""
    seen: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and f"{os.sep}tmlr_runtime{os.sep}" in frame.f_code.co_filename:
            seen.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


def family_launches(path: str, tmp_path: Any) -> tuple[list[Any], int]:
    """Calls of a family (aligned, unaligned, fp16 variants) with plain CPU tensors on device -1, each twice
    (the first call of a key chooses in Python, the next dispatches from the memo): what the driver got."""
    compiled.enabled = path == "compiled"
    try:
        variants = [(None, signature(t, a, "16")) for t, a in (("fp32", True), ("fp32", False), ("fp16", True))]
        directory = make_family(str(tmp_path / path), variants)
        with installed(records.replace(H200, ordinal=-1)) as fake:
            family = tr.Kernel.load(directory)
            for dtype, offset in ((torch.float32, 0), (torch.float32, 1), (torch.float16, 0), (torch.float32, 0)):
                x, y, out = (torch.arange(4097, dtype=dtype)[offset:offset + 4096].clone() if i < 2 else
                             torch.zeros(4097, dtype=dtype)[offset:offset + 4096] for i in range(3))
                if offset:  # clone() aligned x and y again
                    x, y = (torch.zeros(4097, dtype=dtype)[1:].copy_(t) for t in (x, y))
                for _ in range(2):
                    out.zero_()
                    family(4, x, y, out, 4096)
                    if dtype == torch.float32:  # the fake runs the fp32 variants' add on host memory
                        assert torch.equal(out, x + y)
                if path == "compiled":  # a memo hit runs no tmlr Python code: key, dispatch and launch are C
                    fake.cuLaunchKernel = lambda *a: (0,)
                    assert python_functions_run(lambda: family(4, x, y, out, 4096, stream=0)) == []
                    del fake.cuLaunchKernel
        launched = [(r["kernel"], r["grid"], [len(p) for p in r["params"]] if "params" in r else None) for r in fake.launches]
        return launched, fake.c_calls.get("cuLaunchKernel", 0)
    finally:
        compiled.enabled = compiled.fastlaunch is not None


def test_a_family_dispatches_from_its_memo_in_compiled_code(tmp_path):
    compiled_records, from_c = family_launches("compiled", tmp_path)
    python_records, from_python = family_launches("python", tmp_path)
    assert compiled_records == python_records and len(compiled_records) == 8
    assert from_c == 8 + 4 and from_python == 0  # every launch from C (and the 4 profiled ones)


def test_bindings_without_entry_points_launch_through_python(monkeypatch):
    """cuda-python too old for cuGetProcAddress, or a driver that refuses it: the Python path, same launch."""
    doc = metadata_doc([param("x", "*fp32", 16), param("n", "i32")])
    launch, fake = fake_launcher(doc, device=-1)
    good = fake.launches
    monkeypatch.setattr(type(fake), "cuGetProcAddress", lambda self, *a: (_ for _ in ()).throw(AttributeError("no cuGetProcAddress")))
    launch2, fake2 = fake_launcher(doc, device=-1)
    x = torch.zeros(4)
    launch(1, (x, 3), {}, 0)
    launch2(1, (x, 3), {}, 0)
    assert good[-1]["params"] == fake2.launches[-1]["params"] and fake.c_calls and not fake2.c_calls


@pytest.mark.parametrize("directory", ["examples/artifacts/" + n for n in ("add", "add4", "cluster_add", "grid_sync", "matmul",
                                                                            "matmul_big_smem", "nop", "nop_args", "scalars", "tma_scale")]
                         + ["tests/gpu/artifacts/" + n for n in ("desc_scale", "tma_host_copy")])
def test_every_committed_artifact_gets_a_compiled_executor(directory):
    """The executor reads every plan the committed artifacts make (scalars, TMA and tensor descriptors,
    clusters, cooperative launches, global scratch), so none of them falls back to Python for good."""
    with installed(H200):
        kernel = tr.Kernel.load(os.path.join(ROOT, directory))
        assert kernel._compiled is not None
