"""compile/triton_api.py against what each Triton release does (facts checked in each release's own venv:
tools/test_triton_versions.sh runs this file under every supported release), and the host tensor
descriptor record it feeds (common/tensordesc.py, the schema)."""
from __future__ import annotations

import copy
import json

import jsonschema
import pytest

import tmlr_runtime
from tmlr_build.common import errors as E
from tmlr_build.common.mlir_text import read_function
from tmlr_build.common.signature import parse_signature
from tmlr_build.common.tensordesc import descriptor_json, parse_type, read_sidecar_entry, tensormap
from tmlr_build.common.triton_check import SUPPORTED, TESTED, release_in_range, release_range
from tmlr_build.compile import triton_api
from tmlr_runtime.abi import Parameter
from triton_facts import API, ROOT

# What the research pass found by running each release (docs/triton-versions.md has the sources):
# (make_ir takes target, add_stages takes language, cluster_dims option, bool type, hidden params,
#  extra ptxas flags, ptxas for sm_90 is ptxas-blackwell)
FACTS = {
    "3.3": (False, False, True, "i1", ("global_scratch",), (), False),
    "3.4": (False, True, True, "u1", ("global_scratch",), (), False),
    "3.5": (True, True, True, "u1", ("global_scratch", "profile_scratch"), (), False),
    "3.6": (True, True, False, "u1", ("global_scratch", "profile_scratch"), (), False),
    "3.7": (True, True, False, "u1", ("global_scratch", "profile_scratch"), ("--regAllocOptLevel=2",), False),
    "3.8": (True, True, False, "u1", ("global_scratch", "profile_scratch"), ("--regAllocOptLevel=2",), False),
    "3.9": (True, True, False, "u1", ("global_scratch", "profile_scratch"), ("--regAllocOptLevel=2",), True),
}


def test_the_table_and_the_supported_list_agree() -> None:
    assert tuple(triton_api._RELEASES) == SUPPORTED == tuple(FACTS)
    assert [v.rsplit(".", 1)[0] for v in TESTED] == list(SUPPORTED)


def test_the_installed_release_is_described_as_it_behaves() -> None:
    takes_target, language, cluster_option, bool_type, hidden, flags, blackwell90 = FACTS[API.release]
    assert (API.make_ir_takes_target, API.language is not None, API.cluster_dims_option) == (
        takes_target, language, cluster_option)
    assert (API.bool_type, API.hidden_params, API.ptxas_flags) == (bool_type, hidden, flags)
    assert API.ptxas_path(90).endswith("ptxas-blackwell") == blackwell90
    assert API.ptxas_path(80).endswith("/ptxas")
    assert API.host_descriptors == (API.release != "3.3")
    assert triton_api.current() is API  # described once per process


def test_cluster_rule() -> None:
    if API.cluster_dims_option:  # 3.3-3.5: Triton's metadata has the option's cluster shape
        assert API.cluster_dims({"cluster_dims": [2, 1, 1], "num_ctas": 1}) == (2, 1, 1)
    else:  # 3.6+: grid x num_ctas CTAs in clusters of (num_ctas, 1, 1)
        assert API.cluster_dims({"num_ctas": 4}) == (4, 1, 1)


def test_descriptor_fields_per_release() -> None:
    if not API.host_descriptors:
        with pytest.raises(E.SignatureError, match="3.4 or newer"):
            API.descriptor_fields(tma=True)
        return
    assert API.descriptor_fields(tma=True) == ("tensormap", "shape:i32", "strides:i64")
    plain = API.descriptor_fields(tma=False)
    assert plain[:3] == ("base", "shape:i64", "strides:i64") and plain[-2:] == ("shape:i32", "strides:i64")
    # 3.5 added the padding flag, 3.7 the tf32 rounding flag, between the two copies of shape and strides
    assert ("padding:i1" in plain) == release_in_range(API.version, ">=3.5")
    assert ("round_f32_to_tf32:i1" in plain) == release_in_range(API.version, ">=3.7")


