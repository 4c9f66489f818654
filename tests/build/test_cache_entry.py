"""A Triton cache entry imported so that it is called as the Triton kernel it came from: the parameter names
the IR records (Triton 3.5+), the constexprs given back with --constexpr / --signature and --arg-names,
names and values that differ from the recorded ones refused, and the usage line of an entry imported bare;
tuple parameters as the entry records their elements (3.5-3.6: under the tuple's name, 3.9: by path); unsigned
types, which the entry does not record, given back by --signature.

The cache entries are the ones triton.compile writes for kernels of our own, tests/gpu/scale_add.py and
tests/gpu/tuple_kernels.py (no GPU needed: an explicit target)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tmlr_runtime as tr
from fake_driver import H200, installed, needs_cuda_python
from tmlr_build import BuildConfig, RecordMismatchError, SignatureError, build, parse_arch_list, request
from tmlr_build.cli import run
from tmlr_build.common.ir_signature import from_ir, from_signature
from tmlr_build.common.mlir_text import read_function
from tmlr_build.common.signature import parse_signature
from tmlr_build.common.triton_check import release_in_range
from tmlr_runtime.abi import split_top_level
from tmlr_runtime.cli import main
from tmlr_runtime.launch.plan import Layout
from tmlr_runtime.tuples import format_nested
from triton_facts import API

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
import make_tuple_cached  # noqa: E402

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
    needs_cuda_python()
    with installed(H200):
        k = tr.Kernel.load(str(tmp_path / "scale_add"))
        with pytest.raises(tr.ArgumentCountError, match=r"unknown argument 'BLOCK'; call it as scale_add\[grid\]\("
                                                         + f"{names[0]}: \\*fp32, {names[1]}: \\*fp32"):
            k[1](0x1000, 0x2000, 0x3000, 1000, 2.0, BLOCK=256, USE_ALPHA=True)


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
    needs_cuda_python()
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


# the tt.func line of each release's TTIR (3.5+ names its arguments; a name may come through a loc alias, or be
# inline without line info: loc("n"))
TTIR_33 = ('#loc = loc("k.py":5:0)\nmodule {\n  tt.func public @k(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} '
           'loc("k.py":5:0), %arg1: i32 loc("k.py":5:0)) attributes {noinline = false} {\n    tt.return\n  }\n}\n')
TTIR_35 = ('#loc = loc("k.py":5:0)\n#loc3 = loc("n"(#loc))\nmodule {\n  tt.func public @k(%x_ptr: !tt.ptr<f32> '
           '{tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %arg1: i32 loc(#loc3)) attributes {noinline = false} {\n'
           '    tt.return\n  }\n}\n')


@pytest.mark.parametrize("text, names, named, flat", [
    (TTIR_33, ["arg0", "arg1"], False, False), (TTIR_35, ["x_ptr", "n"], True, False),
    (TTIR_35.replace('loc(#loc3)', 'loc("n")'), ["x_ptr", "n"], True, False),
    (TTIR_35.replace('"n"', '"t.0"'), ["x_ptr", "t[0]"], True, False),  # 3.9: a tuple's element by its path
    (TTIR_35.replace('"n"', '"x_ptr"'), ["x_ptr[0]", "x_ptr[1]"], True, True),  # 3.5-3.6: under the tuple's name
    (TTIR_35.replace('"n"', '"t.0x"'), ["arg0", "arg1"], False, False)],
    ids=["unnamed", "named", "inline", "tuple-path", "tuple-run", "bad-path"])
def test_the_names_an_ir_records(text: str, names: list[str], named: bool, flat: bool) -> None:
    fn = read_function(text, "k.ttir")
    assert ([p.name for p in fn.params], fn.named, fn.flat) == (names, named, flat)
    assert [p.type for p in fn.params] == ["*fp32", "i32"]


# --- tuple parameters -----------------------------------------------------------------------------------------
# (tuple_kernels.py kernel, Triton's signature, constexprs by path, divisibility paths; the names of the tt.func
# arguments as Triton 3.6.0 and 3.9.0 write them (read from their cache entries of these very compiles)
TUPLE_KERNELS = {
    "tuple_add": ({"ptrs": ["*fp32", "*fp32", "*fp32"], "n": "i32", "BLOCK": "constexpr"}, [[[2], 1024]], [[0, 0]],
                  {"3.6": ["ptrs"] * 3 + ["n"], "3.9": ["ptrs.0", "ptrs.1", "ptrs.2", "n"]}),
    "tuple_nested": ({"io": [["*fp32", "constexpr"], ["*fp32", "constexpr"]], "coef": ["fp32", "fp32"], "n": "i32",
                      "BLOCK": "constexpr"}, [[[0, 0, 1], None], [[0, 1, 1], 3], [[3], 1024]], [],
                     {"3.6": ["io", "io", "coef", "coef", "n"], "3.9": ["io.0.0", "io.1.0", "coef.0", "coef.1", "n"]}),
    "record_scale": ({"src": "Tensor", "dst": "Tensor", "alpha": "fp32", "BM": "constexpr", "BN": "constexpr"},
                     [[[0, 2, 1], 1], [[1, 2, 1], 1], [[3], 32], [[4], 32]], [],
                     {"3.6": ["src"] * 4 + ["dst"] * 4 + ["alpha"],
                      "3.9": ["src.ptr", "src.shape.0", "src.shape.1", "src.stride.0", "dst.ptr", "dst.shape.0",
                              "dst.shape.1", "dst.stride.0", "alpha"]}),
}
def _tuple_entry(kernel: str, release: str, tmp: Path) -> Path:
    """The cache entry of ``kernel`` from the installed Triton, its tt.func arguments named as ``release`` names them:
    the installed Triton's own names where they are that release's (3.5+ names them as one of the two), else
    written in their place."""
    sig_, consts, attrs, names = TUPLE_KERNELS[kernel]
    entry = Path(make_tuple_cached.compile_entry(kernel, sig_, consts, attrs, str(tmp / "cache")))
    for ir in [entry / f"{kernel}.ttgir", entry / f"{kernel}.ttir"]:
        head, args, tail = _func_args(ir.read_text())
        recorded = [m.group(1) if m else None for m in (re.search(r'loc\("([^"]*)"', a) for a in args)]
        assert recorded in names.values() if NAMED else not any(recorded), f"Triton {API.version} names {recorded}"
        if recorded != names[release]:
            args = [re.sub(r"loc\(.*\)$", f'loc("{n}")', a.strip(), flags=re.S) for a, n in zip(args, names[release])]
            ir.write_text(head + ", ".join(args) + tail)
    return entry


def _func_args(text: str) -> tuple[str, list[str], str]:
    """The text before the public tt.func's arguments, the arguments, the text after them."""
    start = text.index("(", text.index("tt.func public")) + 1
    end = text.index(") attributes", start)
    return text[:start], split_top_level(text[start:end], "([{<", '"'), text[end:]


