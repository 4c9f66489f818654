"""fp16/bf16/fp32 scalars packed through the launcher agree bit for bit with torch's own
conversions for random values (hypothesis), with checks on and off."""
from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings, strategies as st

import tmlr_runtime as tr
from fake_driver import fake_launcher, metadata_doc, param
from tmlr_runtime.launch.convert import bf16_bits

torch = pytest.importorskip("torch")

LAUNCH = {c: fake_launcher(metadata_doc([param("h", "fp16"), param("b", "bf16"), param("f", "fp32")]), checks=c)
          for c in (True, False)}


def torch_bits(value: float, dtype) -> int:
    t = torch.tensor(value, dtype=torch.float64).to(torch.float32).to(dtype)
    return t.view(torch.int16).item() & 0xFFFF


# float32 values from random bit patterns cover subnormals, ties and the largest finite values
f32_from_bits = st.integers(0, 2**32 - 1).map(lambda b: struct.unpack("<f", struct.pack("<I", b))[0])


@settings(max_examples=300, deadline=None)
@given(st.one_of(f32_from_bits, st.floats(allow_nan=False, width=32), st.floats(-1e5, 1e5)))
def test_bf16_bits_agree_with_torch(x):
    if math.isnan(x):
        assert bf16_bits(x) == 0x7FC0 == torch_bits(x, torch.bfloat16)
    else:
        assert bf16_bits(x) == torch_bits(x, torch.bfloat16)


@settings(max_examples=200, deadline=None)
@given(st.floats(-65504, 65504, width=32), st.floats(allow_nan=False, width=32), st.floats(allow_nan=False, width=32))
def test_launcher_packs_fp16_bf16_fp32_like_torch(h, b, f):
    for checks in (True, False):
        launch, rec = LAUNCH[checks]
        launch(1, (h, b, f), {}, 0)
        p = rec.launches[-1]["params"]
        assert struct.unpack("<H", p[0])[0] == torch_bits(h, torch.float16)
        assert struct.unpack("<H", p[1])[0] == torch_bits(b, torch.bfloat16)
        assert p[2] == struct.pack("<f", f)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_fp16_non_finite_pass_through(value):
    launch, rec = LAUNCH[True]
    launch(1, (value, value, value), {}, 0)
    p = rec.launches[-1]["params"]
    h = struct.unpack("<H", p[0])[0]
    if math.isnan(value):
        assert h & 0x7C00 == 0x7C00 and h & 0x3FF
        assert struct.unpack("<H", p[1])[0] == 0x7FC0
    else:
        assert h == torch_bits(value, torch.float16)


@pytest.mark.parametrize("value", [65520.0, -1e6, 1e300])
def test_fp16_overflow_is_refused(value):
    launch, rec = LAUNCH[True]
    with pytest.raises(tr.ScalarArgumentError) as e:
        launch(1, (value, 1.0, 1.0), {}, 0)
    assert e.value.param == "h" and "65504" in str(e.value)