def test_a_sidecar_keeps_the_descriptor_type_text_and_is_checked_like_metadata() -> None:
    # the sidecar (--keep-ir's <name>.tmlr.json) holds the build's form of a descriptor: Triton's type text
    entries = [Parameter("d", "runtime", "tensordesc<fp16[64, 128]>"), Parameter("n", "runtime", "i32", 16),
               Parameter("BLOCK", "constexpr", value=64)]
    assert [read_sidecar_entry(p.to_json(), "k.tmlr.json") for p in entries] == entries
    with pytest.raises(tmlr_runtime.SchemaError, match=r"k\.tmlr\.json: \$\.divisibility"):
        read_sidecar_entry({**entries[0].to_json(), "divisibility": 3}, "k.tmlr.json")
    with pytest.raises(tmlr_runtime.SchemaError, match=r"\$\.type: 'tensordesc<half\[8\]>'"):
        read_sidecar_entry({**entries[0].to_json(), "type": "tensordesc<half[8]>"}, "k.tmlr.json")


def test_release_ranges() -> None:
    assert release_in_range("3.4.0", ">=3.4") and not release_in_range("3.3.1", ">=3.4")
    assert release_in_range("3.8.0+git12", ">=3.4,<3.9") and not release_in_range("3.9.0", ">=3.4,<3.9")
    assert release_in_range("3.6.0", "3.6") and release_in_range("3.6.0", "==3.6")
    for bad in ("3", ">= 3.x", "~=3.4", ""):
        with pytest.raises(ValueError, match="major.minor"):
            release_range(bad)


def test_descriptor_types_in_signatures_and_ir() -> None:
    (entry,) = parse_signature("tensordesc< bf16 [8 , 16] >")
    assert (entry.kind, entry.type, entry.divisibility) == ("runtime", "tensordesc<bf16[8, 16]>", 1)
    assert parse_type("tensordesc<fp16[64, 64]>").block_shape == (64, 64)
    assert parse_type("tensordesc<float16[64]>") is None and parse_type("*fp16") is None
    with pytest.raises(E.SignatureError, match="tensordesc<fp16"):
        parse_signature("tensordesc<fp16[64, 64]>:16")
    # in the IR a descriptor argument is followed by its shape (i32) and strides (i64): one parameter
    ir = ("tt.func public @k(%a: !tt.tensordesc<tensor<64x128xf16>>, %a_0: i32, %a_1: i32, %a_2: i64, %a_3: i64, "
          "%b: !tt.tensordesc<32xf32, #shared>, %b.shape.0: i32, %b.stride.0: i64, %n: i32) {\n")
    # (named as the IR names them: the descriptor's name, not its shape's and strides')
    assert [(p.name, p.type) for p in read_function(ir, "k.ttir").params] == [
        ("a", "tensordesc<fp16[64, 128]>"), ("b", "tensordesc<fp32[32]>"), ("n", "i32")]


META = {"swizzle": 3, "elem_size": 2, "elem_type": 6, "block_size": [64, 64], "fp4_padded": False, "is_im2col": False}


def test_tensormap_maps_the_dtype_as_tritons_launcher_and_refuses_im2col() -> None:
    assert tensormap(META, "k") == {"elem_type": 6, "elem_size": 2, "swizzle": 3, "fp4_padded": False,
                                    "block_size": [64, 64]}
    assert [tensormap(dict(META, elem_type=t), "k")["elem_type"] for t in (8, 9, 10, 11)] == [10, 8, 9, 11]
    with pytest.raises(E.UnsupportedKernelError, match="im2col"):
        tensormap(dict(META, is_im2col=True), "k")


def _doc(signature: list[dict]) -> dict:
    doc = json.loads((ROOT / "examples" / "artifacts" / "add" / "metadata.json").read_text())
    return dict(doc, schema_version=2, signature=signature)


