"""Constexprs that are Triton objects (metadata schema v7) on a fake driver: the committed artifacts of
tests/gpu/object_kernels.json (a dtype constexpr DT, a @triton.jit function ACT, a family over DT) take at the call the
object, its text or the torch dtype of the same type, recognised without importing Triton; anything else is a
ConstexprMismatchError that shows the recorded value as it is written (tl.float16). Older documents keep loading, and a
document that records an object but says an older version is refused."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import tmlr_runtime as tr
from fake_driver import H200, installed
from tmlr_runtime.abi import TL_DTYPES, Parameter
from tmlr_runtime.objects import DTYPE, JIT_FUNCTION, TritonObject, of, parse

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "gpu" / "artifacts"
X, OUT, N = 0x10000, 0x20000, 1000  # 16-byte aligned addresses the fake driver takes for device memory


class dtype:  # what tmlr_runtime sees of a triton.language dtype: its type's module and name, and .name
    __module__ = "triton.language.core"

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"triton.language.{TL_DTYPES[self.name][0]}"


class JITFunction:  # ... of a @triton.jit function: .fn, with its module and qualname, and Triton's cache_key
    __module__ = "triton.runtime.jit"

    def __init__(self, module: str, qualname: str, cache_key: str | None = None) -> None:
        self.fn = SimpleNamespace(__module__=module, __qualname__=qualname)
        if cache_key is not None:
            self.cache_key = cache_key

    def __repr__(self) -> str:
        return f"JITFunction({self.fn.__module__}:{self.fn.__qualname__})"


class TorchDtype:  # ... of a torch dtype: its type's module and name, and its text
    __module__ = "torch"

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


TorchDtype.__name__ = "dtype"


def _load(name: str):
    return tr.Kernel.load(str(ARTIFACTS / name))


def test_the_committed_artifacts_record_the_objects_by_their_text() -> None:
    cast = json.loads((ARTIFACTS / "cast_fp16" / "metadata.json").read_text())
    apply = json.loads((ARTIFACTS / "apply_relu" / "metadata.json").read_text())
    assert cast["schema_version"] == apply["schema_version"] == 7
    assert cast["signature"][3] == {"name": "DT", "kind": "constexpr", "value": "fp16", "object": "dtype"}
    assert apply["signature"][3] == {"name": "ACT", "kind": "constexpr", "value": "object_kernels:relu", "object": "jit_function"}
    meta = tr.ArtifactMetadata.read(ARTIFACTS / "cast_fp16")
    assert meta.constexprs == {"DT": TritonObject(DTYPE, "fp16"), "BLOCK": 1024}
    assert repr(meta.constexprs["DT"]) == "tl.float16" and meta.signature[3].to_json() == cast["signature"][3]


@pytest.mark.parametrize("value", [dtype("fp16"), "fp16", "tl.float16", "triton.language.float16", TorchDtype("torch.float16"),
                                   TritonObject(DTYPE, "fp16")], ids=["tl-dtype", "name", "tl-text", "triton-text", "torch", "record"])
def test_a_dtype_constexpr_takes_what_stands_for_it(value: object) -> None:
    with installed(H200) as fake:
        k = _load("cast_fp16")
        k[1](X, OUT, N)  # omitted: the compiled value
        k[1](X, OUT, N, value)
        k[1](X, OUT, N, DT=value, BLOCK=1024)
        assert len(fake.launches) == 3


def test_the_real_objects_are_taken() -> None:
    torch = pytest.importorskip("torch")
    tl = pytest.importorskip("triton.language")
    with installed(H200) as fake:
        k = _load("cast_fp16")
        k[1](X, OUT, N, tl.float16)
        k[1](X, OUT, N, DT=torch.float16)
        with pytest.raises(tr.ConstexprMismatchError, match=r"compiled as tl\.float16, got triton\.language\.float32; pass "
                                                             r"tl\.float16 \(or omit it\), or rebuild with --constexpr DT=tl\.float32"):
            k[1](X, OUT, N, tl.float32)
        assert len(fake.launches) == 2


@pytest.mark.parametrize("value, got", [(dtype("fp32"), "triton.language.float32"), (TorchDtype("torch.float32"), "torch.float32"),
                                        ("fp32", "'fp32'"), ("tl.bfloat16", "'tl.bfloat16'"), (16, "16"), (None, "None"),
                                        (JITFunction("object_kernels", "relu"), "JITFunction(object_kernels:relu)")])
def test_anything_else_is_a_constexpr_mismatch(value: object, got: str) -> None:
    with installed(H200) as fake:
        k = _load("cast_fp16")
        with pytest.raises(tr.ConstexprMismatchError) as e:
            k[1](X, OUT, N, DT=value)
        assert e.value.param == "DT" and "compiled as tl.float16, got " in str(e.value) and "pass tl.float16" in str(e.value)
        assert got in str(e.value), str(e.value)
        assert fake.launches == []
    if isinstance(value, TorchDtype):  # the rebuild hint in the build's words
        assert "--constexpr DT=tl.float32" in str(e.value)


def test_a_jit_function_constexpr_takes_the_function_or_its_text() -> None:
    with installed(H200) as fake:
        k = _load("apply_relu")
        k[1](X, OUT, N, JITFunction("object_kernels", "relu"))
        k[1](X, OUT, N, ACT="object_kernels:relu")
        assert len(fake.launches) == 2
        for other in (JITFunction("object_kernels", "gelu"), JITFunction("kernels", "relu"), "relu", dtype("fp32")):
            with pytest.raises(tr.ConstexprMismatchError, match="compiled as object_kernels:relu, got"):
                k[1](X, OUT, N, ACT=other)
        assert len(fake.launches) == 2


def test_the_real_jit_function_is_taken() -> None:
    pytest.importorskip("triton")
    sys.path.insert(0, str(ROOT / "tests" / "gpu"))
    try:
        import object_kernels
    finally:
        sys.path.remove(str(ROOT / "tests" / "gpu"))
    with installed(H200) as fake:
        _load("apply_relu")[1](X, OUT, N, object_kernels.relu)
        with pytest.raises(tr.ConstexprMismatchError, match="got JITFunction"):
            _load("apply_relu")[1](X, OUT, N, object_kernels.cast)
        assert len(fake.launches) == 1


def test_a_family_chooses_its_variant_by_the_dtype() -> None:
    with installed(H200):
        family = tr.Kernel.load(str(ARTIFACTS / "cast_family"))
        for value, want in [(dtype("bf16"), "tl.bfloat16"), (TorchDtype("torch.float16"), "tl.float16"), ("bf16", "tl.bfloat16")]:
            chosen = family.choose(X, OUT, N, DT=value)
            assert repr(chosen.constexprs["DT"]) == want
        with pytest.raises(tr.TmlrError, match="DT"):
            family.choose(X, OUT, N, DT=dtype("fp32"))


def test_no_triton_or_torch_is_imported() -> None:
    """A service that never imports Triton or torch passes the text, or objects that look like theirs."""
    script = f"""
