"""The conformance runner's plumbing on the CPU: the constexprs and build inputs taken from a call, a cache entry that
triton.compile wrote (no GPU: an explicit target) built with tmlr_build and launched on the fake driver as the test
called it, failures that fail the case (never Triton's launch instead), the plugin's events under pytest, the
selection, the grouping of causes, the results document, and the runner end to end over stand-in test files that
launch nothing (Triton's own tests need a GPU: test_conformance_gpu.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "gpu"))  # scale_add.py, tuple_kernels.py

import conformance_plugin as plugin  # noqa: E402
import conformance_report as report  # noqa: E402
import conformance_serve as serve  # noqa: E402
import run  # noqa: E402
import tmlr_runtime as tr  # noqa: E402
from fake_driver import H200, installed, needs_cuda_python  # noqa: E402
from scale_add import scale_add  # noqa: E402

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
from triton_calls_kernels import (Function, annotated_store_at, apply_closure, cast_kernel, make_mul,  # noqa: E402
                                  m_to_the_n, masked_copy, reshape_kernel, timer_kernel)
from tmlr_runtime.objects import DTYPE, TritonObject  # noqa: E402

SCALE_ADD_SIGNATURE = dict(x_ptr="*fp32", y_ptr="*fp32", out_ptr="*fp32", n_elements="i32", alpha="fp32",
                           BLOCK="constexpr", USE_ALPHA="constexpr")


@triton.jit
def with_defaults(x_ptr, n, bias, BLOCK: tl.constexpr, SCALE: tl.constexpr = 2, FLAG: tl.constexpr = None):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)


def compiled(fn: Any, signature: dict[str, Any], constants: dict[tuple[int, ...], Any], aligned: list[tuple[int, ...]],
             cache: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What Triton's JIT compiles for a call (its CompiledKernel, its entry in the Triton cache ``cache``), for sm_90;
    ``aligned``: the paths of the 16-byte aligned pointers."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    attrs = {path: [["tt.divisibility", 16]] for path in aligned}
    return triton.compile(ASTSource(fn, signature, constants, attrs), target=GPUTarget("cuda", 90, 32))


# -- what a call gives tmlr-build -------------------------------------------------------------------------------------

def test_the_constexprs_are_those_triton_left_out_valued_as_the_call_binds_them() -> None:
    # Triton made BLOCK, SCALE, FLAG (None) and n (passed as 1) constexprs; the call left SCALE and FLAG to defaults
    kernel = SimpleNamespace(name="with_defaults", hash="0" * 64, src=SimpleNamespace(signature=dict(
        x_ptr="*fp32", n="constexpr", bias="fp32", BLOCK="constexpr", SCALE="constexpr", FLAG="constexpr")))
    kernel.metadata_group = {}
    args, kwargs = (0x1000, 1, 0.5), dict(BLOCK=tl.constexpr(64), num_warps=4)
    assert serve.bound_arguments(with_defaults, args, kwargs) == dict(x_ptr=0x1000, n=1, bias=0.5, BLOCK=tl.constexpr(64),
                                                                      SCALE=2, FLAG=None)
    with pytest.raises(serve.ConformanceError, match="no metadata JSON"):
        serve.build_inputs(with_defaults, kernel, args, kwargs)


def test_a_cache_entry_builds_and_launches_as_the_test_called_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = compiled(scale_add, SCALE_ADD_SIGNATURE, {(5,): 256, (6,): True}, [(0,), (1,), (2,)], tmp_path / "cache",
                      monkeypatch)
    args, kwargs = (0x1000, 0x2000, 0x3000, 1000, 2.0), dict(BLOCK=256, USE_ALPHA=True, num_warps=4)
    inputs = serve.build_inputs(scale_add, kernel, args, kwargs)
    assert inputs.constexprs == {"BLOCK": 256, "USE_ALPHA": True}
    assert inputs.arg_names == tuple(SCALE_ADD_SIGNATURE) and inputs.signature is None
    assert (Path(inputs.entry) / "scale_add.cubin").is_file() and Path(inputs.entry).parent == tmp_path / "cache"
    calls: list[dict[str, Any]] = []

    def original(fn: Any, *a: Any, grid: Any, warmup: bool, **kw: Any) -> Any:  # Triton's run: compiles only here
        calls.append(dict(fn=fn, args=a, grid=grid, warmup=warmup, kwargs=kw))
        return kernel

    needs_cuda_python()
    server = serve.Server(str(tmp_path / "work"))
    metas: list[dict[str, Any]] = []

    def grid(meta: dict[str, Any]) -> tuple[int]:
        metas.append(dict(meta))
        return ((1000 + meta["BLOCK"] - 1) // meta["BLOCK"],)

    with installed(H200) as fake:
        assert server.serve(original, scale_add, args, grid, kwargs) is kernel  # tests read Triton's asm from it
        server.serve(original, scale_add, args, (2, 3), kwargs)
    assert [c["warmup"] for c in calls] == [True, True] and calls[0]["kwargs"] == kwargs and calls[0]["args"] == args
    assert [(launch["kernel"], launch["grid"]) for launch in fake.launches] == [("scale_add", (4, 1, 1)),
                                                                                 ("scale_add", (2, 3, 1))]
    assert metas[0]["BLOCK"] == 256 and server.served == 2 and not server.failures
    assert len(list((tmp_path / "work" / "artifacts").iterdir())) == 1  # one build per entry and constexprs


def test_a_tuple_kernel_is_built_from_the_signature_of_the_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tuple_kernels

    kernel = compiled(tuple_kernels.tuple_add, {"ptrs": ("*fp32", "*fp32", "*fp32"), "n": "i32", "BLOCK": "constexpr"},
                      {(2,): 1024}, [(0, 0), (0, 1), (0, 2)], tmp_path / "cache", monkeypatch)

    class Tensor:  # a data_ptr() object as torch's: 16-byte aligned pointers
        dtype = "torch.float32"

        def __init__(self, address: int) -> None:
            self.address = address

        def data_ptr(self) -> int:
            return self.address

    args = ((Tensor(0x1000), Tensor(0x2000), Tensor(0x3000)), 1000)
    inputs = serve.build_inputs(tuple_kernels.tuple_add, kernel, args, dict(BLOCK=1024))
    assert inputs.signature == "(*fp32:16, *fp32:16, *fp32:16), i32, 1024" and inputs.arg_names == ("ptrs", "n", "BLOCK")
    artifact = serve.build_artifact(inputs, str(tmp_path / "out"))
    doc = json.loads((Path(artifact) / "metadata.json").read_text())
    assert [p["name"] for p in doc["signature"]][:3] == ["ptrs[0]", "ptrs[1]", "ptrs[2]"]


# -- the losses of the small selection on an H100 (issue 29, results-small.json), as the CPU sees them -------------------

class Buffer:
    """A device buffer as Triton's JIT and launcher see one: ``dtype`` and ``data_ptr()`` (no ``get_device()``: tmlr asks
    the driver, which the fake answers: device memory)."""

    def __init__(self, address: int, dtype: Any = "torch.float32") -> None:
        self.address, self.dtype = address, dtype
        self.data, self.device, self.shape = self, "cuda", (128,)  # what Triton's reinterpret wrapper reads

    def data_ptr(self) -> int:
        return self.address


def served(fn: Any, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], work: Path) -> tuple[Any, str]:
    """``fn[(1,)](*args, **kwargs)`` served by tmlr on the fake driver, Triton having compiled ``kernel``: the fake
    driver (its launches) and the artifact tmlr built."""
    needs_cuda_python()
    server = serve.Server(str(work))
    with installed(H200) as fake:
        server.serve(lambda fn, *a, grid, warmup, **kw: kernel, fn, args, (1,), kwargs)
    assert server.served == 1 and not server.failures
    return fake, next(iter(server._built.values()))


def test_a_dtype_constexpr_is_built_and_taken_as_the_test_passes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_cast[1-int8-int8-False-1024] passes TO_TYPE=tl.int8: recorded as the dtype, not refused at build."""
    kernel = compiled(cast_kernel, dict(X="*i8", Z="*i8", TO_TYPE="constexpr", BITCAST="constexpr", SIZE="constexpr"),
                      {(2,): tl.int8, (3,): False, (4,): 128}, [(0,), (1,)], tmp_path / "cache", monkeypatch)
    args, kwargs = (Buffer(0x1000, "torch.int8"), Buffer(0x2000, "torch.int8")), dict(TO_TYPE=tl.int8, BITCAST=False, SIZE=128)
    fake, artifact = served(cast_kernel, kernel, args, kwargs, tmp_path / "work")
    assert tr.ArtifactMetadata.read(artifact).constexprs["TO_TYPE"] == TritonObject(DTYPE, "int8") and len(fake.launches) == 1
    with installed(H200), pytest.raises(tr.ConstexprMismatchError, match=r"compiled as tl\.int8, got triton\.language\.int16"):
        tr.Kernel.load(artifact)[(1,)](*args, **{**kwargs, "TO_TYPE": tl.int16})


