"""Constexpr values that are Triton objects: a dtype (``tl.bfloat16``) or a ``@triton.jit`` function (an activation a
kernel takes as a tl.constexpr). metadata.json records one by its text and what it is (schema v7): a dtype by
Triton's own name for it (``tl.bfloat16.name``, "bf16"), a function by ``module:qualname`` (the name Python imports
it by: its ``__module__`` and ``__qualname__``, as tmlr-build names a kernel, ``pkg.ops.norm:kernel``). A function
defined inside another (``test_namedtuple.<locals>.mul``) has no name Python imports it by, and one qualname may be
several functions (a factory's closures over different functions): its text adds Triton's own identity of it, the
``cache_key`` its JIT specializes on (a hash of its source and dependencies, in hex digits), ``mod:f.<locals>.mul@<key>``.

A call's value is recognised by duck typing (neither Triton nor torch is imported): a ``triton.language`` dtype by its
type's module and name and its ``.name``, a torch dtype (the dtype of the same Triton type) by its text, a
``JITFunction`` by its ``.fn``'s module and qualname; or the text itself. ``tmlr_runtime.serve``'s stand-in for Triton
(serving/stand_in.py) names its classes' modules as Triton does, so its ``tl.bfloat16`` and ``@triton.jit`` functions
are recognised by the same rules; a ``tl.constexpr(...)`` around a value (Triton's or the stand-in's) is that value
(:func:`unwrap`).
"""
from __future__ import annotations

import re
from typing import Any

from .abi import DTYPE_NAMES, TL_DTYPES, TL_NAMES
from .records import Record

DTYPE, JIT_FUNCTION = "dtype", "jit_function"
KINDS = (DTYPE, JIT_FUNCTION)
_ID = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = rf"{_ID}(\.{_ID})*"
_NESTED = rf"{_DOTTED}(\.<locals>(\.{_ID})+)+"  # a qualname with <locals>: a function defined inside another
# "module:qualname", or "module:outer.<locals>.inner@<cache_key>" (the schema's pattern says the same)
IS_JIT_TEXT = re.compile(rf"{_DOTTED}:({_DOTTED}|{_NESTED}@[0-9a-f]+)").fullmatch
_DTYPE_PREFIXES = ("tl.", "triton.language.")


class TritonObject(Record):
    """A Triton object as a constexpr's recorded value: ``object`` says what it is, ``text`` names it."""

    object: str  # DTYPE | JIT_FUNCTION
    text: str  # "bf16" | "module:qualname"

    def __repr__(self) -> str:  # as a signature entry is written: tl.bfloat16, kernels:relu
        return f"tl.{TL_DTYPES[self.text][0]}" if self.object == DTYPE else self.text

    def accepts(self, value: Any) -> bool:
        """Whether a call's ``value`` stands for this object: the object, the torch dtype of a dtype, or its text."""
        if type(value) is str:
            return value == self.text or (self.object == DTYPE and parse(value) == self)
        return of(value) == self


def parse(text: str) -> TritonObject | None:
    """The object written as ``tl.bfloat16`` / ``triton.language.bfloat16`` or ``module:qualname``; None for other text."""
    word = text.strip()
    for prefix in _DTYPE_PREFIXES:
        attr = word[len(prefix):] if word.startswith(prefix) else None
        name = next((n for n, (a, _) in TL_DTYPES.items() if a == attr), None)
        if name is not None:
            return TritonObject(DTYPE, name)
    return TritonObject(JIT_FUNCTION, word) if IS_JIT_TEXT(word) else None


def unwrap(value: Any) -> Any:
    """The value a ``tl.constexpr(...)`` holds (a call may pass ``BLOCK=tl.constexpr(128)``, ``DT=tl.constexpr(tl.float16)``,
    as Triton takes them); ``value`` itself for anything else. Triton's constructor unwraps a wrapped one: one level."""
    cls = type(value)
    if cls.__name__ == "constexpr" and (getattr(cls, "__module__", "") or "").startswith("triton.language"):
        return getattr(value, "value", value)
    return value


def of(value: Any) -> TritonObject | None:
    """The Triton object ``value`` is (a dtype of Triton or torch, a @triton.jit function or a builtin function of
    Triton's, or a TritonObject); None for anything else."""
    cls = type(value)
    if cls is TritonObject:
        return value
    module = getattr(cls, "__module__", "") or ""
    if cls.__name__ == "dtype" and module.startswith("triton.language"):
        name = getattr(value, "name", None)
        return TritonObject(DTYPE, name) if name in TL_DTYPES else None
    if cls.__name__ == "dtype" and module == "torch":
        name = TL_NAMES.get(DTYPE_NAMES.get(str(value).rpartition(".")[2], ""))
        return None if name is None else TritonObject(DTYPE, name)
    if cls.__name__.endswith("JITFunction") and module.startswith("triton"):
        fn = getattr(value, "fn", None)
        text = f"{getattr(fn, '__module__', '')}:{getattr(fn, '__qualname__', '')}"
        if "<locals>" in text:  # no name to import it by: Triton's identity of it too (the module docstring)
            text += f"@{getattr(value, 'cache_key', '')}"
        return TritonObject(JIT_FUNCTION, text) if IS_JIT_TEXT(text) else None
    if cls.__name__ == "function" and getattr(value, "__triton_builtin__", False):
        # a triton.language builtin (tl.extra.cuda.globaltimer, an @extern): a function a kernel calls, as a jit one
        text = f"{getattr(value, '__module__', '')}:{getattr(value, '__qualname__', '')}"
        return TritonObject(JIT_FUNCTION, text) if text.startswith("triton.") and IS_JIT_TEXT(text) else None
    return None
