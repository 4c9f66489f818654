"""Tuple and NamedTuple parameters on a real GPU, in a process with Triton blocked: the kernels of
tests/gpu/tuple_kernels.py, built from Python (tests/gpu/tuple_kernels.json) and, for two of them, compiled by Triton
itself and imported from the cache entry (tests/gpu/make_tuple_cached.py), against torch.

The checks run in that process (this file as a script) and print one ``PASS`` line each:

- ``flat``: ``tuple_add(ptrs=(x, y, out), n)`` with a tuple and with a list, from Python and from the cache entry;
- ``nested``: ``tuple_nested(((x, None), (out, 2)), (a, 3), n)`` and with a bias pointer in the place of None;
- ``namedtuple``: ``record_scale(Tensor(ptr, shape, stride), Tensor(...), alpha)`` of torch's own shapes and strides,
  from Python and from the cache entry;
- ``descriptor``: ``tuple_descriptor_copy(src, dst, (M, N), (N, 1))``: the tuples become a device-side tensor
  descriptor's shape and strides;
- ``family``: ``tuple_add_family``, tuple_add built as a family (``(*fp32:16?, *fp32:16?, *fp32:16), i32:16?``: 8
  variants): aligned and misaligned elements, a tuple, a list or a NamedTuple, each call served by its own variant,
  equal to torch's; an element every variant assumes aligned is refused naming it (``ptrs[2]``);
- ``errors``: a misaligned element, a tuple of the wrong length, a constexpr element of another value: typed errors
  that name the element (``ptrs[1]``, ``io[1][1]``), and nothing launched;
- ``empty``: ``tuple_empty(x, (), (out, ()), n)`` (tests/gpu/tuple_empty.py): the empty tuples pass nothing, as
  Triton's launcher passes them; a list in the place of ``()`` is refused naming it.
"""
from __future__ import annotations

import collections
import os
import sys

import pytest

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
ARTIFACTS = os.path.join(HERE, "artifacts")
CHECKS = ("flat", "nested", "namedtuple", "descriptor", "family", "errors", "empty")
Tensor = collections.namedtuple("Tensor", ["ptr", "shape", "stride"])


@pytest.mark.needs_sm(9, 0)
def test_tuple_kernels_with_triton_blocked() -> None:
    from blocked_run import assert_checks_pass  # here: the file itself runs again where tests/ is not on the path

    assert_checks_pass(__file__, CHECKS)


def _load(name: str):
    import tmlr_runtime as tr

    kernel = tr.Kernel.load(os.path.join(ARTIFACTS, name))
    assert isinstance(kernel, tr.Kernel) and kernel.metadata.schema_version == 5, kernel
    return kernel


