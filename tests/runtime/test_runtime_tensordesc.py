"""Host tensor descriptor (``tensordesc``) parameters on the fake driver: the packed bytes of the TMA
form (desc_scale, sm_90a) and of the pointer form (desc_scale_sm80, with padding and tf32 fields),
the cuTensorMapEncodeTiled call, and the typed errors. The artifacts are Triton 3.9.0's
(tests/gpu/artifacts; built from examples/kernels/host_desc.py)."""
from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import struct
from typing import Any, Iterator

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402
from fake_driver import A100, ROOT, fake_cuda_tensor_type, installed, write_artifact  # noqa: E402
from tmlr_runtime.launch.plan import Layout  # noqa: E402

ARTIFACTS = os.path.join(ROOT, "tests", "gpu", "artifacts")
CUDA0 = fake_cuda_tensor_type(0)


def doc_of(name: str) -> dict[str, Any]:
    with open(os.path.join(ARTIFACTS, name, "metadata.json")) as f:
        return json.load(f)


@contextlib.contextmanager
def loaded(name: str, doc: dict[str, Any] | None = None, tmp: Any = None) -> Iterator[tuple[tr.Kernel, Any]]:
    """The artifact (or ``doc`` with its cubin) loaded on a fake device; each launch records its parameters."""
    device = A100 if name.endswith("sm80") else None
    with installed(*([device] if device else [])) as fake:
        directory = os.path.join(ARTIFACTS, name)
        if doc is not None:
            with open(os.path.join(directory, doc["variants"][0]["cubin"]["file"]), "rb") as f:
                directory = write_artifact(str(tmp), doc, f.read())
        k = tr.Kernel.load(directory)
        fake.param_sizes = Layout.build(k.metadata.runtime_params, k.variant.hidden_params).sizes
        yield k, fake


def tensor(rows: int = 256, cols: int = 512, dtype: Any = torch.float16) -> Any:
    return torch.zeros(rows, cols, dtype=dtype).as_subclass(CUDA0)


def words(params: list[bytes]) -> list[int]:
    return [int.from_bytes(b, "little") for b in params]


def test_tma_form_packs_tensormap_shape_strides() -> None:
    a, b = tensor(), tensor()
    with loaded("desc_scale") as (k, fake):
        k((4, 4), tr.TensorDescriptor.from_tensor(a, [64, 128]), tr.TensorDescriptor.from_tensor(b, [64, 128]))
        layout = Layout.build(k.metadata.runtime_params, k.variant.hidden_params)
    # the cubin's own EIATTR_KPARAM_INFO table (docs: triton-versions.md 2.3, host_desc sm_90, 3.5+)
    assert list(zip(layout.offsets, layout.sizes)) == [(0, 128), (128, 4), (132, 4), (136, 8), (144, 8), (192, 128), (320, 4),
                                                       (324, 4), (328, 8), (336, 8), (344, 8), (352, 8)]
    assert layout.names[:5] == ("in_desc.tensormap", "in_desc.shape[0]", "in_desc.shape[1]", "in_desc.strides[0]", "in_desc.strides[1]")
    # as fillTMADescriptorTiled: innermost first, byte strides (+ Triton's unread last entry), box = reversed block_size
    assert fake.tensor_maps[0] == {"data_type": 6, "rank": 2, "address": a.data_ptr(), "dims": [512, 256], "strides": [1024, 262144],
                                   "box": [64, 64], "element_strides": [1, 1], "interleave": 0, "swizzle": 3, "l2": 2, "fill": 0}
    assert fake.tensor_maps[1]["address"] == b.data_ptr()
    params = fake.launches[0]["params"]
    assert struct.unpack("<16Q", params[0])[:3] == (a.data_ptr(), 2, 6)  # the fake map's words: address, rank, type
    assert struct.unpack("<16Q", params[5])[0] == b.data_ptr()
    assert words(params[1:5]) == [256, 512, 512, 1] and words(params[10:]) == [0, 0]


def test_nan_padding_tf32_and_fp4_reach_the_encoding(tmp_path: Any) -> None:
    doc = doc_of("desc_scale")
    for p in doc["signature"][:2]:
        p["descriptor"].update(dtype="fp32")
        p["descriptor"]["tensormap"].update(fp4_padded=True, elem_size=4)
    a = tensor(dtype=torch.float32)
    desc = tr.TensorDescriptor.from_tensor(a, [64, 128], padding="nan", round_f32_to_tf32=True)
    with loaded("desc_scale", doc, tmp_path) as (k, fake):
        k((1,), desc, desc)
    m = fake.tensor_maps[0]
    assert m["data_type"] == 11 and m["dims"] == [1024, 256] and m["strides"] == [2048, 524288]  # TF32; innermost doubled
    assert m["fill"] == int(tr.driver.api().CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)


