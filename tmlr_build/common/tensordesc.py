"""Host ``TensorDescriptor`` parameters (Triton 3.4+): their type text, and how metadata.json records them.

Triton names the type ``tensordesc<fp16[64, 64]>`` (element type, block shape); a Gluon kernel's
descriptor also names its shared-memory layout, ``tensordesc<fp16[64, 64],NVMMASharedLayout(...)>``
(the layout is the compile's business: metadata.json does not record it). tmlr keeps that text
as the parameter's type inside the build (signatures, sidecars) and writes it to metadata.json as
``"type": "tensordesc"`` with a ``descriptor`` object: the dtype, the block shape, the kernel
parameters the one argument becomes (``fields``, the installed Triton's rule) and, when the compile
lowered it to TMA, what encoding the CUtensorMap needs besides the call's tensor (``tensormap``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from tmlr_runtime import records
from tmlr_runtime.abi import POINTEE_TYPES, TENSORDESC, Parameter
from tmlr_runtime.artifact.metadata import read_parameter

from .errors import UnsupportedKernelError

_TYPE = re.compile(r"tensordesc<\s*([A-Za-z0-9]+)\s*\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]\s*(?:,\s*(\S.*?))?\s*>")


@dataclass(frozen=True)
class DescriptorType:
    dtype: str  # Triton element type: "fp16"
    block_shape: tuple[int, ...]
    layout: str | None = None  # a Gluon descriptor's layout as Triton writes it: "NVMMASharedLayout(...)"

    @property
    def text(self) -> str:
        """The type as Triton's JIT writes it: ``tensordesc<fp16[64, 64]>`` (Gluon: ``...[64, 64],Layout(...)>``)."""
        layout = f",{self.layout}" if self.layout else ""
        return f"{TENSORDESC}<{self.dtype}[{', '.join(map(str, self.block_shape))}]{layout}>"


def parse_type(text: str | None) -> DescriptorType | None:
    """The descriptor type ``text`` names, or None when it is no descriptor type (or names no known dtype)."""
    m = _TYPE.fullmatch(text or "")
    if m is None or m.group(1) not in POINTEE_TYPES:
        return None
    return DescriptorType(m.group(1), tuple(int(d) for d in m.group(2).split(",")), m.group(3))


def is_descriptor(p: Parameter) -> bool:
    return p.kind == "runtime" and parse_type(p.type) is not None


def read_sidecar_entry(doc: Any, path: str) -> Parameter:
    """One ``signature`` entry of a ``<name>.tmlr.json`` sidecar, checked by metadata.json's rules (a SchemaError
    naming ``path`` otherwise). The sidecar is the build's form: a descriptor keeps Triton's type text
    (``tensordesc<fp16[64, 64]>``), which metadata.json writes as ``tensordesc`` plus a descriptor object."""
    text = doc.get("type") if isinstance(doc, dict) and doc.get("kind") == "runtime" else None
    if parse_type(text) is None:
        return read_parameter(doc, path)
    # every other field by the same rules: the type stands in as a plain scalar while they are checked
    return records.replace(read_parameter({**doc, "type": "i32"}, path), type=text)


def tensormap(meta: dict[str, Any], where: str) -> dict[str, Any]:
    """What cuTensorMapEncodeTiled needs besides the call's tensor, from a ``tensordesc_meta`` entry."""
    if meta.get("is_im2col"):
        raise UnsupportedKernelError(f"{where}: the descriptor is lowered to an im2col TMA descriptor, which "
                                     "tmlr_runtime cannot encode; use a tiled descriptor (no im2col)")
    # Triton's launcher maps the device-side enum to CUtensorMapDataType (TMA_DTYPE_DEVICE_TO_HOST in
    # nvidia/driver.py, identical 3.4-3.9): 8 -> 10, 9 -> 8, 10 -> 9, every other value unchanged.
    elem_type = {8: 10, 9: 8, 10: 9}.get(int(meta["elem_type"]), int(meta["elem_type"]))
    # block_size is the TMA box, which may be smaller than the descriptor's block: Triton copies a block
    # whose rows are wider than the swizzle span (128 B) in several boxes (fp16 [64, 128] -> box [64, 64]).
    return {"elem_type": elem_type, "elem_size": int(meta["elem_size"]), "swizzle": int(meta["swizzle"]),
            "fp4_padded": bool(meta["fp4_padded"]), "block_size": [int(d) for d in meta["block_size"]]}


def descriptor_json(p: Parameter, fields: Sequence[str], meta: dict[str, Any] | None, where: str) -> dict[str, Any]:
    """The metadata.json ``signature`` entry of descriptor parameter ``p``."""
    desc = parse_type(p.type)
    if desc is None:
        raise ValueError(f"{p.type!r} is no tensor descriptor type")
    record: dict[str, Any] = {"dtype": desc.dtype, "block_shape": list(desc.block_shape), "fields": list(fields)}
    if meta is not None:
        record["tensormap"] = tensormap(meta, f"{where}: parameter {p.name}")
    return {"name": p.name, "kind": "runtime", "type": TENSORDESC, "divisibility": 1, "descriptor": record}
