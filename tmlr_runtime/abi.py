"""Triton's kernel ABI vocabulary, shared by tmlr_build and tmlr_runtime (no torch, numpy or Triton here).

:data:`TYPES` (every name each Triton type has elsewhere), the signature record :class:`Parameter`
and its text form (:func:`format_signature`, :func:`split_top_level`), and the compile :class:`Target`.
"""
from __future__ import annotations

import functools
from typing import Any, Iterable

from .records import Record


class TritonType(Record):
    """One Triton type: how a kernel parameter of it is passed, and its names in other libraries."""

    name: str  # "i32", "fp16", "fp8e4nv", "nvTmaDesc"
    code: str  # struct code of the parameter passed by value; "" for a pointee-only type
    size: int  # bytes
    align: int  # bytes, in the parameter buffer
    range: tuple[int, int] | None  # the values an integer parameter accepts; None for others
    torch: str | None  # the torch dtype's attribute name
    typestrs: tuple[str, ...]  # __cuda_array_interface__ typestrs a pointer accepts (byte order left out)
    dlpack: tuple[int, int] | None  # DLPack (type code, bits)
    mlir: str | None  # element type in .ttir/.ttgir (MLIR integers are signless: no u types)
    scalar: bool  # may be a scalar parameter ("i32", "fp16")
    pointee: bool  # may be pointed to ("*fp16")
    aliases: tuple[str, ...] = ()  # other dtype names Triton's JIT canonicalizes to it


