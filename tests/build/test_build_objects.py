"""Constexprs that are Triton objects in the build: a dtype (``tl.float16``) and a @triton.jit function
(``object_kernels:relu``) written in --signature, --constexpr and a spec file, or derived by @tmlr_build.jit from the
objects a call passes; Triton gets the real objects, metadata.json records their text (schema v7); a family over a
dtype type variable (``tl.T``); a Triton cache entry given its dtype back with --constexpr; the committed artifacts of
tests/gpu/object_kernels.json. The kernels: tests/gpu/object_kernels.py."""
from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tmlr_runtime as tr
from fake_driver import H200, installed
from tmlr_build import BuildConfig, SignatureError, SpecError, build, jit, parse_arch_list, request
from tmlr_build.builder.jit_specialize import specialize
from tmlr_build.cli import run
from tmlr_build.common import signature as sig
from tmlr_runtime.objects import DTYPE, JIT_FUNCTION, TritonObject
from triton_facts import FakeTensor, committed_triton_only, spec_entries

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "tests" / "gpu"
SPEC = GPU / "object_kernels.json"
KERNELS = GPU / "object_kernels.py"
sys.path.insert(0, str(GPU))
import object_kernels  # noqa: E402

F16 = {"name": "DT", "kind": "constexpr", "value": "fp16", "object": "dtype"}
RELU = {"name": "ACT", "kind": "constexpr", "value": "object_kernels:relu", "object": "jit_function"}


def _meta(artifact: Path) -> dict[str, Any]:
    return json.loads((artifact / "metadata.json").read_text())


def _cubin(artifact: Path) -> bytes:
    return next(artifact.glob("*.cubin")).read_bytes()


def _params(text: str, names: str, constexprs: str = "") -> list[Any]:
    return sig.bind_python_signature("k", names.split(","), sig.parse_signature(text), {}, {}, set(constexprs.split(",")))


def test_the_signature_language_writes_triton_objects() -> None:
    params = _params("*fp32:16, *bf16:16, i32, triton.language.bfloat16, object_kernels:relu, tl.float8e4nv",
                     "x,out,n,DT,ACT,F8", "DT,ACT,F8")
    assert [p.value for p in params[3:]] == [TritonObject(DTYPE, "bf16"), TritonObject(JIT_FUNCTION, "object_kernels:relu"),
                                             TritonObject(DTYPE, "fp8e4nv")]
    assert sig.format_signature(params) == "*fp32:16, *bf16:16, i32, tl.bfloat16, object_kernels:relu, tl.float8e4nv"
    assert sig.parse_constexpr_assignments(["DT=tl.float32", "ACT=pkg.acts:Act.gelu", "S='tl.float32'"]) == {
        "DT": TritonObject(DTYPE, "fp32"), "ACT": TritonObject(JIT_FUNCTION, "pkg.acts:Act.gelu"), "S": "tl.float32"}
    assert sig.spec_constexpr("tl.float16") == TritonObject(DTYPE, "fp16") and sig.spec_constexpr("relu") == "relu"
    assert sig.spec_constexpr(128) == 128 and sig.spec_constexpr("kernels:relu") == TritonObject(JIT_FUNCTION, "kernels:relu")


@pytest.mark.parametrize("text, names, constexprs, words", [
    ("tl.bf16", "DT", "DT", "'tl.bf16' is no Triton dtype; write one as triton.language names it: tl.int1,"),
    ("bfloat16", "DT", "DT", "Triton dtypes like tl.bfloat16 and @triton.jit functions as module:qualname"),
    ("tl.float16", "x", "", "parameter x is not a tl.constexpr; give it a type, not tl.float16"),
    ("kernels:relu", "x", "", "parameter x is not a tl.constexpr; give it a type, not kernels:relu"),
    ("i32:relu", "x", "", "the hint after ':' must be 16"),
])
def test_a_bad_object_entry_is_a_signature_error(text: str, names: str, constexprs: str, words: str) -> None:
    with pytest.raises(SignatureError, match=words.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        _params(text, names, constexprs)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _spec(tmp_path: Path, entry: dict[str, Any]) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"arch": [90], "kernels": [{"source": str(KERNELS), **entry}]}))
    return path


