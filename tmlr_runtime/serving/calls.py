"""What a launch of a ``@triton.jit`` function is, in the words of a spec: each argument's Triton entry (``*fp16:16``,
``i32``, a constexpr's value; a dtype as ``tl.float16``), as Triton's JIT would specialize it. For messages (the
specialization no artifact serves) and for the pending spec's lines; the artifacts themselves decide what they serve."""
from __future__ import annotations

import inspect
import os
import shlex
import sys
from typing import Any, Callable

from ..errors import short_repr
from ..family.choose import int_entry, pointer_entry
from ..launch.bind import OPTION_NAMES
from ..objects import of, unwrap

_MISSING = inspect.Parameter.empty


def is_constexpr(annotation: Any) -> bool:
    """Whether a parameter's annotation is ``tl.constexpr`` (Triton's test: the word in its text)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return "constexpr" in text


def _entry(value: Any, constexpr: bool) -> str:
    value = unwrap(value)
    found = of(value)  # a dtype or a @triton.jit function (Triton's or the stand-in's): as a spec writes it, tl.float16
    if found is not None:
        return repr(found)
    if constexpr or value is None or isinstance(value, str):
        return repr(value) if not isinstance(value, str) else f"'{value}'"
    if hasattr(value, "data_ptr") or hasattr(value, "__cuda_array_interface__"):
        return pointer_entry(value)
    if isinstance(value, (bool, int, float)):
        return int_entry(value)
    return f"<{type(value).__name__}>"  # a tuple or a tensor descriptor: `tmlr-build record` writes its entry


def entries(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """``([(parameter, entry), ...], launch options)`` of a call of the Python function ``fn`` (the kernel's body)."""
    params = list(inspect.signature(fn).parameters.values())
    given = dict(zip((p.name for p in params), args))
    options = {k: v for k, v in kwargs.items() if k in OPTION_NAMES and k not in given}
    given.update((k, v) for k, v in kwargs.items() if k not in options)
    out = []
    for p in params:
        value = given.get(p.name, p.default)
        out.append((p.name, "?" if value is _MISSING else _entry(value, is_constexpr(p.annotation))))
    return out, options


def specialization(pairs: list[tuple[str, str]], options: dict[str, Any]) -> str:
    """``x_ptr=*fp16:16, n=i32, BLOCK=1024, num_warps=8``."""
    return ", ".join([f"{n}={e}" for n, e in pairs] + [f"{k}={short_repr(v)}" for k, v in options.items()])


def spec_entry(fn: Callable[..., Any], pairs: list[tuple[str, str]], options: dict[str, Any]) -> dict[str, Any]:
    """A spec's kernel entry for this launch (a pending line): the module by name where it has one, else its file."""
    module = getattr(fn, "__module__", None)
    source = module if module and module != "__main__" else os.path.abspath(inspect.getsourcefile(fn) or "")
    entry: dict[str, Any] = {"source": source, "kernel": fn.__name__, "signature": ", ".join(e for _, e in pairs)}
    if options:
        entry["options"] = options
    return entry


def record_command() -> str:
    """The command that records this process's launches, for the advice of an unserved one."""
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    return f"tmlr-build record -o SPEC --append -- {shlex.join(argv)}"