_T = TritonType
_I8, _I16, _I32, _I64 = (-(2**7), 2**7 - 1), (-(2**15), 2**15 - 1), (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1)
TYPES: dict[str, TritonType] = {t.name: t for t in (
    #  name         code    size align range           torch              typestrs      dlpack   mlir             scalar pointee aliases
    _T("i1",        "B",    1,   1,  (0, 1),         "bool",            ("b1", "u1"), (6, 8),  "i1",            True,  True),
    _T("u1",        "B",    1,   1,  (0, 1),         "bool",            ("b1", "u1"), None,    None,            True,  True),
    _T("i8",        "b",    1,   1,  _I8,            "int8",            ("i1",),      (0, 8),  "i8",            True,  True),
    _T("u8",        "B",    1,   1,  (0, 2**8 - 1),  "uint8",           ("u1",),      (1, 8),  None,            True,  True),
    _T("i16",       "h",    2,   2,  _I16,           "int16",           ("i2",),      (0, 16), "i16",           True,  True),
    _T("u16",       "H",    2,   2,  (0, 2**16 - 1), "uint16",          ("u2",),      (1, 16), None,            True,  True),
    _T("i32",       "i",    4,   4,  _I32,           "int32",           ("i4",),      (0, 32), "i32",           True,  True,  ("int",)),
    _T("u32",       "I",    4,   4,  (0, 2**32 - 1), "uint32",          ("u4",),      (1, 32), None,            True,  True),
    _T("i64",       "q",    8,   8,  _I64,           "int64",           ("i8",),      (0, 64), "i64",           True,  True),
    _T("u64",       "Q",    8,   8,  (0, 2**64 - 1), "uint64",          ("u8",),      (1, 64), None,            True,  True),
    _T("fp16",      "e",    2,   2,  None,           "float16",         ("f2",),      (2, 16), "f16",           True,  True,  ("half",)),
    # struct has no bfloat16: the launcher packs the bits bf16_bits() computes as an unsigned short
    _T("bf16",      "H",    2,   2,  None,           "bfloat16",        ("V2", "u2"), (4, 16), "bf16",          True,  True),
    _T("fp32",      "f",    4,   4,  None,           "float32",         ("f4",),      (2, 32), "f32",           True,  True,  ("float",)),
    _T("fp64",      "d",    8,   8,  None,           "float64",         ("f8",),      (2, 64), "f64",           True,  True,  ("double",)),
    _T("fp8e4nv",   "",     1,   1,  None,           "float8_e4m3fn",   (),           None,    "f8E4M3FN",      False, True,  ("float8e4nv",)),
    _T("fp8e5",     "",     1,   1,  None,           "float8_e5m2",     (),           None,    "f8E5M2",        False, True,  ("float8e5",)),
    _T("fp8e4b15",  "",     1,   1,  None,           None,              (),           None,    "f8E4M3B11FNUZ", False, True,  ("float8e4b15",)),
    _T("fp8e4b8",   "",     1,   1,  None,           "float8_e4m3fnuz", (),           None,    "f8E4M3FNUZ",    False, True,  ("float8e4b8",)),
    _T("fp8e5b16",  "",     1,   1,  None,           "float8_e5m2fnuz", (),           None,    "f8E5M2FNUZ",    False, True,  ("float8e5b16",)),
    # Triton 3.3's host-side TMA descriptor: a CUtensorMap passed by value
    _T("nvTmaDesc", "128s", 128, 64, None,           None,              (),           None,    None,            False, False),
)}
TMA_DESC = "nvTmaDesc"
SCALAR_TYPES = tuple(n for n, t in TYPES.items() if t.scalar)
POINTEE_TYPES = tuple(n for n, t in TYPES.items() if t.pointee)
MLIR_TYPES = {t.mlir: n for n, t in TYPES.items() if t.mlir}  # MLIR element type -> Triton type
# dtype name (the last dotted word of str(dtype), torch's or Triton's) -> Triton type, as
# triton.runtime.jit.type_canonicalisation_dict (3.3.1) maps it; reversed, so that of two types with
# one name the first wins ("bool" is i1)
DTYPE_NAMES = {name: n for n, t in reversed(TYPES.items()) for name in (t.torch, *t.aliases) if name}
# Triton's dtype objects by their own name (tl.bfloat16.name is "bf16"; 3.3-3.9): (the triton.language attribute
# that holds one, its type in TYPES). A constexpr whose value is a dtype is recorded by that name (objects.py).
TL_DTYPES: dict[str, tuple[str, str]] = {
    "int1": ("int1", "i1"), "int8": ("int8", "i8"), "int16": ("int16", "i16"), "int32": ("int32", "i32"),
    "int64": ("int64", "i64"), "uint8": ("uint8", "u8"), "uint16": ("uint16", "u16"), "uint32": ("uint32", "u32"),
    "uint64": ("uint64", "u64"), "fp16": ("float16", "fp16"), "bf16": ("bfloat16", "bf16"), "fp32": ("float32", "fp32"),
    "fp64": ("float64", "fp64"), "fp8e4nv": ("float8e4nv", "fp8e4nv"), "fp8e5": ("float8e5", "fp8e5"),
    "fp8e4b15": ("float8e4b15", "fp8e4b15"), "fp8e4b8": ("float8e4b8", "fp8e4b8"), "fp8e5b16": ("float8e5b16", "fp8e5b16"),
}
TL_NAMES = {ty: name for name, (_, ty) in TL_DTYPES.items()}  # Triton type ("i32") -> its dtype's name ("int32")


# every type a runtime parameter may have: a scalar, a pointer ("*fp16", "*kfp16": constant) or a TMA descriptor
PARAM_TYPES = frozenset([*SCALAR_TYPES, TMA_DESC, *(f"*{k}{t}" for t in POINTEE_TYPES for k in ("", "k"))])


# A host TensorDescriptor parameter (Triton 3.4+): one argument the kernel takes as the parameters
# its descriptor's ``fields`` list (written by tmlr-build from its Triton's rule; no version logic here)
TENSORDESC = "tensordesc"
PER_DIM_FIELDS = {"shape:i32": "i32", "shape:i64": "i64", "strides:i64": "i64"}  # ndim parameters each
SINGLE_FIELDS = {"tensormap": TMA_DESC, "base": "*", "padding:i1": "i1", "round_f32_to_tf32:i1": "i1"}
DESCRIPTOR_FIELDS = ("tensormap", "base", "shape:i32", "shape:i64", "strides:i64", "padding:i1", "round_f32_to_tf32:i1")