import sys
sys.modules['triton'] = sys.modules['torch'] = None
sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'tests')!r}, {str(Path(__file__).parent)!r}]
import tmlr_runtime as tr
from fake_driver import H200, installed
from test_runtime_objects import JITFunction, TorchDtype, dtype
with installed(H200) as fake:
    k = tr.Kernel.load({str(ARTIFACTS / 'cast_fp16')!r})
    k[1]({X}, {OUT}, {N}, dtype('fp16'))
    k[1]({X}, {OUT}, {N}, TorchDtype('torch.float16'))
    k[1]({X}, {OUT}, {N}, 'tl.float16')
    tr.Kernel.load({str(ARTIFACTS / 'apply_relu')!r})[1]({X}, {OUT}, {N}, JITFunction('object_kernels', 'relu'))
    try:
        k[1]({X}, {OUT}, {N}, dtype('fp32'))
    except tr.ConstexprMismatchError as e:
        print(e)
print(len(fake.launches), sorted(m for m in sys.modules if m.split('.')[0] in ('triton', 'torch') and sys.modules[m]))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=str(ROOT)).stdout
    assert "constexpr 'DT' was compiled as tl.float16" in out and out.strip().endswith("4 []"), out


def test_text_and_recognition() -> None:
    for name, (attr, _) in TL_DTYPES.items():
        assert parse(f"tl.{attr}") == parse(f"triton.language.{attr}") == TritonObject(DTYPE, name) == of(dtype(name))
        assert repr(TritonObject(DTYPE, name)) == f"tl.{attr}"
    assert of(TorchDtype("torch.bfloat16")) == TritonObject(DTYPE, "bf16") and of(TorchDtype("torch.bool")) == TritonObject(DTYPE, "int1")
    assert parse("pkg.acts:Act.relu") == TritonObject(JIT_FUNCTION, "pkg.acts:Act.relu")
    for text in ("tl.bf16", "bf16", "relu", "a:b:c", "mod:<locals>.f", "tl.pointer_type"):
        assert parse(text) is None, text
    assert of(JITFunction("test_x", "f.<locals>.g")) is None  # no name to import it by, and no cache_key
    assert of(dtype("void")) is None and of(TorchDtype("torch.complex64")) is None and of("fp16") is None
    p = Parameter("DT", "constexpr", value=TritonObject(DTYPE, "fp8e4nv"))
    assert p.to_json() == {"name": "DT", "kind": "constexpr", "value": "fp8e4nv", "object": "dtype"}


