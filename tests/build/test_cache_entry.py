"""A Triton cache entry imported so that it is called as the Triton kernel it came from: the parameter names
the IR records (Triton 3.5+), the constexprs given back with --constexpr / --signature and --arg-names,
names and values that differ from the recorded ones refused, and the usage line of an entry imported bare.

The cache entry is the one triton.compile writes for a kernel of our own, tests/gpu/scale_add.py (no GPU needed:
an explicit target)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tmlr_runtime as tr
from fake_driver import H200, installed
from tmlr_build import BuildConfig, RecordMismatchError, SignatureError, build, parse_arch_list, request
from tmlr_build.cli import run
from tmlr_build.common.mlir_text import read_function
from tmlr_build.common.triton_check import release_in_range
from tmlr_runtime import driver
from tmlr_runtime.cli import main
from triton_facts import API

KERNEL = Path(__file__).resolve().parents[1] / "gpu" / "scale_add.py"  # scale_add(..., BLOCK, USE_ALPHA)
# the cache entry Triton's JIT would write for scale_add[grid](x, y, out, n, 2.0, BLOCK=256, USE_ALPHA=True)
COMPILE = textwrap.dedent("""
    import importlib.util, sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    spec = importlib.util.spec_from_file_location("scale_add", sys.argv[1])
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    sig = dict(x_ptr="*fp32", y_ptr="*fp32", out_ptr="*fp32", n_elements="i32", alpha="fp32",
               BLOCK="constexpr", USE_ALPHA="constexpr")
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(3)}
    triton.compile(ASTSource(mod.scale_add, sig, {(5,): 256, (6,): True}, attrs), target=GPUTarget("cuda", 90, 32))
""")
RUNTIME = ["x_ptr", "y_ptr", "out_ptr", "n_elements", "alpha"]
ALL = RUNTIME + ["BLOCK", "USE_ALPHA"]
NAMED = release_in_range(API.version, ">=3.5")  # Triton 3.5+ names the tt.func arguments after the kernel's parameters


@pytest.fixture(scope="module")
def entry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cache-entry")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(TRITON_CACHE_DIR=str(d / "cache"), TRITON_DISABLE_LINE_INFO="1")
    subprocess.run([sys.executable, "-c", COMPILE, str(KERNEL)], env=env, check=True)
    return next((d / "cache").rglob("scale_add.cubin")).parent


def _signature(out: Path) -> list[dict]:
    return json.loads((out / "scale_add" / "metadata.json").read_text())["signature"]


def test_a_bare_import_keeps_the_names_the_ir_records_and_says_how_to_call_it(entry: Path, tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    report = build([request(str(entry))], BuildConfig(out=str(tmp_path), progress=False))
    names = [p["name"] for p in _signature(tmp_path)]
    assert names == (RUNTIME if NAMED else [f"arg{i}" for i in range(5)])
    assert all(p["kind"] == "runtime" for p in _signature(tmp_path))
    note, = report.notes
    assert f"scale_add[grid]({', '.join(names)})" in note and "--constexpr NAME=VALUE" in note
    assert ("records no parameter names" in note) is not NAMED
    pointers = [f"{n}: *fp32 (16-byte aligned)" for n in names[:3]]
    assert _inspect_call(tmp_path / "scale_add", capsys) == f"scale_add[grid]({', '.join(pointers)}, " \
                                                            f"{names[3]}: i32, {names[4]}: fp32)"
    # the runtime's usage line, on a call made as for the Triton kernel, says the same
    _needs_cuda_python()
    with installed(H200):
        k = tr.Kernel.load(str(tmp_path / "scale_add"))
        with pytest.raises(tr.ArgumentCountError, match=r"unknown argument 'BLOCK'; call it as scale_add\[grid\]\("
                                                         + f"{names[0]}: \\*fp32, {names[1]}: \\*fp32"):
            k[1](0x1000, 0x2000, 0x3000, 1000, 2.0, BLOCK=256, USE_ALPHA=True)


def _needs_cuda_python() -> None:
    try:
        driver.api()  # the fake driver takes its enums from cuda-python's bindings
    except tr.CudaUnavailableError as e:
        pytest.skip(f"loading on the fake driver needs cuda-python: {e}")


def _restore(entry: Path, out: Path, *flags: str) -> list[dict]:
    # before 3.5 the names come from the user (with them, the IR's names are checked)
    names = [] if NAMED or "--arg-names" in flags else ["--arg-names", ",".join(ALL)]
    run([str(entry), "-o", str(out), "-q", *names, *flags])
    return _signature(out)


@pytest.mark.parametrize("flags", [("--constexpr", "BLOCK=256", "--constexpr", "USE_ALPHA=True"),
                                   ("--signature", "*fp32:16, *fp32:16, *fp32:16, i32, fp32, 256, True",
                                    "--arg-names", ",".join(ALL))], ids=["constexpr", "signature"])
def test_constexprs_given_back_make_it_callable_as_the_triton_kernel(entry: Path, tmp_path: Path, flags: tuple[str, ...],
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    signature = _restore(entry, tmp_path, *flags)
    assert [p["name"] for p in signature] == ALL
    assert [p.get("value") for p in signature[5:]] == [256, True]
    assert (tmp_path / "scale_add" / "scale_add.sm_90a.cubin").read_bytes() == (entry / "scale_add.cubin").read_bytes()
    _needs_cuda_python()
    with installed(H200) as fake:
        k = tr.Kernel.load(str(tmp_path / "scale_add"))
        k[4](0x1000, 0x2000, 0x3000, 1000, 2.0, BLOCK=256, USE_ALPHA=True)  # as scale_add[grid](...) is called
        k[4](0x1000, 0x2000, 0x3000, 1000, 2.0, 256, True)
        k[4](x_ptr=0x1000, y_ptr=0x2000, out_ptr=0x3000, n_elements=1000, alpha=2.0)
        assert len(fake.launches) == 3
        with pytest.raises(tr.ConstexprMismatchError, match="BLOCK"):
            k[4](0x1000, 0x2000, 0x3000, 1000, 2.0, BLOCK=128, USE_ALPHA=True)
    assert _inspect_call(tmp_path / "scale_add", capsys) == ("scale_add[grid](x_ptr: *fp32 (16-byte aligned), y_ptr: *fp32 (16-byte aligned), out_ptr: *fp32 "
                    "(16-byte aligned), n_elements: i32, alpha: fp32, BLOCK=256 (constexpr), USE_ALPHA=True (constexpr))")


def _inspect_call(artifact: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The call line of ``tmlr inspect``."""
    capsys.readouterr()
    assert main(["inspect", "--no-device", str(artifact)]) == 0
    call, = [line.split(None, 1)[1] for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["call"]]
    return call


