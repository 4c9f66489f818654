"""Which GPU architectures tmlr-build targets, and how --arch values and Triton's target text name them."""
from __future__ import annotations

from tmlr_runtime.abi import Target
from tmlr_runtime.artifact.targets import BUILD_CAPABILITIES

from .errors import UnsupportedArchError
from .wording import CALL, CLI, Words

# the capabilities Triton 3.3.1's CUDA backend and its bundled ptxas compile for; kept by the runtime, whose advice for
# a GPU that nothing of an artifact runs on names only builds made here
_SUPPORTED = BUILD_CAPABILITIES


def supported_capabilities() -> tuple[int, ...]:
    return _SUPPORTED


def check_supported(target: Target, words: Words = CLI) -> Target:
    """``target`` itself; raises UnsupportedArchError when tmlr-build does not build for it."""
    if target.capability not in _SUPPORTED:
        raise UnsupportedArchError(f"{words.arch(target.capability)} is not supported; use {words.arch_choice} "
                                   f"{_supported()} (e.g. {words.arch_example})")
    return target


def _supported() -> str:
    return ",".join(map(str, _SUPPORTED))


def target_for(capability: int) -> Target:
    """The Target of a capability such as 90; raises UnsupportedArchError for others."""
    return check_supported(Target.from_capability(capability))


def call_target(value: object) -> Target:
    """The target of a ``@tmlr_build.jit`` call's ``arch=`` (one capability: a call builds for one GPU)."""
    try:
        target = Target.parse(str(value))
    except ValueError as e:
        raise UnsupportedArchError(f"arch={value!r}: {e}; a call builds for one GPU: pass {CALL.arch_choice} "
                                   f"{_supported()} (e.g. {CALL.arch_example})") from None
    return check_supported(target, CALL)


def comma_separated(words: list[str]) -> UnsupportedArchError:
    """The error of an --arch list written with blanks (``--arch '80 90'``, ``--arch 80 90``)."""
    items = [w for word in words for w in word.replace(",", " ").split()]
    return UnsupportedArchError(f"--arch {' '.join(words)!r}: --arch takes a comma-separated list: "
                                f"--arch {','.join(items)}")


def triton_target(text: object) -> Target | None:
    """The target that Triton's target text names (``"cuda:90"``, as in TTGIR's ``ttg.target``);
    None for no text or text naming no CUDA capability. Whether tmlr-build supports it is not checked."""
    backend, _, capability = str(text).partition(":")
    return Target.from_capability(int(capability)) if backend == "cuda" and capability.isdigit() else None


def parse_arch_list(text: str | int | list[object]) -> tuple[Target, ...]:
    """Parse ``"80,90"`` (or ``"sm_90a"``, ``[80, 90]``) into sorted, de-duplicated targets."""
    items = text if isinstance(text, list) else str(text).split(",")
    targets: set[Target] = set()
    for item in items:
        if not str(item).strip():
            continue
        if len(str(item).split()) > 1:
            raise comma_separated([str(item) if isinstance(text, list) else str(text)])
        try:
            capability = Target.parse(item).capability
        except ValueError as e:
            raise UnsupportedArchError(f"--arch value {e} (supported: {_supported()})") from None
        targets.add(target_for(capability))
    if not targets:
        raise UnsupportedArchError(f"--arch is empty; name at least one of {_supported()}")
    return tuple(sorted(targets))