def test_schema_takes_descriptor_records_only_in_version_2() -> None:
    schema = jsonschema.Draft202012Validator(json.loads(tmlr_runtime.SCHEMA_PATH.read_text()))
    p = Parameter("a_desc", "runtime", "tensordesc<fp16[64, 128]>")
    tma = descriptor_json(p, ("tensormap", "shape:i32", "strides:i64"), META, "k")
    plain = descriptor_json(p, ("base", "shape:i64", "strides:i64", "shape:i32", "strides:i64"), None, "k")
    for entry in (tma, plain):
        assert schema.is_valid(_doc([entry]))
        assert not schema.is_valid(dict(_doc([entry]), schema_version=1))
    bad = [copy.deepcopy(tma) for _ in range(5)]
    del bad[0]["descriptor"]["tensormap"]  # fields say tensormap: its encoding must be there
    bad[1]["descriptor"]["fields"] = ["base"]  # no tensormap field: no encoding either
    bad[2]["descriptor"]["fields"].append("shape:i16")
    bad[3]["divisibility"] = 16
    del bad[4]["descriptor"]["tensormap"]["block_size"]
    assert [schema.is_valid(_doc([b])) for b in bad] == [False] * 5
    pointer = {"name": "x", "kind": "runtime", "type": "*fp16", "divisibility": 16}
    assert not schema.is_valid(_doc([dict(pointer, descriptor=plain["descriptor"])]))


def test_instrumented_builds_are_refused() -> None:
    from tmlr_build.common.arch import Target
    from tmlr_build.common.jobs import Job
    from tmlr_build.compile.pipeline import _check_launchable

    job = Job(source="/k.py", stage="python", target=Target.from_capability(90), kernel="k")
    _check_launchable(job, {"profile_scratch_size": 0, "instrumentation_mode": ""})
    for meta in ({"profile_scratch_size": 256}, {"instrumentation_mode": "gsan"}):
        with pytest.raises(E.UnsupportedKernelError, match="instrumented builds are not supported"):
            _check_launchable(job, meta)


HOST_DESC = f"{ROOT}/examples/kernels/host_desc.py:desc_scale"
HOST_SIG = "tensordesc<fp16[64, 128]>, tensordesc<fp16[64, 128]>, 64, 128"


def test_host_descriptors_need_triton_34_and_one_artifact_per_lowering(tmp_path) -> None:
    from tmlr_build.cli import run

    if not API.host_descriptors:
        with pytest.raises(E.SignatureError, match="need Triton 3.4 or newer; Triton 3.3.1 is installed"):
            run([HOST_DESC, "--signature", HOST_SIG, "-o", str(tmp_path), "--arch", "90", "-q"])
        return
    with pytest.raises(E.ArtifactWriteError, match="passed differently on sm_80, sm_90a.*its own artifact"):
        run([HOST_DESC, "--signature", HOST_SIG, "-o", str(tmp_path), "--arch", "80,90", "-q"])


def test_jit_specializes_a_host_descriptor_as_triton_does() -> None:
    if not API.host_descriptors:
        pytest.skip(f"Triton {API.version} has no host tensor descriptors")
    from triton.tools.tensor_descriptor import TensorDescriptor

    import importlib.util

    from tmlr_build.builder.jit_specialize import specialize

    class Float16:  # what TensorDescriptor and the JIT read of torch.float16
        itemsize = 2

        def __str__(self) -> str:
            return "torch.float16"

    class Base:  # what a descriptor's base tensor must offer: dtype and data_ptr
        dtype = Float16()

        def data_ptr(self) -> int:
            return 1024

    spec = importlib.util.spec_from_file_location("host_desc", ROOT / "examples" / "kernels" / "host_desc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    desc = TensorDescriptor(Base(), [256, 256], [256, 1], [64, 128])
    ours = specialize(module.desc_scale, (desc, desc), {"BM": 64, "BN": 128})
    assert ours.entries[:2] == (API.specialize(desc)[0],) * 2 == ("tensordesc<fp16[64, 128]>",) * 2
