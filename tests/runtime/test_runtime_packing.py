"""Arguments are packed byte for byte by the recorded signature, never by Python type."""
from __future__ import annotations

import math
import struct

import pytest

import tmlr_runtime as tr
from fake_driver import equal_to_1, fake_launcher, metadata_doc, param
from tmlr_runtime.launch.convert import bf16_bits
from tmlr_runtime.launch.plan import Layout
from tmlr_runtime.artifact.metadata import Parameter

torch = pytest.importorskip("torch")

CASES = [
    ("i1", True, b"\x01"),
    ("i1", 0, b"\x00"),
    ("u1", 1, b"\x01"),
    ("i8", -100, struct.pack("<b", -100)),
    ("u8", 255, b"\xff"),
    ("i16", -30000, struct.pack("<h", -30000)),
    ("u16", 65535, b"\xff\xff"),
    ("i32", -(2**31), struct.pack("<i", -(2**31))),
    ("u32", 2**32 - 1, b"\xff" * 4),
    ("i64", -(2**63), struct.pack("<q", -(2**63))),
    ("u64", 2**64 - 1, b"\xff" * 8),
    ("fp16", 1.5, b"\x00\x3e"),
    ("fp16", -2.25, struct.pack("<e", -2.25)),
    ("bf16", 1.5, b"\xc0\x3f"),
    ("fp32", 1.25e-3, struct.pack("<f", 1.25e-3)),
    ("fp64", math.pi, struct.pack("<d", math.pi)),
]


@pytest.mark.parametrize("typ,value,expected", CASES)
def test_scalar_bytes(typ, value, expected):
    launch, rec = fake_launcher(metadata_doc([param("v", typ)]))
    launch(1, (value,), {}, 0)
    params = rec.launches[-1]["params"]
    assert params[0] == expected
    assert params[1] == b"\0" * 8  # hidden global_scratch, NULL when the kernel needs none


def test_fp16_gets_two_bytes_not_a_float():
    # Triton 3.3's own launcher passes fp16 scalars as 4-byte floats: a kernel given 1.5 saw 0.0.
    layout = Layout.build((Parameter("a", "runtime", "fp16"), Parameter("b", "runtime", "i32")), ())
    assert list(zip(layout.offsets, layout.sizes)) == [(0, 2), (4, 4)]


@pytest.mark.parametrize("value", [0.0, -0.0, 1.0, 3.140625, 1e-40, 65504.0, 1e38, 3.3895e38, -7.75, 1 / 3, 2.0**-133,
                                   float("inf"), float("-inf"), 1.00390625, 1.01171875])
def test_bf16_matches_torch(value):
    expected = torch.tensor(value, dtype=torch.float32).to(torch.bfloat16).view(torch.int16).item() & 0xFFFF
    assert bf16_bits(value) == expected


def test_bf16_nan():
    assert bf16_bits(float("nan")) & 0x7F80 == 0x7F80 and bf16_bits(float("nan")) & 0x7F


def test_layout_alignment_and_tma_slot():
    params = (
        Parameter("a", "runtime", "i8"),
        Parameter("p", "runtime", "*fp32"),
        Parameter("h", "runtime", "fp16"),
        Parameter("d", "runtime", "nvTmaDesc"),
        Parameter("n", "runtime", "i32"),
    )
    layout = Layout.build(params, ("global_scratch", "profile_scratch"))
    offsets = dict(zip(layout.names, zip(layout.offsets, layout.sizes)))
    assert offsets["a"] == (0, 1)
    assert offsets["p"] == (8, 8)
    assert offsets["h"] == (16, 2)
    assert offsets["d"] == (64, 128)  # CUtensorMap by value: 64-byte aligned
    assert offsets["n"] == (192, 4)
    assert offsets["global_scratch"] == (200, 8) and offsets["profile_scratch"] == (208, 8)


def test_tma_descriptor_bytes_and_alignment():
    launch, rec = fake_launcher(metadata_doc([param("d", "nvTmaDesc"), param("n", "i32")]))
    blob = bytes(range(128))
    launch(1, (blob, 7), {}, 0)
    assert rec.launches[-1]["params"][0] == blob
    with pytest.raises(tr.ArgumentError) as e:
        launch(1, (b"short", 7), {}, 0)
    assert e.value.param == "d" and "128 bytes" in str(e.value)
    from tmlr_runtime.launch.plan import ArgBuffer

    buf = ArgBuffer(Layout.build((Parameter("d", "runtime", "nvTmaDesc"),), ()))
    import ctypes

    first = ctypes.c_void_p.from_address(buf.address).value
    assert first % 64 == 0


def test_pointer_values_int_none_and_cuda_array_interface(monkeypatch):
    launch, rec = fake_launcher(metadata_doc([param("a", "*fp32", 16), param("b", "*fp32"), param("c", "*fp32", 16)]))

    class CAI:
        __cuda_array_interface__ = {"data": (0x2000, False), "typestr": "<f4", "shape": (4,), "version": 3}

    monkeypatch.setattr("tmlr_runtime.launch.pointers._host_or_device", lambda address, device: 0)
    launch(1, (0x1000, None, CAI()), {}, 0)
    p = rec.launches[-1]["params"]
    assert struct.unpack("<Q", p[0])[0] == 0x1000
    assert struct.unpack("<Q", p[1])[0] == 0
    assert struct.unpack("<Q", p[2])[0] == 0x2000


def test_hidden_params_follow_runtime_params():
    doc = metadata_doc([param("x", "*fp32"), equal_to_1("one"), param("n", "i32")])
    doc["variants"][0]["scratch"]["hidden_params"] = ["global_scratch", "profile_scratch"]
    launch, rec = fake_launcher(doc)
    launch(1, (0x100, 1, 5), {}, 0)
    p = rec.launches[-1]["params"]
    assert len(p) == 4  # x, n, global_scratch, profile_scratch (the specialized int is not passed)
    assert struct.unpack("<i", p[1])[0] == 5
