"""The kernel's parameter list in its cubin against the one metadata.json describes.

metadata.json tells the runtime how to pack a launch: the runtime parameters in order (a host tensor
descriptor expanded per its ``fields``), then the hidden pointers. Those rules come partly from a
table (compile/triton_api.py); a Triton release that passes parameters otherwise, or a cubin made by
another release than its metadata says, would give launches with misplaced arguments. ptxas records
each parameter's size in the cubin (``EIATTR_KPARAM_INFO``), so the build compares them and refuses
to write such an artifact.
"""
from __future__ import annotations

import struct
from typing import Any, Sequence

from tmlr_runtime.abi import TENSORDESC, TYPES

from ..common.errors import CompileError

_EIFMT_SVAL = 4
_EIATTR_KPARAM_INFO = 0x17
_FIELD_SIZES = {"tensormap": 128, "base": 8, "shape:i32": 4, "shape:i64": 8, "strides:i64": 8, "padding:i1": 1,
                "round_f32_to_tf32:i1": 1}


def _sections(data: bytes) -> dict[str, tuple[int, int]]:
    """ELF section name -> (offset, size)."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    return {data[names + h[0]:data.index(b"\0", names + h[0])].decode("utf-8", "replace"): (h[4], h[5])
            for h in headers}


def cubin_param_sizes(cubin: bytes, entry: str) -> list[int] | None:
    """The byte size of each parameter of kernel ``entry``, in order; None when the cubin does not say."""
    try:
        info = _sections(cubin).get(f".nv.info.{entry}")
        if info is None:
            return None
        off, end = info[0], info[0] + info[1]
        params: dict[int, int] = {}
        while off + 4 <= end:
            fmt, attr = cubin[off], cubin[off + 1]
            if fmt != _EIFMT_SVAL:
                off += 4
                continue
            (size,) = struct.unpack_from("<H", cubin, off + 2)
            if attr == _EIATTR_KPARAM_INFO and size >= 12:
                _index, ordinal, _offset, flags = struct.unpack_from("<IHHI", cubin, off + 4)
                params[ordinal] = flags >> 18  # the parameter's size in bytes
            off += 4 + size
    except (struct.error, IndexError, ValueError):
        return None
    if not params or sorted(params) != list(range(len(params))):
        return None
    return [params[i] for i in range(len(params))]


def expected_sizes(signature: Sequence[dict[str, Any]], hidden_params: Sequence[str]) -> list[int]:
    """The parameter sizes metadata.json's ``signature`` and ``hidden_params`` describe."""
    sizes = []
    for p in signature:
        if p["kind"] != "runtime":
            continue
        if p["type"] == TENSORDESC:
            ndim = len(p["descriptor"]["block_shape"])
            for field in p["descriptor"]["fields"]:
                per_dim = field.startswith(("shape:", "strides:"))
                sizes += [_FIELD_SIZES[field]] * (ndim if per_dim else 1)
        elif p["type"].startswith("*"):
            sizes.append(8)
        else:
            sizes.append(TYPES[p["type"]].size)
    return sizes + [8] * len(hidden_params)


def check(cubin: bytes, entry: str, signature: Sequence[dict[str, Any]], hidden_params: Sequence[str], label: str,
          triton_version: str) -> None:
    """Raise CompileError when the cubin's parameters differ from what the artifact would describe."""
    found = cubin_param_sizes(cubin, entry)
    want = expected_sizes(signature, hidden_params)
    if found is None or found == want:
        return
    raise CompileError(
        f"{label}: the cubin's kernel takes {len(found)} parameters of {found} bytes, but the artifact would describe "
        f"{len(want)} of {want} bytes (with Triton {triton_version}'s {len(hidden_params)} hidden pointer(s): "
        f"{', '.join(hidden_params)}); it would launch wrong, so no artifact is written. Was the input made by another "
        "Triton release, or with another signature? Rebuild it from the .py/.ttir with this Triton; if it was, "
        "please report this with the kernel")