def test_a_dtype_constexpr_is_built_from_a_signature_a_spec_and_the_jit_alike(tmp_path: Path, cache: Path) -> None:
    run([f"{KERNELS}:cast", "--signature", "*fp32:16, *fp16:16, i32, tl.float16, 1024", "--arch", "90", "-o",
         str(tmp_path / "cli"), "-q"])
    run(["--spec", str(_spec(tmp_path, {"kernel": "cast", "signature": "*fp32:16, *fp16:16, i32",
                                         "constexprs": {"DT": "tl.float16", "BLOCK": 1024}})), "-o", str(tmp_path / "spec"), "-q"])
    import triton.language as tl

    jitted = Path(jit(object_kernels.cast).build_only(FakeTensor(16), FakeTensor(32, "torch.float16"), 1000, tl.float16,
                                                      1024, arch=90))
    artifacts = [tmp_path / "cli" / "cast", tmp_path / "spec" / "cast", jitted]
    for artifact in artifacts:
        meta = _meta(artifact)
        assert meta["schema_version"] == 7 and meta["signature"][3] == F16, artifact
        assert meta["signature"] == _meta(artifacts[0])["signature"] and _cubin(artifact) == _cubin(artifacts[0])
    # Triton got tl.float16 itself: the cubin converts to fp16 (a string 'fp16' makes Triton fail)
    run([f"{KERNELS}:cast", "--signature", "*fp32:16, *fp32:16, i32, tl.float32, 1024", "--arch", "90", "-o",
         str(tmp_path / "f32"), "-q"])
    assert _cubin(tmp_path / "f32" / "cast") != _cubin(artifacts[0])


def test_a_jit_function_constexpr_is_built_from_a_signature_a_spec_and_the_jit_alike(tmp_path: Path, cache: Path) -> None:
    run([f"{KERNELS}:apply", "--signature", "*fp32:16, *fp32:16, i32", "--constexpr", "ACT=object_kernels:relu",
         "--constexpr", "BLOCK=1024", "--arch", "90", "-o", str(tmp_path / "cli"), "-q"])
    run(["--spec", str(_spec(tmp_path, {"kernel": "apply", "signature": "*fp32:16, *fp32:16, i32, object_kernels:relu, 1024"})),
         "-o", str(tmp_path / "spec"), "-q"])
    call = (FakeTensor(16), FakeTensor(32), 1000, object_kernels.relu, 1024)
    assert specialize(object_kernels.apply, call, {}).entries[3] == "object_kernels:relu"
    jitted = Path(jit(object_kernels.apply).build_only(*call, arch=90))
    artifacts = [tmp_path / "cli" / "apply", tmp_path / "spec" / "apply", jitted]
    for artifact in artifacts:
        meta = _meta(artifact)
        assert meta["schema_version"] == 7 and meta["signature"][3] == RELU, artifact
        assert _cubin(artifact) == _cubin(artifacts[0])


KERNEL_FILE = '''
import triton
import triton.language as tl
from acts import relu


@triton.jit
def double(x):
    return x + x


@triton.jit
def apply(x_ptr, out_ptr, n, ACT: tl.constexpr, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, ACT(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


@triton.jit
def scale(x_ptr, out_ptr, n, DT: tl.constexpr = tl.float16, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n).to(DT), mask=offs < n)
'''
ACTS_FILE = '''
import triton
import triton.language as tl


@triton.jit
def relu(x):
    return tl.maximum(x, 0.0)
'''


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("objects")
    (d / "k.py").write_text(textwrap.dedent(KERNEL_FILE))
    (d / "acts.py").write_text(textwrap.dedent(ACTS_FILE))
    return d