KEY_A, KEY_B = "a" * 64, "0123456789abcdef" * 4


def test_a_function_defined_inside_another_is_recorded_with_its_cache_key() -> None:
    """test_namedtuple's ``mul`` (issue 29): no name to import it by, and a factory's closures share a qualname, so
    Triton's own identity of it, its cache_key, is part of its text; a call takes the function of that key only."""
    text = f"test_tuple:test_namedtuple.<locals>.mul@{KEY_A}"
    assert of(JITFunction("test_tuple", "test_namedtuple.<locals>.mul", KEY_A)) == TritonObject(JIT_FUNCTION, text)
    assert parse(text) == TritonObject(JIT_FUNCTION, text) and parse(f"m:make.<locals>.Act.relu@{KEY_B}") is not None
    for bad in ("test_tuple:test_namedtuple.<locals>.mul", f"m:mul@{KEY_A}", "m:f.<locals>.g@",
                f"m:f.<locals>@{KEY_A}", f"m:f.<locals>.g@{KEY_A.upper()}"):
        assert parse(bad) is None, bad
    assert of(JITFunction("m", "f.<locals>.g", "not-a-key")) is None
    recorded = TritonObject(JIT_FUNCTION, text)
    assert recorded.accepts(JITFunction("test_tuple", "test_namedtuple.<locals>.mul", KEY_A)) and recorded.accepts(text)
    assert not recorded.accepts(JITFunction("test_tuple", "test_namedtuple.<locals>.mul", KEY_B))  # another closure


def test_a_triton_builtin_function_is_recorded_by_its_name() -> None:
    """test_globaltimer passes func=tl.extra.cuda.globaltimer (an @extern builtin, no JITFunction) as a constexpr."""
    def globaltimer():
        pass

    globaltimer.__module__, globaltimer.__qualname__ = "triton.language.extra.cuda.utils", "globaltimer"
    assert of(globaltimer) is None  # a plain function: not Triton's
    globaltimer.__triton_builtin__ = True
    recorded = TritonObject(JIT_FUNCTION, "triton.language.extra.cuda.utils:globaltimer")
    assert of(globaltimer) == recorded and recorded.accepts(globaltimer)
    globaltimer.__module__ = "mine"
    assert of(globaltimer) is None  # a builtin outside Triton: not one tmlr names


def test_the_real_builtin_function_is_recognised() -> None:
    cuda = pytest.importorskip("triton.language.extra.cuda")
    found = of(cuda.globaltimer)
    assert found is not None and found.text.endswith(":globaltimer") and found.text.startswith("triton.language.extra.cuda")


@pytest.mark.parametrize("text, valid", [(f"test_tuple:test_namedtuple.<locals>.mul@{KEY_A}", True),
                                         ("test_tuple:test_namedtuple.<locals>.mul", False),
                                         (f"test_tuple:mul@{KEY_A}", False)])
def test_the_schema_and_the_reader_agree_on_a_local_functions_text(text: str, valid: bool) -> None:
    from schema_sample import JSONSCHEMA, reader_verdict

    doc = json.loads((ARTIFACTS / "apply_relu" / "metadata.json").read_text())
    doc["signature"][3]["value"] = text
    assert JSONSCHEMA.is_valid(doc) == valid and (reader_verdict(doc) is None) == valid
    if valid:
        assert tr.ArtifactMetadata.from_dict(doc).constexprs["ACT"] == TritonObject(JIT_FUNCTION, text)


