"""Pointer arguments given as DLPack producers (a fake one wrapping a hand-built DLTensor with a
fake address): address + byte_offset packed, device type/ordinal, dtype and alignment checks, and
a producer that returns no usable capsule refused as PointerArgumentError."""
from __future__ import annotations

import ctypes
import struct

import pytest

import tmlr_runtime as tr
from fake_driver import fake_launcher, metadata_doc, param

_NAME = ctypes.c_char_p(b"dltensor")


class FakeDLPack:
    def __init__(self, data, code=2, bits=32, offset=0, device=(2, 0), capsule=True):
        # DLTensor: data, device(type, id), ndim, dtype(code, bits, lanes), shape*, strides*, byte_offset
        self.buf = ctypes.create_string_buffer(64)
        struct.pack_into("<QiiiBBHQQQ", self.buf, 0, data, device[0], device[1], 1, code, bits, 1, 0, 0, offset)
        self.device, self.capsule = device, capsule

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        if not self.capsule:
            return "not a capsule"
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.buf), _NAME, None)


def run(obj, checks=True, div=16):
    launch, rec = fake_launcher(metadata_doc([param("x", "*fp32", div)]), checks=checks)
    launch(1, (obj,), {}, 0)
    return struct.unpack("<Q", rec.launches[-1]["params"][0])[0]


def test_address_plus_byte_offset():
    assert run(FakeDLPack(0x1000)) == 0x1000
    assert run(FakeDLPack(0x1000, offset=32)) == 0x1020
    assert run(FakeDLPack(0x1000, device=(13, 0))) == 0x1000  # CUDA managed memory is accepted


@pytest.mark.parametrize(
    "obj,fix",
    [(FakeDLPack(0x1000, offset=4), "aligned"), (FakeDLPack(0x1000, bits=16), "rebuild with a matching --signature"),
     (FakeDLPack(0x1000, device=(1, 0)), "move the array to the GPU"), (FakeDLPack(0x1000, device=(2, 1)), "move it to cuda:0"),
     (FakeDLPack(0x1000, capsule=False), "pass the array itself")],
)
def test_refusals(obj, fix):
    with pytest.raises(tr.PointerArgumentError) as e:
        run(obj)
    assert e.value.param == "x" and fix in str(e.value)


def test_checks_off_skips_dtype_alignment_and_ordinal():
    assert run(FakeDLPack(0x1000, offset=4, bits=16, device=(2, 1)), checks=False) == 0x1004


_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # PyCapsule_Destructor(PyObject *)


class OwningDLPack(FakeDLPack):
    """A producer whose capsule owns its DLTensor, like torch's: an unconsumed capsule's destructor
    releases it (here: scribbles over it), so the reader must hold the capsule while it reads."""

    def __dlpack__(self, stream=None):
        buf = ctypes.create_string_buffer(bytes(self.buf), 64)

        def destroy(capsule):
            ctypes.memset(buf, 0xAB, 64)

        self.destroy = _DESTRUCTOR(destroy)  # kept alive: the capsule calls it
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self.owned = buf
        return new(ctypes.addressof(buf), _NAME, ctypes.cast(self.destroy, ctypes.c_void_p))


def test_capsule_is_held_while_its_tensor_is_read():
    # The launch-plan rewrite read the DLTensor after the temporary capsule was freed: on the H200 torch
    # had released it, and the launch got a garbage address (CUDA_ERROR_ILLEGAL_ADDRESS).
    assert run(OwningDLPack(0x1000, offset=32)) == 0x1020
