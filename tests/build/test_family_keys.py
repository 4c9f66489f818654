"""The runtime's per-call specialization entries (tmlr_runtime.family.choose, used by family dispatch)
equal those of the installed Triton's own specializer, for pointers (dtype, 16-byte alignment)
and ints (type by value, == 1, divisibility by 16)."""
from __future__ import annotations

from typing import Any

import pytest

from tmlr_runtime.family.choose import int_entry, pointer_entry

pytest.importorskip("triton")
from triton_facts import FakeTensor  # noqa: E402


def triton_entry(arg: Any) -> str:
    from tmlr_build.compile.triton_api import current

    ty, key = current().specialize(arg, False, True, True)
    return "i32:1" if (ty, key) == ("constexpr", 1) else ty + (":16" if key == "D" else "")


@pytest.mark.parametrize("value", [0, 1, 2, 15, 16, 17, -16, -17, 2**31 - 16, 2**31, 2**31 + 1, -(2**31), -(2**31) - 16,
                                   2**40, 2**63 - 16, 2**63, 2**64 - 16, 1.5])
def test_int_entries_equal_tritons(value: Any) -> None:
    assert int_entry(value) == triton_entry(value)


@pytest.mark.parametrize("ptr", [0, 16, 8, 4096 + 4, 2**40])
@pytest.mark.parametrize("dtype", ["torch.float16", "torch.bfloat16", "torch.float32", "torch.int8", "torch.float8_e4m3fn"])
def test_pointer_entries_equal_tritons(ptr: int, dtype: str) -> None:
    arg = FakeTensor(ptr, dtype)
    assert pointer_entry(arg) == triton_entry(arg)