def _v7_doc() -> dict:
    return json.loads((ARTIFACTS / "cast_fp16" / "metadata.json").read_text())


@pytest.mark.parametrize("change, where, words", [
    (lambda d: d.update(schema_version=5), "$.schema_version", "needs schema_version 7"),
    (lambda d: d.update(schema_version=1), "$.schema_version", "needs schema_version 7"),
    (lambda d: d["signature"][3].update(value="bf15"), "$.signature[3].value", "a Triton dtype name"),
    (lambda d: d["signature"][3].update(value=16), "$.signature[3].value", "a Triton dtype name"),
    (lambda d: d["signature"][3].update(object="jit_function"), "$.signature[3].value", "module:qualname"),
    (lambda d: d["signature"][3].update(object="layout"), "$.signature[3].object", "upgrade tmlr_runtime"),
    (lambda d: d["signature"][0].update(object="dtype"), "$.signature[0]", "not a property"),
])
def test_a_broken_object_record_is_a_schema_error(change, where: str, words: str) -> None:
    doc = _v7_doc()
    change(doc)
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(doc, "metadata.json")
    assert e.value.json_path == where and words in str(e.value), str(e.value)


def test_older_documents_keep_loading_and_say_their_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """A document without Triton objects keeps its version (1, 2, 4 or 5), a string constexpr stays a string; a reader
    that knows versions up to 5 refuses version 7 by its number."""
    old = json.loads((ROOT / "examples" / "artifacts" / "add" / "metadata.json").read_text())
    assert old["schema_version"] == 1 and tr.ArtifactMetadata.from_dict(old).constexprs == {"BLOCK": 1024}
    doc = _v7_doc()
    doc["schema_version"] = 1
    del doc["signature"][3]["object"]  # 'fp16' as a string constexpr, as before: the dtype object is refused
    with installed(H200), pytest.raises(tr.ConstexprMismatchError, match=r"compiled as 'fp16', got triton\.language\.float16"):
        meta = tr.ArtifactMetadata.from_dict(doc)
        assert meta.constexprs["DT"] == "fp16"
        kernel = tr.Kernel(meta, str(ARTIFACTS / "cast_fp16"))
        kernel[1](X, OUT, N, "fp16")
        kernel[1](X, OUT, N, dtype("fp16"))
    from tmlr_runtime.artifact import metadata

    assert metadata.SCHEMA_VERSIONS[:5] == (1, 2, 4, 5, 7) and tr.SCHEMA_VERSION >= 7
    monkeypatch.setattr(metadata, "SCHEMA_VERSIONS", (1, 2, 4, 5))  # the reader before this version
    monkeypatch.setattr(metadata, "_READS", "v1, v2, v4, v5")
    with pytest.raises(tr.SchemaError, match=r"schema_version 7 is not one this tmlr_runtime reads \(kernel metadata of v1, "
                                             r"v2, v4, v5\); a newer tmlr-build wrote it: upgrade tmlr_runtime"):
        tr.ArtifactMetadata.from_dict(copy.deepcopy(_v7_doc()))


