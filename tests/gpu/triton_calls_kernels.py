"""Kernels as Triton's own language tests write and call them (issue 29's conformance losses): a dtype constexpr
(test_cast), pointers to unsigned ints (test_masked_load, test_reduce1d through reinterpret), a NamedTuple holding a
@triton.jit function defined inside a function (test_namedtuple), a builtin function of Triton's as a constexpr
(test_globaltimer), an int annotated unsigned (test_annotations.py), a tl.constexpr parameter given a tuple
(test_passing_tuple_with_constexpr; test_reshape's, a tuple constexpr recorded whole). Compiled by Triton's JIT or triton.compile, built
from the cache entry by the conformance plugin's code: tests/conformance/test_conformance_cpu.py on the fake driver,
tests/gpu/test_triton_calls_gpu.py on a GPU."""
from typing import Any, NamedTuple

import triton
import triton.language as tl


@triton.jit
def cast_kernel(X, Z, TO_TYPE: tl.constexpr, BITCAST: tl.constexpr, SIZE: tl.constexpr):
    offs = tl.arange(0, SIZE)
    tl.store(Z + offs, tl.cast(tl.load(X + offs), TO_TYPE, bitcast=BITCAST))


@triton.jit
def masked_copy(in_ptr, out_ptr, in_size: tl.constexpr, out_size: tl.constexpr):
    offs = tl.arange(0, out_size)
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=offs < in_size, other=0))


class Function(NamedTuple):  # test_tuple.py's: a function and the arguments it captured
    fn: Any
    captured: tuple


def make_mul() -> Any:
    """A @triton.jit function defined inside a function, as test_namedtuple's ``mul``."""
    @triton.jit
    def mul(x, a):
        return x * tl.load(a)
    return mul


@triton.jit
def apply_closure(closure, X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, closure.fn(tl.load(X + offs), *closure.captured))


@triton.jit
def timer_kernel(Out, func: tl.constexpr):
    tl.store(Out, func())


def store_at(X, v):
    tl.store(X + v, v)


def annotated_store_at(ty: str) -> Any:
    """``store_at`` with ``v`` annotated ``ty`` (``"tl.uint8"``), as test_int_annotation's kernel."""
    store_at.__annotations__ = {"X": "*fp32", "v": ty}
    return triton.jit(store_at)


@triton.jit
def m_to_the_n(X, shape: tl.constexpr, strides, m_n):
    # test_tuple.py::test_passing_tuple_with_constexpr: a tl.constexpr parameter given a tuple (x.shape)
    Xs = X + tl.arange(0, shape[0])[:, None] * strides[0] + tl.arange(0, shape[1])[None, :] * strides[1]
    data = tl.load(Xs)
    for i in tl.range(0, m_n[1]):
        data = m_n[0] * data
    tl.store(Xs, data)


@triton.jit
def reshape_kernel(Z, X, out_tuple: tl.constexpr):
    # test_core.py::test_reshape[formats0]: a tl.constexpr given the tuple (8, 8), x of shape (64,) reshaped to it
    z = tl.reshape(tl.load(X + tl.arange(0, 64)), out_tuple)
    tl.store(Z + tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :], z)