RELEASES = pytest.mark.parametrize("release", ["3.6", "3.9"])


@RELEASES
def test_a_tuple_kernel_imports_with_the_tuples_the_entry_records(release: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    entry = _tuple_entry("tuple_add", release, tmp_path)
    report = build([request(str(entry))], BuildConfig(out=str(tmp_path / "bare"), progress=False))
    doc = json.loads((tmp_path / "bare" / "tuple_add" / "metadata.json").read_text())
    assert [(p["name"], p["type"]) for p in doc["signature"]] == [
        ("ptrs[0]", "*fp32"), ("ptrs[1]", "*fp32"), ("ptrs[2]", "*fp32"), ("n", "i32")]
    assert doc["tuples"] == [{"name": "ptrs", "kind": "tuple", "items": ["ptrs[0]", "ptrs[1]", "ptrs[2]"]}]
    note, = report.notes
    assert "tuple_add[grid](ptrs, n);" in note and "records no parameter names" not in note
    assert "ptrs: a tuple as the IR records it, without its constexpr and None elements" in note
    # --constexpr gives BLOCK back: called as the Triton kernel is
    run([str(entry), "-o", str(tmp_path / "full"), "-q", "--constexpr", "BLOCK=1024"])
    assert _inspect_call(tmp_path / "full" / "tuple_add", capsys) == (
        "tuple_add[grid](ptrs: (*fp32:16, *fp32, *fp32), n: i32, BLOCK=1024)")
    needs_cuda_python()
    with installed(H200) as fake:
        for out in ("bare", "full"):
            k = tr.Kernel.load(str(tmp_path / out / "tuple_add"))
            k[4]((0x1000, 0x2000, 0x3000), 1000)  # tuple_add[grid]((x, y, out), n)
        k[4]([0x1000, 0x2000, 0x3000], n=1000, BLOCK=1024)
        assert len(fake.launches) == 3
        with pytest.raises(tr.ArgumentError, match="ptrs must be a tuple of 3 elements"):
            k[4]((0x1000, 0x2000), 1000)


@RELEASES
def test_a_namedtuple_kernel_imports_with_a_signature_and_constexprs(release: str, tmp_path: Path) -> None:
    entry = _tuple_entry("record_scale", release, tmp_path)
    tensor = "Tensor(ptr=*fp32, shape=(i32, i32), stride=(i32, i32:1))"
    # --constexpr beside a tuple --signature, with --arg-names: every parameter in the kernel's order
    build([request(str(entry), signature=f"{tensor}, {tensor}, fp32", arg_names=("src", "dst", "alpha", "BM", "BN"),
                   constexprs={"BM": 32, "BN": 32})], BuildConfig(out=str(tmp_path / "a"), progress=False))
    doc = json.loads((tmp_path / "a" / "record_scale" / "metadata.json").read_text())
    assert [p["name"] for p in doc["signature"]] == [
        "src.ptr", "src.shape[0]", "src.shape[1]", "src.stride[0]", "src.stride[1]", "dst.ptr", "dst.shape[0]",
        "dst.shape[1]", "dst.stride[0]", "dst.stride[1]", "alpha", "BM", "BN"]
    assert [t["kind"] for t in doc["tuples"]] == ["namedtuple", "namedtuple"]
    with pytest.raises(SignatureError, match="pass --arg-names with every parameter"):
        build([request(str(entry), signature=f"{tensor}, {tensor}, fp32", constexprs={"BM": 32, "BN": 32})],
              BuildConfig(out=str(tmp_path / "b"), progress=False))
    # a plain tuple where the entry records a NamedTuple's fields (3.9); 3.5-3.6 record the tuple's name only
    plain = "(*fp32, (i32, i32), (i32, i32:1))"
    flags = dict(signature=f"{plain}, {plain}, fp32, 32, 32", arg_names=("src", "dst", "alpha", "BM", "BN"))
    if release == "3.9":
        with pytest.raises(RecordMismatchError, match=r"runtime argument 0 is 'src\[0\]' by the signature but 'src.ptr'"):
            build([request(str(entry), **flags)], BuildConfig(out=str(tmp_path / "c"), progress=False))
    else:
        build([request(str(entry), **flags)], BuildConfig(out=str(tmp_path / "c"), progress=False))
    with pytest.raises(RecordMismatchError, match=r"runtime parameter 0 is 'dst.ptr' in --arg-names but 'src"):
        build([request(str(entry), signature=f"{tensor}, {tensor}, fp32, 32, 32",
                       arg_names=("dst", "src", "alpha", "BM", "BN"))], BuildConfig(out=str(tmp_path / "d"), progress=False))


@RELEASES
def test_a_tuples_constexpr_elements_come_back_with_the_signature(release: str, tmp_path: Path) -> None:
    entry = _tuple_entry("tuple_nested", release, tmp_path)
    report = build([request(str(entry))], BuildConfig(out=str(tmp_path / "bare"), progress=False))
    bare = [p["name"] for p in json.loads((tmp_path / "bare" / "tuple_nested" / "metadata.json").read_text())["signature"]]
    # 3.9 records each element's path (the constexpr and None ones left out), 3.5-3.6 the tuple's name only
    assert bare == (["io[0][0]", "io[1][0]"] if release == "3.9" else ["io[0]", "io[1]"]) + ["coef[0]", "coef[1]", "n"]
    assert "io, coef: a tuple as the IR records it" in report.notes[0]
    build([request(str(entry), signature="((*fp32, None), (*fp32, 3)), (fp32, fp32), i32",
                   arg_names=("io", "coef", "n", "BLOCK"), constexprs={"BLOCK": 1024})],
          BuildConfig(out=str(tmp_path / "full"), progress=False))
    doc = json.loads((tmp_path / "full" / "tuple_nested" / "metadata.json").read_text())
    assert [(p["name"], p.get("value")) for p in doc["signature"] if p["kind"] == "constexpr"] == [
        ("io[0][1]", None), ("io[1][1]", 3), ("BLOCK", 1024)]
    assert format_nested([tr.abi.Parameter(p["name"], p["kind"], p.get("type"), p.get("divisibility", 1), p.get("value"))
                          for p in doc["signature"]]) == "((*fp32, None), (*fp32, 3)), (fp32, fp32), i32, 1024"


def test_tuple_elements_with_a_gap_ask_for_the_signature() -> None:
    fn = read_function(TTIR_35.replace('"x_ptr"', '"t.0"').replace('"n"', '"t.2"'), "k.ttir")
    assert [p.name for p in fn.params] == ["t[0]", "t[2]"]
    with pytest.raises(SignatureError, match=r"make no tuple: .*pass --signature with every parameter"):
        from_ir("k.ttir", fn, None, {})
    params = from_signature("k.ttir", parse_signature("(*fp32:16, 3, i32)"), None, {}, fn)
    assert [(p.name, p.kind) for p in params] == [("t[0]", "runtime"), ("t[1]", "constexpr"), ("t[2]", "runtime")]


def test_a_tuple_with_one_element_in_the_ir_is_named_after_the_tuple() -> None:
    """Triton 3.5-3.6 name a tuple's elements after the tuple: test_namedtuple's closure = Function(fn, (a,)) is one
    pointer in the IR, named 'closure' (issue 29); the signature puts it at closure.captured[0]."""
    fn = read_function(TTIR_35.replace('"x_ptr"', '"closure"'), "k.ttir")
    assert ([p.name for p in fn.params], fn.named, fn.flat) == (["closure", "n"], True, False)
    entries = parse_signature("(fn=acts:relu, captured=(*fp32:16,)), i32")
    params = from_signature("k.ttir", entries, ("closure", "n"), {}, fn)
    assert [(p.name, p.kind) for p in params] == [("closure.fn", "constexpr"), ("closure.captured[0]", "runtime"),
                                                  ("n", "runtime")]
    with pytest.raises(RecordMismatchError, match="runtime parameter 0 is 'n' in --arg-names but 'closure' in the IR"):
        from_signature("k.ttir", parse_signature("i32, (fn=acts:relu, captured=(*fp32:16,))"), ("n", "closure"), {}, fn)


# --- unsigned scalars -------------------------------------------------------------------------------------------
FILL = textwrap.dedent("""
    import triton
    import triton.language as tl


    @triton.jit
    def fill(x_ptr, v, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, v, mask=offs < n)
""")
# the cache entry Triton's JIT writes for fill[grid](torch.uint64 tensor, 2**64 - 1, n, BLOCK=256)
COMPILE_FILL = textwrap.dedent("""
    import importlib.util, sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    spec = importlib.util.spec_from_file_location("fill", sys.argv[1])
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    sig = dict(x_ptr="*u64", v="u64", n="i32", BLOCK="constexpr")
    triton.compile(ASTSource(mod.fill, sig, {(3,): 256}, {(0,): [["tt.divisibility", 16]]}), target=GPUTarget("cuda", 90, 32))
""")


def test_unsigned_types_come_back_with_the_signature(tmp_path: Path) -> None:
    (tmp_path / "fill.py").write_text(FILL)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(TRITON_CACHE_DIR=str(tmp_path / "cache"), TRITON_DISABLE_LINE_INFO="1")
    subprocess.run([sys.executable, "-c", COMPILE_FILL, str(tmp_path / "fill.py")], env=env, check=True)
    entry = next((tmp_path / "cache").rglob("fill.cubin")).parent
    assert "signature" not in json.loads((entry / "fill.json").read_text())  # Triton's JSON: no Python-level types
    report = build([request(str(entry))], BuildConfig(out=str(tmp_path / "bare"), progress=False))
    types = [p["type"] for p in json.loads((tmp_path / "bare" / "fill" / "metadata.json").read_text())["signature"]]
    assert types == ["*i64", "i64", "i32"]  # the IR's: MLIR integers are signless
    assert "signed, as the IR has no unsigned types: where the kernel takes u64" in report.notes[0]
    names = ["--arg-names", "x_ptr,v,n,BLOCK"]
    run([str(entry), "-o", str(tmp_path / "u"), "-q", "--signature", "*u64:16, u64, i32, 256", *names])
    signature = json.loads((tmp_path / "u" / "fill" / "metadata.json").read_text())["signature"]
    assert [p.get("type") for p in signature] == ["*u64", "u64", "i32", None]
    with pytest.raises(SignatureError, match="parameter v is u32 in the signature but i64 in the IR"):
        build([request(str(entry), signature="*u64:16, u32, i32, 256", arg_names=tuple(names[1].split(",")))],
              BuildConfig(out=str(tmp_path / "w"), progress=False))
    needs_cuda_python()
    with installed(H200) as fake:
        k = tr.Kernel.load(str(tmp_path / "u" / "fill"))
        fake.param_sizes = Layout.build(k.metadata.runtime_params, k.variant.hidden_params).sizes
        k[1](0x1000, 2**64 - 1, 100)
        assert fake.launches[-1]["params"][1] == b"\xff" * 8
        with pytest.raises(tr.ScalarArgumentError, match=r"\(i64\) must be in \[-9223372036854775808, "):
            tr.Kernel.load(str(tmp_path / "bare" / "fill"))[1](0x1000, 2**64 - 1, 100)  # what the import note warns of