@pytest.mark.skipif(not NAMED, reason=f"Triton {API.version} records no parameter names in the IR (3.5+ does)")
def test_arg_names_that_differ_from_the_recorded_ones_are_refused(entry: Path, tmp_path: Path) -> None:
    swapped = ["y_ptr", "x_ptr", "out_ptr", "n_elements", "alpha", "BLOCK", "USE_ALPHA"]
    with pytest.raises(RecordMismatchError, match="runtime parameter 0 is 'y_ptr' in --arg-names but 'x_ptr' in the IR"
                       ) as e:
        build([request(str(entry), arg_names=tuple(swapped), constexprs={"BLOCK": 256, "USE_ALPHA": True})],
              BuildConfig(out=str(tmp_path), progress=False))
    assert (e.value.given, e.value.recorded) == ("y_ptr", "x_ptr")


def test_constexprs_that_differ_from_the_sidecar_are_refused(tmp_path: Path) -> None:
    build([request(f"{KERNEL}:scale_add", signature="*fp32:16, *fp32:16, *fp32:16, i32, fp32, 256, True")],
          BuildConfig(out=str(tmp_path / "py"), archs=parse_arch_list("90"), keep_ir=True, progress=False))
    ttir = next((tmp_path / "py" / "scale_add" / "ir").rglob("scale_add.ttir"))
    build([request(str(ttir), constexprs={"BLOCK": 256})], BuildConfig(out=str(tmp_path / "same"), progress=False))
    assert [p["name"] for p in _signature(tmp_path / "same")] == ALL
    with pytest.raises(RecordMismatchError, match=r"--constexpr BLOCK=128, but this IR was compiled with BLOCK=256") as e:
        build([request(str(ttir), constexprs={"BLOCK": 128})], BuildConfig(out=str(tmp_path / "other"), progress=False))
    assert (e.value.given, e.value.recorded) == (128, 256)


@pytest.mark.skipif(not NAMED, reason=f"Triton {API.version} records no parameter names in the IR (3.5+ does)")
def test_a_constexpr_named_as_a_runtime_parameter_is_refused(entry: Path, tmp_path: Path) -> None:
    with pytest.raises(SignatureError, match="--constexpr names the runtime parameter n_elements: i32 of the IR"):
        build([request(str(entry), constexprs={"n_elements": 1000})], BuildConfig(out=str(tmp_path), progress=False))


def test_constexprs_with_a_signature_need_every_name(entry: Path, tmp_path: Path) -> None:
    with pytest.raises(SignatureError, match="pass --arg-names with every parameter of the kernel in its order"):
        build([request(str(entry), signature="*fp32:16, *fp32:16, *fp32:16, i32, fp32", constexprs={"BLOCK": 256})],
              BuildConfig(out=str(tmp_path), progress=False))
    with pytest.raises(SignatureError, match="--constexpr names BLOCK, USE_ALPHA, which --arg-names does not list"):
        build([request(str(entry), arg_names=tuple(RUNTIME + ["B", "C"]), constexprs={"BLOCK": 256, "USE_ALPHA": 1})],
              BuildConfig(out=str(tmp_path), progress=False))


# the tt.func line of each release's TTIR (3.5+ names its arguments; a name may come through a loc alias)
TTIR_33 = ('#loc = loc("k.py":5:0)\nmodule {\n  tt.func public @k(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} '
           'loc("k.py":5:0), %arg1: i32 loc("k.py":5:0)) attributes {noinline = false} {\n    tt.return\n  }\n}\n')
TTIR_35 = ('#loc = loc("k.py":5:0)\n#loc3 = loc("n"(#loc))\nmodule {\n  tt.func public @k(%x_ptr: !tt.ptr<f32> '
           '{tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %arg1: i32 loc(#loc3)) attributes {noinline = false} {\n'
           '    tt.return\n  }\n}\n')


@pytest.mark.parametrize("text, names, named", [(TTIR_33, ["arg0", "arg1"], False), (TTIR_35, ["x_ptr", "n"], True),
                                                (TTIR_35.replace('"n"', '"t.0"'), ["arg0", "arg1"], False),
                                                (TTIR_35.replace('"n"', '"x_ptr"'), ["arg0", "arg1"], False)],
                         ids=["unnamed", "named", "tuple-element", "repeated"])
def test_the_names_an_ir_records(text: str, names: list[str], named: bool) -> None:
    fn = read_function(text, "k.ttir")
    assert ([p.name for p in fn.params], fn.named) == (names, named)
    assert [p.type for p in fn.params] == ["*fp32", "i32"]