MASKED_COPY = dict(in_ptr="*u8", out_ptr="*u8", in_size="constexpr", out_size="constexpr")


def test_pointers_to_unsigned_ints_are_built_as_triton_compiled_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_masked_load[1-uint8-128-0-0]: the IR has no unsigned types, the plugin's --signature (from the call) gives
    *u8 back; a pointer of the other signedness or another width is still refused."""
    torch = pytest.importorskip("torch")
    from fake_driver import fake_cuda_tensor_type

    kernel = compiled(masked_copy, MASKED_COPY, {(2,): 128, (3,): 128}, [(0,), (1,)], tmp_path / "cache", monkeypatch)
    cuda = fake_cuda_tensor_type(0)
    x, out = (torch.zeros(128, dtype=torch.uint8).as_subclass(cuda) for _ in range(2))
    fake, artifact = served(masked_copy, kernel, (x, out, 128, 128), {}, tmp_path / "work")
    assert serve.build_inputs(masked_copy, kernel, (x, out, 128, 128), {}).signature == "*u8:16, *u8:16, 128, 128"
    assert [p.type for p in tr.ArtifactMetadata.read(artifact).signature[:2]] == ["*u8", "*u8"] and len(fake.launches) == 1
    for dtype in (torch.int8, torch.int16):
        with installed(H200), pytest.raises(tr.PointerArgumentError, match=f"got a {dtype} tensor, the kernel was built for torch.uint8"):
            tr.Kernel.load(artifact)[(1,)](torch.zeros(128, dtype=dtype).as_subclass(cuda), out, 128, 128)


def test_tritons_reinterpret_wrapper_of_an_unsigned_type_is_built_and_taken(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """test_reduce1d[1-max-with-indices-uint32-32] passes reinterpret(tensor, tl.uint32): *u32, not the IR's *i32."""
    from triton.runtime.jit import reinterpret

    sig = {name: ty.replace("u8", "u32") for name, ty in MASKED_COPY.items()}
    kernel = compiled(masked_copy, sig, {(2,): 32, (3,): 32}, [(0,), (1,)], tmp_path / "cache", monkeypatch)
    x, out = reinterpret(Buffer(0x1000, "torch.int32"), tl.uint32), reinterpret(Buffer(0x2000, "torch.int32"), tl.uint32)
    fake, artifact = served(masked_copy, kernel, (x, out, 32, 32), {}, tmp_path / "work")
    assert [p.type for p in tr.ArtifactMetadata.read(artifact).signature[:2]] == ["*u32", "*u32"] and len(fake.launches) == 1
    with installed(H200), pytest.raises(tr.PointerArgumentError, match=r"dtype int32 \(i32\), the kernel was built for u32"):
        tr.Kernel.load(artifact)[(1,)](reinterpret(Buffer(0x1000, "torch.int32"), tl.int32), out, 32, 32)


