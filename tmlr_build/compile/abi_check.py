"""The kernel's parameter list in its cubin against the one metadata.json describes.

metadata.json tells the runtime how to pack a launch: the runtime parameters in order (a host tensor
descriptor expanded per its ``fields``), then the hidden pointers. Those rules come partly from a
table (compile/triton_api.py); a Triton release that passes parameters otherwise, or a cubin made by
another release than its metadata says, would give launches with misplaced arguments. ptxas records
each parameter's size in the cubin (``EIATTR_KPARAM_INFO``), so the build compares them and refuses
to write such an artifact.
"""
from __future__ import annotations

from typing import Any, Sequence

from tmlr_runtime.artifact import elf
from tmlr_runtime.artifact.metadata import read_parameter
from tmlr_runtime.errors import IntegrityError
from tmlr_runtime.launch.plan import Layout

from ..common.errors import CompileError


def cubin_param_sizes(cubin: bytes, entry: str) -> list[int] | None:
    """The byte size of each parameter of kernel ``entry``, in order, as the runtime reads them
    (``elf.kernel_params``); None when the cubin does not say."""
    try:
        params = elf.parse(cubin, entry=entry).params
    except IntegrityError:
        return None
    return list(params[1]) if params and params[1] else None


def expected_sizes(signature: Sequence[dict[str, Any]], hidden_params: Sequence[str]) -> list[int]:
    """The parameter sizes metadata.json's ``signature`` and ``hidden_params`` describe: those of the slots the
    runtime's launch packs (``Layout``)."""
    runtime = tuple(p for p in map(read_parameter, signature) if p.kind == "runtime")
    return list(Layout.build(runtime, tuple(hidden_params)).sizes)


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