def _flat(torch) -> None:
    n = 100_000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    for name in ("tuple_add", "tuple_add_cached"):
        k = _load(name)
        for ptrs in ((x, y, torch.empty_like(x)), [x, y, torch.empty_like(x)]):
            k((n + 1023) // 1024, ptrs, n)
            torch.cuda.synchronize()
            assert torch.equal(ptrs[2], x + y), name
    print(f"PASS flat (tuple_add and tuple_add_cached, a tuple and a list of 3 pointers, {n} elements equal torch's x + y)")


def _nested(torch) -> None:
    n = 50_000
    x, bias, a = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), 1.5
    out = torch.empty_like(x)
    _load("tuple_nested")((n + 1023) // 1024, ((x, None), (out, 2)), (a, 3), n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * a * 2 + 3)
    _load("tuple_nested_bias")[(n + 1023) // 1024](((x, bias), (out, 2)), (a, 3), n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, (x + bias) * a * 2 + 3)
    print("PASS nested (((x, None), (out, 2)), (1.5, 3)) and with a bias pointer for None, equal torch's")


def _namedtuple(torch) -> None:
    src = torch.randn(100, 70, device="cuda")
    for name in ("record_scale", "record_scale_cached"):
        dst = torch.empty_like(src)
        _load(name)((4, 3), Tensor(src, src.shape, src.stride()), Tensor(dst, dst.shape, dst.stride()), 2.5)
        torch.cuda.synchronize()
        assert torch.equal(dst, src * 2.5), name
    print("PASS namedtuple (Tensor(ptr, shape, stride) of a 100x70 matrix, from Python and from the cache entry, "
          "equal torch's 2.5 * src)")


def _descriptor(torch) -> None:
    m, n = 256, 192
    src = torch.randn(m, n, device="cuda", dtype=torch.float16)
    dst = torch.zeros_like(src)
    _load("tuple_descriptor_copy")((m // 64, n // 64), src, dst, (m, n), (n, 1))
    torch.cuda.synchronize()
    assert torch.equal(dst, src * 2)
    print(f"PASS descriptor (shape ({m}, {n}) and strides ({n}, 1) as tuples into make_tensor_descriptor: dst == 2 * src)")


def _family(torch) -> None:
    import tmlr_runtime as tr

    family = tr.Kernel.load(os.path.join(ARTIFACTS, "tuple_add_family"))
    assert isinstance(family, tr.KernelFamily) and len(family.members) == 8, family
    n = 100_000  # divisible by 16
    bx, by = torch.randn(n + 1, device="cuda"), torch.randn(n + 1, device="cuda")
    cases = [(bx[:n], by[:n], n, "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"),
             (bx[1:], by[:n], n, "*fp32, *fp32:16, *fp32:16, i32:16, 1024"),
             (bx[:n - 3], by[1:n - 2], n - 3, "*fp32:16, *fp32, *fp32:16, i32, 1024")]
    XYZ = collections.namedtuple("XYZ", ["x", "y", "out"])

    def grid(meta):
        assert meta["ptrs"] is ptrs and meta["ptrs[2]"] is out  # the tuple as passed, and its elements by path
        return ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)

    chosen = set()
    for x, y, m, want in cases:
        out = torch.empty(m, device="cuda")
        for ptrs in ((x, y, out), [x, y, out], XYZ(x, y, out)):
            member = family.choose(ptrs, m)
            assert member.signature == want, (member.signature, want)
            chosen.add(member.vid)
            out.zero_()
            family[grid](ptrs, m)
            torch.cuda.synchronize()
            assert torch.equal(out, x + y), want
    assert len(chosen) == 3, chosen
    out = torch.full((n + 1,), 7.0, device="cuda")
    with pytest.raises(tr.PointerArgumentError) as e:
        family(1, (bx[:n], by[:n], out[1:]), n)
    assert e.value.param == "ptrs[2]", str(e.value)
    torch.cuda.synchronize()
    assert torch.equal(out, torch.full_like(out, 7.0))  # nothing launched
    print("PASS family (tuple_add_family: aligned, misaligned x, misaligned y with n not divisible by 16, as a tuple, a list "
          "and a NamedTuple, each by its own variant, equal torch's x + y; ptrs[2] misaligned refused naming it)")


def _errors(torch) -> None:
    import tmlr_runtime as tr

    x = torch.randn(4097, device="cuda")
    out = torch.full_like(x, 7.0)
    k, nested = _load("tuple_add"), _load("tuple_nested")
    cases = [(lambda: k(1, (x, x[1:], out), 4096), tr.PointerArgumentError, "ptrs[1]"),
             (lambda: k(1, (x, out), 4096), tr.ArgumentError, "ptrs"),
             (lambda: nested(1, ((x, None), (out, 3)), (1.0, 3), 4096), tr.ConstexprMismatchError, "io[1][1]")]
    for call, exc, name in cases:
        with pytest.raises(exc) as e:
            call()
        assert e.value.param == name, (name, str(e.value))
    torch.cuda.synchronize()
    assert torch.equal(out, torch.full_like(x, 7.0))  # nothing launched
    print("PASS errors (ptrs[1] misaligned, ptrs of 2, io[1][1] = 3 for 2: typed errors naming the element)")


def _empty(torch) -> None:
    import tmlr_runtime as tr

    n = 10_000
    x, out = torch.randn(n, device="cuda"), torch.zeros(n, device="cuda")
    k = _load("tuple_empty")
    k((n + 1023) // 1024, x, (), (out, ()), n)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2)
    out.zero_()
    with pytest.raises(tr.ConstexprMismatchError) as e:
        k(1, x, [], (out, ()), n)
    assert e.value.param == "nothing", str(e.value)
    torch.cuda.synchronize()
    assert not out.any()  # nothing launched
    print(f"PASS empty (x, (), (out, ()), {n}: out == 2 * x; [] for () refused naming it)")


def _main() -> None:
    assert sys.modules.get("triton", 0) is None, "run with Triton blocked"
    import torch

    torch.cuda.init()
    for check in (_flat, _nested, _namedtuple, _descriptor, _family, _errors, _empty):
        check(torch)


if __name__ == "__main__":
    _main()