class TensorMapMeta(Record):
    """What ``cuTensorMapEncodeTiled`` needs for a TMA descriptor besides the call's tensor."""

    elem_type: int  # CUtensorMapDataType
    elem_size: int  # bytes
    swizzle: int  # CUtensorMapSwizzle
    fp4_padded: bool  # the innermost dimension is doubled
    block_size: tuple[int, ...]  # the TMA box, outermost first

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "block_size": list(self.block_size)}


class Descriptor(Record):
    """A ``tensordesc`` parameter's record: element type, block shape, the kernel parameters it becomes."""

    dtype: str  # Triton element type: "fp16"
    block_shape: tuple[int, ...]
    fields: tuple[str, ...]
    tensormap: TensorMapMeta | None = None  # present when fields holds "tensormap"

    @property
    def ndim(self) -> int:
        return len(self.block_shape)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"dtype": self.dtype, "block_shape": list(self.block_shape), "fields": list(self.fields)}
        if self.tensormap is not None:
            doc["tensormap"] = self.tensormap.to_json()
        return doc


def pointee(type_: str) -> str | None:
    """``"*fp16"`` and ``"*kfp16"`` (a constant pointer) -> ``"fp16"``; None for any other text."""
    return type_[1:].removeprefix("k") if type_[:1] == "*" and type_ in PARAM_TYPES else None


_JSON_KEYS = {"runtime": ("name", "kind", "type", "divisibility"), "constexpr": ("name", "kind", "value"),
              "equal_to_1": ("name", "kind", "type")}  # a signature entry's keys, by kind


class Parameter(Record):
    """One parameter of the Python kernel, in declaration order, as metadata.json records it."""

    name: str
    kind: str  # "runtime" | "constexpr" | "equal_to_1"
    type: str | None = None  # Triton type ("*fp16", "i32", "nvTmaDesc"); None for constexprs
    divisibility: int = 1  # 16 when the build assumed divisibility by 16
    value: Any = None  # the compiled value of a constexpr (1 for equal_to_1; an objects.TritonObject for a Triton object)
    descriptor: Descriptor | None = None  # for type "tensordesc" only

    @property
    def is_pointer(self) -> bool:
        return self.type is not None and self.type.startswith("*")

    def to_json(self) -> dict[str, Any]:
        """The parameter's entry in metadata.json's ``signature``."""
        doc = {key: getattr(self, key) for key in _JSON_KEYS[self.kind]}
        if self.kind == "constexpr" and hasattr(self.value, "object"):  # a Triton object: its text, and what it is
            return {**doc, "value": self.value.text, "object": self.value.object}
        if self.kind == "constexpr" and type(self.value) is tuple:
            import json  # the build's and the CLI's path: `import tmlr_runtime` imports no json

            doc["value"] = json.loads(json.dumps(self.value))  # a tuple (an empty one too), as JSON writes it: an array
        return doc if self.descriptor is None else {**doc, "descriptor": self.descriptor.to_json()}


def format_entry(p: Parameter) -> str:
    """One entry of the AOT syntax: ``*fp16:16``, ``i32``, ``i32:1`` (equal to 1), ``128``, ``tl.bfloat16`` (constexprs)."""
    if p.kind == "runtime":
        return f"{p.type}:16" if p.divisibility == 16 else str(p.type)
    if p.kind == "equal_to_1":
        return f"{p.type}:1"
    return repr(p.value)


def format_signature(params: Iterable[Parameter]) -> str:
    """A signature in the AOT syntax tmlr-build's ``--signature`` reads: ``"*fp32:16, i32, 1024"`` (tuple elements one
    by one: ``tuples.format_nested`` writes them as their tuples)."""
    return ", ".join(format_entry(p) for p in params)