def test_pointer_form_packs_every_field() -> None:
    a, b = tensor(), tensor(128, 256)
    with loaded("desc_scale_sm80") as (k, fake):
        k((4, 4), tr.TensorDescriptor.from_tensor(a, [64, 128], padding="nan"), tr.TensorDescriptor.from_tensor(b, [64, 128]))
    assert fake.tensor_maps == []
    params = fake.launches[0]["params"]
    # base, shape:i64 x2, strides:i64 x2, padding:i1, round_f32_to_tf32:i1, shape:i32 x2, strides:i64 x2; per descriptor
    assert [len(x) for x in params[:11]] == [8, 8, 8, 8, 8, 1, 1, 4, 4, 8, 8]
    assert words(params[:11]) == [a.data_ptr(), 256, 512, 512, 1, 1, 0, 256, 512, 512, 1]
    assert words(params[11:22]) == [b.data_ptr(), 128, 256, 256, 1, 0, 0, 128, 256, 256, 1]


def test_tritons_descriptor_class_shape_works() -> None:
    """Any object with the attributes works (Triton's TensorDescriptor is a plain dataclass of them)."""

    class Other:
        def __init__(self, t: Any) -> None:
            self.base, self.shape, self.strides, self.block_shape = t, list(t.shape), list(t.stride()), [64, 128]

    a = tensor()
    with loaded("desc_scale") as (k, fake):
        k((1,), Other(a), Other(a))
    assert len(fake.tensor_maps) == 2 and fake.tensor_maps[0]["address"] == a.data_ptr()


BAD = [
    (lambda t: tr.TensorDescriptor.from_tensor(t, [64, 64]), "block_shape [64, 64] differs"),
    (lambda t: tr.TensorDescriptor.from_tensor(t.view(-1)[4:4 + 255 * 512].view(255, 512), [64, 128]), "not 16-byte aligned"),
    (lambda t: tr.TensorDescriptor(t, (256, 500), (500, 1), (64, 128)), "not multiples of 16 bytes"),
    (lambda t: tr.TensorDescriptor(t, (512, 256), (1, 512), (64, 128)), "innermost stride"),
    (lambda t: tr.TensorDescriptor(t, (256, 512, 1), (512, 1, 1), (64, 128)), "2 dimensions"),
    (lambda t: tr.TensorDescriptor.from_tensor(t.float(), [64, 128]), "float32"),
    (lambda t: tr.TensorDescriptor.from_tensor(t, [64, 128], padding="inf"), "padding"),
    (lambda t: tr.TensorDescriptor.from_tensor(t, [64, 128], round_f32_to_tf32=True), "fp32 tensors"),
    (lambda t: t, "no tensor descriptor"),
]


@pytest.mark.parametrize("make, match", BAD, ids=[m for _, m in BAD])
def test_bad_descriptors_are_typed_errors(make: Any, match: str) -> None:
    good = tr.TensorDescriptor.from_tensor(tensor(), [64, 128])
    bad = make(tensor())
    if isinstance(getattr(bad, "base", None), torch.Tensor):
        bad = tr.TensorDescriptor(bad.base.as_subclass(CUDA0), *[getattr(bad, f) for f in ("shape", "strides", "block_shape",
                                                                                            "padding", "round_f32_to_tf32")])
    with loaded("desc_scale") as (k, fake):
        with pytest.raises(tr.ArgumentError, match=re.escape(match)) as e:
            k((1,), good, bad)
    assert e.value.param in ("out_desc", "out_desc.base") and fake.launches == []


def test_driver_refusal_is_a_descriptor_error() -> None:
    a = tensor()
    with loaded("desc_scale") as (k, fake):
        fake.tensor_map_error = 1  # CUDA_ERROR_INVALID_VALUE
        with pytest.raises(tr.DescriptorArgumentError, match="refused to encode"):
            k((1,), tr.TensorDescriptor.from_tensor(a, [64, 128]), tr.TensorDescriptor.from_tensor(a, [64, 128]))


def test_unknown_field_and_version_1_are_refused() -> None:
    doc = doc_of("desc_scale_sm80")
    bad = copy.deepcopy(doc)
    bad["signature"][0]["descriptor"]["fields"].append("shape:u16")
    with pytest.raises(tr.SchemaError, match=r"fields\[7\].*upgrade tmlr_runtime"):
        tr.ArtifactMetadata.from_dict(bad)
    bad = copy.deepcopy(doc)
    bad["schema_version"] = 1
    with pytest.raises(tr.SchemaError, match="schema_version 2"):
        tr.ArtifactMetadata.from_dict(bad)
    meta = tr.ArtifactMetadata.from_dict(doc)
    assert [p.to_json() for p in meta.signature] == doc["signature"]  # records round-trip


def test_from_tensor_of_a_cuda_array_interface_object() -> None:
    class Array:
        shape = (4, 8)
        __cuda_array_interface__ = {"shape": (4, 8), "typestr": "<f2", "data": (4096, False), "version": 3, "strides": None}

    d = tr.TensorDescriptor.from_tensor(Array(), [2, 8])
    assert (d.shape, d.strides, d.block_shape, d.padding) == ((4, 8), (8, 1), (2, 8), "zero")


def test_kernels_without_descriptors_keep_the_plain_pack() -> None:
    """The per-call path of other kernels is unchanged: their plan packs with the Struct's own pack_into."""
    with installed():
        k = tr.Kernel.load(os.path.join(ROOT, "examples", "artifacts", "add"))
        d = tr.Kernel.load(os.path.join(ARTIFACTS, "desc_scale"))
        assert k.plan.pack == k.plan.layout.head.pack_into
        assert d.plan.pack != d.plan.layout.head.pack_into
