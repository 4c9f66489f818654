"""Which GPU architectures tmlr-build targets, and how --arch values name them."""
from __future__ import annotations

from dataclasses import dataclass

from .errors import UnsupportedArchError

# capability -> ptxas --gpu-name, as Triton 3.3.1's sm_arch_from_capability picks it:
# 90 and above compile for the arch-specific "a" targets (wgmma, tcgen05).
_ARCHS: dict[int, str] = {80: "sm_80", 86: "sm_86", 89: "sm_89", 90: "sm_90a", 100: "sm_100a"}


@dataclass(frozen=True, order=True)
class Target:
    """One compile target: a compute capability and the ptxas arch name it maps to."""

    capability: int

    @property
    def arch(self) -> str:
        return _ARCHS[self.capability]


def supported_capabilities() -> tuple[int, ...]:
    return tuple(_ARCHS)


def target_for(capability: int) -> Target:
    """The Target of a capability such as 90; raises UnsupportedArchError for others."""
    if capability not in _ARCHS:
        raise UnsupportedArchError(
            f"--arch {capability} is not supported; use one or more of "
            f"{','.join(map(str, _ARCHS))} (e.g. --arch 80,90)"
        )
    return Target(capability)


def parse_arch_list(text: str | int | list[object]) -> tuple[Target, ...]:
    """Parse ``"80,90"`` (or ``"sm_90a"``, ``[80, 90]``) into sorted, de-duplicated targets."""
    items = text if isinstance(text, list) else str(text).split(",")
    caps: set[int] = set()
    for item in items:
        word = str(item).strip().lower()
        if not word:
            continue
        digits = word.removeprefix("sm_").removeprefix("sm").removesuffix("a")
        if not digits.isdigit():
            raise UnsupportedArchError(
                f"--arch value {str(item)!r} is not a compute capability; write it like 80 or 90 "
                f"(supported: {','.join(map(str, _ARCHS))})"
            )
        caps.add(target_for(int(digits)).capability)
    if not caps:
        raise UnsupportedArchError(f"--arch is empty; name at least one of {','.join(map(str, _ARCHS))}")
    return tuple(Target(c) for c in sorted(caps))