def split_top_level(text: str, brackets: str = "([{", quotes: str = "'\"") -> list[str]:
    """``text`` cut at the commas outside quotes and ``brackets`` (opening ones), each part stripped."""
    closing = brackets.translate(str.maketrans("([{<", ")]}>"))
    parts, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in quotes:
            quote = ch
        elif ch in brackets:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


@functools.total_ordering
class Target(Record):
    """A compile target: the compute capability (major * 10 + minor) and the arch name: ptxas's
    ``--gpu-name`` for a cubin (``sm_90a``), the virtual arch for PTX (``compute_80``). Ordered by (capability,
    arch)."""

    capability: int  # 90
    arch: str  # "sm_90a": what ptxas --gpu-name was given

    def __lt__(self, other: Target) -> bool:
        return (self.capability, self.arch) < (other.capability, other.arch)

    @classmethod
    def from_capability(cls, capability: int) -> "Target":
        # as Triton 3.3.1's sm_arch_from_capability: 90 and above compile for the arch-specific
        # "a" targets (wgmma, tcgen05)
        return cls(capability, f"sm_{capability}{'a' if capability >= 90 else ''}")

    @classmethod
    def parse(cls, text: str | int) -> "Target":
        """The target of ``90``, ``"90"``, ``"sm_90"`` or ``"sm_90a"``; ValueError for other text."""
        word = str(text).strip().lower()
        digits = word.removeprefix("sm_").removeprefix("sm").removesuffix("a")
        if not digits.isdigit():
            raise ValueError(f"{str(text)!r} is not a compute capability; write it like 80 or 90")
        return cls.from_capability(int(digits))

    @staticmethod
    def device(text: str) -> tuple[int, int]:
        """A GPU's compute capability (major, minor) from ``"9.0"`` or ``"12.1"``: X.Y only (``"9"`` or ``"90"`` could
        mean 9.0 or 0.9); ValueError for other text."""
        major, dot, minor = str(text).strip().partition(".")
        if not (dot and (major + minor).isascii() and major.isdigit() and major[0] != "0" and len(major) <= 2
                and minor.isdigit() and len(minor) == 1):
            raise ValueError(f"{str(text)!r} is not a compute capability written X.Y, e.g. 9.0 or 8.6")
        return int(major), int(minor)

    @classmethod
    def of_ptx(cls, arch: str) -> "Target":
        """The target of PTX for a virtual arch (``"compute_80"``); ValueError for other text."""
        digits = arch.removeprefix("compute_")
        if digits == arch or not digits.isdigit():
            raise ValueError(f"{arch!r} is not a PTX target; write it like compute_80")
        return cls(int(digits), arch)

    @property
    def arch_specific(self) -> bool:  # sm_90a: runs on exactly its own capability
        return self.arch.endswith("a")

    def ptx(self) -> "Target":
        """The target of this portable cubin target's PTX (sm_80 -> compute_80); ValueError for an arch-specific one,
        whose PTX runs on its own GPU only."""
        if self.arch_specific or self.is_ptx:
            raise ValueError(f"{self.arch} has no portable PTX target; use a target like sm_80")
        return Target(self.capability, f"compute_{self.capability}")

    @property
    def is_ptx(self) -> bool:  # compute_80: PTX, which the driver compiles at load
        return self.arch.startswith("compute_")

    @property
    def version(self) -> str:  # "9.0"
        return "%d.%d" % divmod(self.capability, 10)

    def runs_on(self, major: int, minor: int) -> bool:
        """Whether it runs on a device of compute capability major.minor: SASS is forward compatible
        within one major version only, an arch-specific one on its own capability only; PTX (not
        arch-specific) on its own capability and every later one, the driver compiling it at load."""
        c_major, c_minor = divmod(self.capability, 10)
        if self.is_ptx:
            return (c_major, c_minor) <= (major, minor)
        if self.arch_specific:
            return (c_major, c_minor) == (major, minor)
        return c_major == major and c_minor <= minor