def _build(d: Path, out: Path, kernel: str, signature: str, **constexprs: Any) -> dict[str, Any]:
    build([request(f"{d / 'k.py'}:{kernel}", signature=signature, constexprs=constexprs)],
          BuildConfig(out=str(out), archs=parse_arch_list("90"), progress=False))
    return _meta(out / kernel)


def test_a_jit_function_is_written_where_it_is_defined(sources: Path, tmp_path: Path) -> None:
    meta = _build(sources, tmp_path / "ok", "apply", "*fp32:16, *fp32:16, i32, acts:relu")  # a sibling module's
    assert meta["signature"][3] == {**RELU, "value": "acts:relu"} and meta["signature"][4] == {"name": "BLOCK", "kind": "constexpr", "value": 128}
    assert _build(sources, tmp_path / "own", "apply", "*fp32:16, *fp32:16, i32, k:double")["signature"][3]["value"] == "k:double"
    for text, words in [("k:relu", "constexpr ACT = k:relu is acts:relu, defined there; write acts:relu"),
                        ("k:nope", "constexpr ACT = k:nope: AttributeError"),
                        ("k:tl", "constexpr ACT = k:tl is a module, not a @triton.jit function"),
                        ("nomodule:relu", "constexpr ACT = nomodule:relu: ModuleNotFoundError")]:
        with pytest.raises(SignatureError, match=words) as e:
            _build(sources, tmp_path / "bad", "apply", f"*fp32:16, *fp32:16, i32, {text}")
        assert "write a @triton.jit function as module:qualname" in str(e.value) or "defined there" in str(e.value)


def test_a_dtype_default_is_recorded_as_the_object(sources: Path, tmp_path: Path) -> None:
    meta = _build(sources, tmp_path, "scale", "*fp32:16, *fp16:16, i32")
    assert meta["schema_version"] == 7 and meta["signature"][3] == F16


def test_the_jit_names_a_scripts_function_as_the_build_imports_it(sources: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel run as a script lives in __main__; the build imports its file as a module named after it."""
    monkeypatch.syspath_prepend(str(sources))
    script = runpy.run_path(str(sources / "k.py"), run_name="__main__")
    call = (FakeTensor(16), FakeTensor(32), 1000, script["relu"])
    assert specialize(script["apply"], call, {}).entries[3] == "acts:relu"  # defined elsewhere: its own module
    spec = specialize(script["apply"], (FakeTensor(16), FakeTensor(32), 1000, script["double"]), {})
    assert script["double"].fn.__module__ == "__main__" and spec.entries[3] == "k:double"  # k.py's module: named k
    assert spec.values[3] == TritonObject(JIT_FUNCTION, "k:double")  # what the jit's launch passes: the record


def test_a_family_over_a_dtype_type_variable(tmp_path: Path) -> None:
    run(["--spec", str(_spec(tmp_path, {"kernel": "cast", "signature": "*fp32:16, *T:16, i32, tl.T, 256",
                                         "types": {"T": ["fp16", "bf16", "fp32"]}})), "-o", str(tmp_path / "out"), "-q"])
    index = _meta(tmp_path / "out" / "cast")
    assert index["schema_version"] == 3 and [v["signature"] for v in index["variants"]] == [
        f"*fp32:16, *{t}:16, i32, tl.{name}, 256" for t, name in [("fp16", "float16"), ("bf16", "bfloat16"), ("fp32", "float32")]]
    for v in index["variants"]:
        assert _meta(tmp_path / "out" / "cast" / v["dir"])["schema_version"] == 7
    with pytest.raises(SpecError, match=r"type variable T is a dtype constexpr \(tl.T\), but Triton has no dtype for u1"):
        run(["--spec", str(_spec(tmp_path, {"kernel": "cast", "signature": "*fp32:16, *T:16, i32, tl.T, 256",
                                             "types": {"T": ["fp16", "u1"]}})), "-o", str(tmp_path / "bad"), "-q"])


# the cache entry Triton's JIT writes for cast[grid](x, out, n, DT=tl.float16, BLOCK=1024)
COMPILE = textwrap.dedent("""
    import importlib.util, sys
    import triton, triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    spec = importlib.util.spec_from_file_location("object_kernels", sys.argv[1])
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    sig = dict(x_ptr="*fp32", out_ptr="*fp16", n="i32", DT="constexpr", BLOCK="constexpr")
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(2)}
    triton.compile(ASTSource(mod.cast, sig, {(3,): tl.float16, (4,): 1024}, attrs), target=GPUTarget("cuda", 90, 32))