def test_a_triton_builtin_function_constexpr_is_built_and_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_globaltimer passes func=tl.extra.cuda.globaltimer, a builtin of Triton's (no JITFunction)."""
    from triton.language.extra.cuda import globaltimer

    kernel = compiled(timer_kernel, dict(Out="*i64", func="constexpr"), {(1,): globaltimer}, [(0,)], tmp_path / "cache",
                      monkeypatch)
    fake, artifact = served(timer_kernel, kernel, (Buffer(0x1000, "torch.int64"), globaltimer), {}, tmp_path / "work")
    assert tr.ArtifactMetadata.read(artifact).constexprs["func"].text.endswith(":globaltimer") and len(fake.launches) == 1


@pytest.mark.parametrize("width", [8, 64])
def test_an_int_annotated_unsigned_is_built_as_triton_compiled_it(width: int, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """test_annotations.py::test_int_annotation[False-8]: ``v: tl.uint8`` given 3 compiles as u8 (the call's signature
    must say u8, not the i32 an unannotated 3 gets)."""
    kernel_fn = annotated_store_at(f"tl.uint{width}")
    kernel = compiled(kernel_fn, dict(X="*fp32", v=f"u{width}"), {}, [(0,)], tmp_path / "cache", monkeypatch)
    fake, artifact = served(kernel_fn, kernel, (Buffer(0x1000), 3), {}, tmp_path / "work")
    assert [p.type for p in tr.ArtifactMetadata.read(artifact).signature] == ["*fp32", f"u{width}"] and len(fake.launches) == 1


def test_a_namedtuple_with_a_jit_function_is_built_and_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_namedtuple passes Function(mul, (a,)), mul defined in the test: a constexpr element, recorded by its
    qualname and Triton's cache_key; another closure of that qualname is refused (it is another function)."""
    mul = make_mul()
    sig = dict(closure=Function("constexpr", ("*fp32",)), X="*fp32", Y="*fp32", BLOCK="constexpr")
    kernel = compiled(apply_closure, sig, {(0, 0): mul, (3,): 64}, [(0, 1, 0), (1,), (2,)], tmp_path / "cache", monkeypatch)
    closure, x, y = Function(mul, (Buffer(0x1000),)), Buffer(0x2000), Buffer(0x3000)
    fake, artifact = served(apply_closure, kernel, (closure, x, y, 64), {}, tmp_path / "work")
    recorded = tr.ArtifactMetadata.read(artifact).constexprs["closure.fn"]
    assert recorded.text == f"triton_calls_kernels:make_mul.<locals>.mul@{mul.cache_key}" and len(fake.launches) == 1
    # a factory's other closure: the same qualname, another function (Triton tells them apart by what they call:
    # another cache_key), as tmlr_runtime sees it
    other = type("JITFunction", (), {"__module__": "triton.runtime.jit", "fn": mul.fn, "cache_key": "f" * 64})()
    with installed(H200) as fake, pytest.raises(tr.ConstexprMismatchError, match="constexpr 'closure.fn' was compiled as"):
        tr.Kernel.load(artifact)[(1,)](Function(other, closure.captured), x, y, 64)
    assert fake.launches == []


def test_a_constexpr_parameter_given_a_tuple_is_a_tuple_of_constexprs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_passing_tuple_with_constexpr: ``shape: tl.constexpr`` given x.shape; the cache entry's artifact records it
    as the tuple of its values and takes the call's torch.Size."""
    sig = dict(X="*i64", shape="constexpr", strides=("i32", "constexpr"), m_n=("i32", "i32"))
    try:
        kernel = compiled(m_to_the_n, sig, {(1,): (8, 8), (2, 1): 1}, [(0,)], tmp_path / "cache", monkeypatch)
    except triton.compiler.errors.CompilationError as e:  # Triton 3.3: "'constexpr' object is not subscriptable"
        pytest.skip(f"Triton {triton.__version__} does not subscript a tuple constexpr ({str(e).splitlines()[-1]})")
    args = (Buffer(0x1000, "torch.int64"), (8, 8), (8, 1), (2, 3))
    assert serve.build_inputs(m_to_the_n, kernel, args, {}).signature == "*i64:16, (8, 8), (i32, i32:1), (i32, i32)"
    fake, artifact = served(m_to_the_n, kernel, args, {}, tmp_path / "work")
    assert tr.ArtifactMetadata.read(artifact).constexprs == {"shape[0]": 8, "shape[1]": 8}
    with installed(H200) as fake, pytest.raises(tr.ConstexprMismatchError, match=r"constexpr 'shape\[1\]' was compiled as 8"):
        tr.Kernel.load(artifact)[(1,)](args[0], (8, 4), (8, 1), (2, 3))
    assert fake.launches == []


def test_a_tuple_constexpr_is_built_whole_and_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_reshape[formats0]: ``out_tuple: tl.constexpr`` given (8, 8), the only tuple of the call: the cache entry is
    built with --constexpr out_tuple=(8, 8) (the command line's words, and the API's constexprs as the plugin passes
    them), recorded as [8, 8] (schema v9); the call's tuple is taken, another refused."""
    from tmlr_build.cli import run as tmlr_build

    kernel = compiled(reshape_kernel, dict(Z="*fp32", X="*fp32", out_tuple="constexpr"), {(2,): (8, 8)}, [(0,), (1,)],
                      tmp_path / "cache", monkeypatch)
    args = (Buffer(0x1000), Buffer(0x2000), (8, 8))
    inputs = serve.build_inputs(reshape_kernel, kernel, args, {})
    assert inputs.constexprs == {"out_tuple": (8, 8)} and inputs.signature is None
    tmlr_build([inputs.entry, "--arg-names", "Z,X,out_tuple", "--constexpr", "out_tuple=(8, 8)", "-o", str(tmp_path / "cli"), "-q"])
    cli = tmp_path / "cli" / "reshape_kernel"
    doc = json.loads((cli / "metadata.json").read_text())
    assert doc["schema_version"] == 9 and doc["signature"][2] == {"name": "out_tuple", "kind": "constexpr", "value": [8, 8]}
    assert next(cli.glob("*.cubin")).read_bytes() == (Path(inputs.entry) / "reshape_kernel.cubin").read_bytes()
    fake, artifact = served(reshape_kernel, kernel, args, {}, tmp_path / "work")
    assert json.loads((Path(artifact) / "metadata.json").read_text())["signature"] == doc["signature"] and len(fake.launches) == 1
    with installed(H200) as fake, pytest.raises(tr.ConstexprMismatchError, match=r"'out_tuple' was compiled as \(8, 8\), got \(4, 16\)"):
        tr.Kernel.load(artifact)[(1,)](args[0], args[1], (4, 16))
    assert fake.launches == []


@pytest.mark.parametrize("stage", ["build", "load", "launch"])
def test_a_tmlr_failure_fails_the_launch_with_its_error_and_never_launches_with_triton(
        stage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warmups: list[bool] = []

    def original(fn: Any, *a: Any, grid: Any, warmup: bool, **kw: Any) -> Any:
        warmups.append(warmup)
        return SimpleNamespace(name="k")

    class Refused(tr.TmlrError):
        pass

    def refuse(*_: Any, **__: Any) -> Any:
        raise Refused(f"k: refused at {stage}")

    class Loaded:
        def __getitem__(self, grid: Any) -> Any:
            return refuse

    monkeypatch.setattr(serve, "build_inputs", lambda fn, kernel, args, kwargs: serve.BuildInputs("entry", {}, ("x",)))
    monkeypatch.setattr(serve, "build_artifact", refuse if stage == "build" else lambda inputs, out: str(tmp_path))
    server = serve.Server(str(tmp_path), load=refuse if stage == "load" else lambda path: Loaded())
    with pytest.raises(Refused, match=f"refused at {stage}"):
        server.serve(original, SimpleNamespace(), (1,), (1,), {"num_warps": 4})
    assert warmups == [True]  # Triton compiled; it never launched
    assert [(f.stage, type(f.error).__name__) for f in server.failures] == [(stage, "Refused")] and server.served == 0


def test_the_patched_run_counts_launches_and_hands_them_to_tmlr_or_triton() -> None:
    seen: list[tuple[Any, ...]] = []

    def original(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> str:
        seen.append((args, grid, warmup, kwargs))
        return "compiled"

    state = plugin.State("triton", os.devnull, None)
    run_ = plugin.patched_run(original, state)
    assert run_("fn", 1, 2, grid=(1,), warmup=True, num_warps=4) == "compiled" and state.launches == 0
    assert run_("fn", 1, 2, grid=(1,), warmup=False, num_warps=4) == "compiled"
    assert seen == [((1, 2), (1,), True, {"num_warps": 4}), ((1, 2), (1,), False, {"num_warps": 4})]
    assert state.launches == 1 and state.case.launches == 1
    served: list[tuple[Any, ...]] = []
    state.server = SimpleNamespace(serve=lambda original, fn, args, grid, kwargs: served.append((fn, args, grid, kwargs)))
    run_("fn", 1, grid=lambda meta: (1,), warmup=False, BLOCK=64)
    assert served[0][0] == "fn" and served[0][1] == (1,) and served[0][3] == {"BLOCK": 64} and len(seen) == 2


# -- causes, selection, results ---------------------------------------------------------------------------------------

def test_causes_group_by_stage_type_and_first_words_with_names_and_numbers_blanked() -> None:
    a = report.group_of("launch: ArgumentCountError: kernel_a: unknown argument 'num_warps'; call it as kernel_a[grid](X)")
    b = report.group_of("launch: ArgumentCountError: _kernel2: unknown argument 'num_ctas'; call it as _kernel2[grid](Z, Y)")
    assert a == b == "launch: ArgumentCountError: <kernel>: unknown argument '…'; call it …"
    assert report.group_of("build: SignatureError: constexpr DTYPE=fp16 at 3") == "build: SignatureError: constexpr DTYPE=fp16 at N"
    assert report.group_of("test: AssertionError") == "test: AssertionError"
    assert report.group_of("load: ValueError: x: y") != report.group_of("launch: ValueError: x: y")


def test_the_selection_spreads_each_functions_cap_over_its_cases() -> None:
    ids = [f"test_core.py::test_a[{i}]" for i in range(10)] + ["test_core.py::test_b", "test_tuple.py::test_c[0]",
                                                                "test_tuple.py::test_c[1]", "test_tuple.py::test_d"]
    assert run.select(ids, {"test_core.py::test_a": 3}, 1) == ["test_core.py::test_a[0]", "test_core.py::test_a[3]",
                                                                "test_core.py::test_a[6]", "test_core.py::test_b",
                                                                "test_tuple.py::test_c[0]", "test_tuple.py::test_d"]
    assert run.select(ids, {"test_tuple.py": 5}, 0) == ids[-3:]
    assert run.select(ids, {}, 100) == ids


def test_the_results_count_only_what_passes_with_tritons_launcher() -> None:
    def rec(outcome: str, launches: int | None = 1, served: int | None = 0, cause: str | None = None) -> dict[str, Any]:
        return dict(outcome=outcome, launches=launches, served=served, cause=cause, tmlr_error=None)

    triton_pass = {"a": rec("passed"), "b": rec("passed"), "c": rec("passed", launches=0), "d": rec("failed", cause="test: X"),
                   "e": rec("skipped", launches=0), "f": rec("passed"), "g": rec("passed")}
    tmlr_pass = {"a": rec("passed", served=2), "b": rec("failed", served=0, cause="launch: ArgumentCountError: k1: unknown "
                                                                                   "argument 'num_warps'"),
                 "c": rec("passed", served=0), "d": rec("passed", served=1),
                 "e": rec("skipped"), "f": rec("failed", cause="launch: ArgumentCountError: k2: unknown argument 'debug'"),
                 "g": rec("crashed", served=None, cause="process: the pytest process ended during this case (signal SIGSEGV)")}
    doc = report.summarize(triton_pass, tmlr_pass, {"triton_version": "3.6.0", "device": "H100"})
    assert doc["ratio"] == "2/5" and report.ratio(doc) == pytest.approx(0.4)
    assert doc["counts"] == {"selected": 7, "triton_passed": 5, "tmlr_passed": 2,
                             "triton_not_passed": {"failed": 1, "skipped": 1}, "launching": 4,
                             "tmlr_passed_launching": 1, "tmlr_passed_where_triton_did_not": 1}
    assert [(loss["group"], loss["count"], loss["cases"]) for loss in doc["losses"]] == [
        ("launch: ArgumentCountError: <kernel>: unknown argument '…'", 2, ["b", "f"]),
        ("process: the pytest process ended during this case (signal SIGSEGV)", 1, ["g"])]
    assert doc["launches_served"] == 3 and doc["cases"]["d"]["triton_cause"] == "test: X"
    lines = report.summary_lines(doc)
    assert lines[0].startswith("2/5 of the cases that pass with Triton's launcher pass with tmlr (Triton 3.6.0, H100)")
    assert any(line.startswith("     2  launch: ArgumentCountError") for line in lines)
    assert json.loads(json.dumps(doc)) == doc  # the results file holds it as it is


def test_a_case_a_process_died_in_is_crashed_and_the_rest_not_run() -> None:
    text = ['{"event": "start", "case": "a"}', '{"event": "case", "case": "a", "outcome": "passed", "launches": 1}',
            '{"event": "start", "case": "b"}', '{"event": "ca']  # torn: the process died while writing
    records = report.cases_of(report.read_events(text), ["a", "b", "c"], "signal SIGSEGV")
    assert [records[c]["outcome"] for c in "abc"] == ["passed", "crashed", "not run"]
    assert records["b"]["cause"] == "process: the pytest process ended during this case (signal SIGSEGV)"


# -- the plugin and the runner over stand-in test files ---------------------------------------------------------------

STAND_IN = {
    "conftest.py": """
        import pytest

        @pytest.fixture
        def device():
            return "cuda"
    """,
    "test_core.py": """
        import os
        import pytest

        @pytest.mark.parametrize("n", range(6))
        def test_many(n, device):
            assert device == "cuda"

        def test_fails_in_both():
            assert 1 == 2, "one is not two"

        def test_skips():
            pytest.skip("not on this GPU")

        def test_passes_with_triton_only():
            if os.environ["TMLR_CONFORMANCE_MODE"] == "tmlr":
                raise ValueError("k: unknown argument 'num_warps'")

        def test_dies_with_tmlr():
            if os.environ["TMLR_CONFORMANCE_MODE"] == "tmlr":
                os._exit(7)

        def test_after():
            pass
    """,
    "test_tuple.py": "def test_t():\n    pass\n",
    "test_annotations.py": "import not_a_module_here\n",
    "test_random.py": "def test_r():\n    pass\n",
    "TRITON_RELEASE": "{release}\n# stand-in files of the CPU tests\n",
}


def stand_in_tests(folder: Path, release: str) -> Path:
    folder.mkdir()
    for name, text in STAND_IN.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip().replace("{release}", release))
    return folder


def run_runner(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(HERE / "run.py"), *args], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "TMLR_TRITON_TESTS"})


