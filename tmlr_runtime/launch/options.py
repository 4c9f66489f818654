"""Launch options in a call (``kernel[grid](x, n, num_warps=4)``, as Triton's JIT takes its compile options beside the
arguments): a cubin is built with one value of each, so a call may name an option only with the value the artifact
records (which names are options: bind.option_names). Imported by the first call that passes one."""
from __future__ import annotations

from typing import Any

from ..errors import LaunchOptionMismatchError
from .bind import recorded_options
from .convert import same_constexpr

# the options a variant's "launch" record holds (the Variant field), whatever its provenance says
_LAUNCH = {"num_warps": "num_warps", "num_ctas": "num_ctas", "cluster_dims": "cluster_dims",
           "launch_cooperative_grid": "cooperative", "launch_pdl": "pdl"}
# how tmlr-build sets each: the flag, or a flag that sets one value (None: any other value takes --option)
_FLAGS = {"num_warps": "--num-warps", "num_stages": "--num-stages", "num_ctas": "--num-ctas", "maxnreg": "--maxnreg"}
_SWITCHES = {("enable_fp_fusion", False): "--no-fp-fusion", ("launch_cooperative_grid", True): "--cooperative",
             ("debug", True): "--debug"}
UNRECORDED = object()


def recorded(variant: Any, name: str) -> Any:
    """The value of option ``name`` the variant was built with, or :data:`UNRECORDED`."""
    field = _LAUNCH.get(name)
    return getattr(variant, field) if field else recorded_options(variant).get(name, UNRECORDED)


def shown(variant: Any, name: str) -> str:
    """``name=value`` as the variant was built, for messages."""
    built = recorded(variant, name)
    return f"{name} unrecorded" if built is UNRECORDED else f"{name}={built!r}"


def _plain(value: Any) -> Any:
    return tuple(_plain(v) for v in value) if isinstance(value, (list, tuple)) else value  # JSON records tuples as lists


def same(value: Any, built: Any) -> bool:
    """Whether a call's ``value`` is the ``built`` one; None is, as Triton leaves an option given as None to its default."""
    return value is None or (built is not UNRECORDED and same_constexpr(_plain(value), _plain(built)))


def _rebuild(name: str, value: Any) -> str:
    flag = _FLAGS.get(name)
    if flag is not None:
        return f"{flag} {value!r}"
    return _SWITCHES.get((name, value)) or f"--option {name}={value!r}"


def _error(kernel: str, name: str, value: Any, built: list[Any], what: str) -> LaunchOptionMismatchError:
    if all(b is UNRECORDED for b in built):
        return LaunchOptionMismatchError(f"{kernel}: called with {name}={value!r}, which its metadata.json does not record "
                                         f"(no {name} in provenance.options), so it cannot be checked; drop the keyword, or "
                                         f"rebuild {what} with tmlr-build from the kernel's source", name)
    values = " or ".join(sorted({repr(b) for b in built if b is not UNRECORDED}))
    return LaunchOptionMismatchError(f"{kernel}: built with {name}={values}, called with {name}={value!r}; rebuild {what} "
                                     f"with {_rebuild(name, value)} or drop the keyword", name)


def check(kernel: str, variant: Any, options: dict[str, Any]) -> None:
    """Raise :class:`LaunchOptionMismatchError` unless every option of the call is the variant's."""
    for name, value in options.items():
        built = recorded(variant, name)
        if type(value) is type(built) and value == built:  # the common case (num_warps=4 built as 4), without same()'s walk
            continue
        if not same(value, built):
            raise _error(kernel, name, value, [built], "it")


def members_with(family: str, members: list[Any], options: dict[str, Any]) -> list[Any]:
    """The family's ``members`` (each with ``meta.variants``) built with the call's options; raises
    :class:`LaunchOptionMismatchError` when none is."""
    for name, value in options.items():
        keep = [m for m in members if all(same(value, recorded(v, name)) for v in m.meta.variants)]
        if not keep and members:
            raise _error(family, name, value, [recorded(v, name) for m in members for v in m.meta.variants], "the family")
        members = keep
    return members