def test_inspect_and_verify_show_the_objects(capsys: pytest.CaptureFixture[str]) -> None:
    from tmlr_runtime.cli import main

    assert main(["inspect", "--json", "--no-device", str(ARTIFACTS / "cast_fp16")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "DT=tl.float16 (constexpr)" in doc["call"] and doc["signature"][3]["value"] == "fp16" and doc["signature"][3]["object"] == "dtype"
    assert main(["inspect", "--no-device", str(ARTIFACTS / "cast_family")]) == 0
    assert "*fp32:16, *bf16:16, i32, tl.bfloat16, 1024" in capsys.readouterr().out
    for name in ("cast_fp16", "cast_family", "apply_relu"):
        assert main(["verify", "--no-device", str(ARTIFACTS / name)]) == 0, name
    assert "v7 (this reader: v1, v2, v4, v5, v7, v9)" in capsys.readouterr().out


SERVED_OBJECTS = f"""
import sys
sys.modules['triton'] = None  # a service without Triton: serve's stand-in answers object_kernels' imports
sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'tests')!r}, {str(ARTIFACTS.parent)!r}]
import torch
import tmlr_runtime as tr
from fake_driver import H200, installed
with installed(H200) as fake:
    tr.serve({str(ARTIFACTS)!r}, stand_in_triton=True)
    import object_kernels as ok
    tl = ok.tl
    assert type(ok.cast).__module__ == 'triton.runtime.jit', type(ok.cast)
    for dt in (tl.float16, 'fp16', 'tl.float16', torch.float16, tl.constexpr(tl.float16), tl.bfloat16, 'bf16', torch.bfloat16,
               tl.constexpr(tl.bfloat16)):
        ok.cast[(1,)]({X}, {OUT}, {N}, DT=dt, BLOCK=1024)
    ok.cast[(1,)]({X}, {OUT}, {N}, tl.float16, tl.constexpr(1024))
    for act in (ok.relu, 'object_kernels:relu', tl.constexpr(ok.relu)):
        ok.apply[(1,)]({X}, {OUT}, {N}, ACT=act, BLOCK=1024)
    ok.apply[(1,)]({X}, {OUT}, {N}, ACT=ok.relu, BLOCK=tl.constexpr(1024))
    print('launched', len(fake.launches))
    for kernel, value in ((ok.cast, tl.float32), (ok.cast, tl.constexpr(tl.float32)), (ok.apply, ok.cast)):
        try:
            kernel[(1,)]({X}, {OUT}, {N}, value, 1024)
        except tr.UnservedKernelError as e:
            print('unserved', e.specialization)
    print('launched', len(fake.launches))
"""


def test_served_without_triton_the_stand_ins_objects_are_taken() -> None:
    """Model code served without Triton passes the stand-in's ``tl.bfloat16``, its ``@triton.jit`` functions and
    ``tl.constexpr(...)`` around either (vLLM's ``compute_type=tl.bfloat16``, an activation passed as a constexpr): the
    artifacts built with the real objects take them as they take Triton's, and refuse another object by its text."""
    pytest.importorskip("torch")
    proc = subprocess.run([sys.executable, "-c", SERVED_OBJECTS], capture_output=True, text=True, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "launched 14",
        f"unserved x_ptr=i32:16, out_ptr=i32:16, n=i32, DT=tl.float32, BLOCK=1024",
        f"unserved x_ptr=i32:16, out_ptr=i32:16, n=i32, DT=tl.float32, BLOCK=1024",
        f"unserved x_ptr=i32:16, out_ptr=i32:16, n=i32, ACT=object_kernels:cast, BLOCK=1024",
        "launched 14"], proc.stdout + proc.stderr


def test_a_tl_constexpr_is_the_value_it_holds() -> None:
    """Triton's ``tl.constexpr(...)`` around a call's value (as Triton takes one) is that value: 1 and True still differ."""
    tl = pytest.importorskip("triton.language")
    from tmlr_runtime.launch.convert import same_constexpr
    from tmlr_runtime.objects import unwrap

    assert unwrap(tl.constexpr(tl.float16)) is tl.float16 and unwrap(128) == 128
    assert same_constexpr(tl.constexpr(1024), 1024) and same_constexpr(tl.constexpr(True), True)
    assert not same_constexpr(tl.constexpr(True), 1) and not same_constexpr(tl.constexpr(1), True)
    with installed(H200) as fake:
        k = _load("cast_fp16")
        k[1](X, OUT, N, tl.constexpr(tl.float16), tl.constexpr(1024))
        k[1](X, OUT, N, DT=tl.constexpr(tl.float16))
        with pytest.raises(tr.ConstexprMismatchError, match=r"got triton\.language\.float32; pass tl\.float16 \(or omit it\), or "
                                                             r"rebuild with --constexpr DT=tl\.float32"):
            k[1](X, OUT, N, DT=tl.constexpr(tl.float32))
        family = tr.Kernel.load(str(ARTIFACTS / "cast_family"))
        assert repr(family.choose(X, OUT, N, DT=tl.constexpr(tl.bfloat16)).constexprs["DT"]) == "tl.bfloat16"
        family[1](X, OUT, N, DT=tl.constexpr(tl.bfloat16))  # the family's memo keys the value (Triton's wrapper has no hash)
        assert len(fake.launches) == 3