def test_the_runner_runs_both_passes_and_reports_what_tmlr_lost(tmp_path: Path) -> None:
    folder = stand_in_tests(tmp_path / "tests", triton.__version__)
    out = tmp_path / "results.json"
    done = run_runner("--triton-tests", str(folder), "--json", str(out), "--all", "--jobs", "2", "--work", str(tmp_path / "w"))
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    assert doc["ratio"] == "9/11" and doc["selection"] == {"name": "all", "k": None, "collected": 13, "selected": 13}
    cases = doc["cases"]
    assert cases["test_core.py::test_passes_with_triton_only"]["group"] == "test: ValueError: <kernel>: unknown argument '…'"
    dead = cases["test_core.py::test_dies_with_tmlr"]
    assert dead["tmlr"] == "crashed" and dead["cause"].endswith("(exit status 7)")
    assert cases["test_core.py::test_after"]["tmlr"] == "passed"  # the shard went on in a new process
    assert cases["test_core.py::test_fails_in_both"]["triton_cause"] == "test: AssertionError: one is not two"
    assert doc["counts"]["triton_not_passed"] == {"failed": 1, "skipped": 1}
    assert doc["collection_errors"][0]["where"] == "test_annotations.py" and "not_a_module_here" in doc["collection_errors"][0]["error"]
    assert doc["triton_version"] == triton.__version__ and doc["tests"]["release"] == triton.__version__
    assert "9/11 of the cases that pass with Triton's launcher pass with tmlr" in done.stdout
    assert "launches served by tmlr: 0" in done.stdout and "losses by cause:" in done.stdout