""")


def test_a_cache_entry_gets_its_dtype_back_with_constexpr(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(TRITON_CACHE_DIR=str(tmp_path / "cache"), TRITON_DISABLE_LINE_INFO="1")
    subprocess.run([sys.executable, "-c", COMPILE, str(KERNELS)], env=env, check=True)
    entry = next((tmp_path / "cache").rglob("cast.cubin")).parent
    run([str(entry), "-o", str(tmp_path / "out"), "-q", "--arg-names", "x_ptr,out_ptr,n,DT,BLOCK",
         "--constexpr", "DT=tl.float16", "--constexpr", "BLOCK=1024"])
    meta = _meta(tmp_path / "out" / "cast")
    assert meta["schema_version"] == 7 and meta["signature"][3:] == [F16, {"name": "BLOCK", "kind": "constexpr", "value": 1024}]
    assert _cubin(tmp_path / "out" / "cast") == (entry / "cast.cubin").read_bytes()
    # the API takes the objects themselves, as a call passes them (issue 29: test_cast's TO_TYPE=tl.int8)
    import triton.language as tl

    build([request(str(entry), constexprs={"DT": tl.float16, "BLOCK": tl.constexpr(1024)},
                   arg_names=("x_ptr", "out_ptr", "n", "DT", "BLOCK"))], BuildConfig(out=str(tmp_path / "api"), progress=False))
    assert _meta(tmp_path / "api" / "cast")["signature"] == meta["signature"]
    torch = pytest.importorskip("torch")
    import triton.language as tl

    with installed(H200) as fake:
        k = tr.Kernel.load(str(tmp_path / "out" / "cast"))
        k[1](0x1000, 0x2000, 1000, DT=tl.float16, BLOCK=1024)  # as cast[grid](...) is called
        k[1](0x1000, 0x2000, 1000, torch.float16)
        with pytest.raises(tr.ConstexprMismatchError, match=r"compiled as tl\.float16, got triton\.language\.float32"):
            k[1](0x1000, 0x2000, 1000, DT=tl.float32)
        assert len(fake.launches) == 2


def test_the_api_takes_triton_objects_as_constexpr_values() -> None:
    import triton.language as tl

    req = request(f"{KERNELS}:apply", constexprs={"ACT": object_kernels.relu, "BLOCK": tl.constexpr(64),
                                                  "DT": [tl.float16, tl.constexpr(tl.bfloat16)], "S": "tl.float16"})
    assert req.constexprs == {"ACT": TritonObject(JIT_FUNCTION, "object_kernels:relu"), "BLOCK": 64,
                              "DT": [TritonObject(DTYPE, "fp16"), TritonObject(DTYPE, "bf16")], "S": "tl.float16"}


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@committed_triton_only
def test_committed_object_artifacts_are_what_the_spec_builds(tmp_path: Path) -> None:
    run(["--spec", str(SPEC), "-o", str(tmp_path), "-q"])
    for name in [k.get("name", k["kernel"]) for k in spec_entries(json.loads(SPEC.read_text()))]:
        assert _tree(tmp_path / name) == _tree(GPU / "artifacts" / name), (
            f"tests/gpu/artifacts/{name} is stale: rebuild with the command in tests/gpu/object_kernels.json")
        for path in (tmp_path / name).rglob("metadata.json"):  # a family's index (v3) and every kernel's metadata (v7)
            doc = json.loads(path.read_text())
            assert doc["schema_version"] == (3 if doc.get("kind") == "family" else 7), path