def test_the_runner_takes_k_and_a_case_list(tmp_path: Path) -> None:
    folder = stand_in_tests(tmp_path / "tests", triton.__version__)
    out = tmp_path / "results.json"
    done = run_runner("--triton-tests", str(folder), "--json", str(out), "--all", "-k", "many or after", "--jobs", "1",
                      "--files", "test_core.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(json.loads(out.read_text())["cases"]) == ["test_core.py::test_after", *(f"test_core.py::test_many[{n}]" for n in range(6))]
    (tmp_path / "cases.txt").write_text("test_core.py::test_after\ntest_tuple.py::test_t\n")
    done = run_runner("--triton-tests", str(folder), "--json", str(out), "--cases", str(tmp_path / "cases.txt"))
    assert done.returncode == 0 and json.loads(out.read_text())["ratio"] == "2/2", done.stdout + done.stderr
    (tmp_path / "cases.txt").write_text("test_core.py::test_gone\n")
    done = run_runner("--triton-tests", str(folder), "--cases", str(tmp_path / "cases.txt"))
    assert done.returncode == 2 and "1 node id(s) not collected, e.g. test_core.py::test_gone" in done.stderr


def test_the_runner_refuses_tests_of_another_release_and_a_missing_folder(tmp_path: Path) -> None:
    folder = stand_in_tests(tmp_path / "tests", "3.0.0")
    done = run_runner("--triton-tests", str(folder))
    assert done.returncode == 2
    assert f"are from Triton 3.0.0 (TRITON_RELEASE), Triton {triton.__version__} is installed" in done.stderr
    assert f"fetch_triton_tests.sh v{triton.__version__}" in done.stderr
    done = run_runner("--triton-tests", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "no such folder" in done.stderr and "fetch_triton_tests.sh" in done.stderr
    (folder / "test_random.py").unlink()
    done = run_runner("--triton-tests", str(folder), "--any-release")
    assert done.returncode == 2 and "lacks test_random.py" in done.stderr
