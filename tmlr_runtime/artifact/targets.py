"""What of an artifact a GPU runs, by CUDA's rules: one pure function over the variants' targets.

A cubin runs on GPUs of its own major version at the same or a higher minor (sm_80 on 8.0, 8.6, 8.9),
an arch-specific one (sm_90a) on its own capability only; PTX for a virtual arch (compute_80) runs on
its own capability and every later one, the driver compiling it at load. The order is CUDA's: an exact
cubin, else a compatible one (the newest), else PTX (the newest that fits), else nothing, which is a
:class:`NoCompatibleVariantError` naming what the artifact has and what the GPU needs.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Sequence

from ..abi import Target
from ..errors import NoCompatibleVariantError

Offer = tuple[Target, "Target | None"]  # a variant's cubin target and its PTX target (None: no PTX)

# The capabilities tmlr-build compiles for (its --arch values; tmlr_build/common/arch.py reads them here, so the
# runtime's advice names only builds tmlr-build makes): Triton 3.3.1's CUDA backend and its bundled ptxas. 90 and 100
# are arch-specific (sm_90a, sm_100a), so only 80, 86 and 89 give PTX that newer GPUs compile at load.
BUILD_CAPABILITIES = (80, 86, 89, 90, 100)
PORTABLE_CAPABILITIES = tuple(c for c in BUILD_CAPABILITIES if not Target.from_capability(c).arch_specific)


class Pick(namedtuple("Pick", "index ptx")):  # collections', not typing's (see elf.Cubin)
    """The variant to load (its index) and whether from its PTX (else its cubin)."""

    __slots__ = ()
    index: int
    ptx: bool


def choose(name: str, offers: Sequence[Offer], major: int, minor: int, hint: str = "") -> Pick:
    """What of ``offers`` (one per variant) a GPU of compute capability major.minor loads; raises
    :class:`NoCompatibleVariantError` when nothing fits (``hint`` ends its advice)."""
    cubins = [i for i, (cubin, _) in enumerate(offers) if cubin.runs_on(major, minor)]
    if cubins:  # the exact one first (an arch-specific one before a portable one), else the newest
        return Pick(max(cubins, key=lambda i: (offers[i][0].capability, offers[i][0].arch_specific)), False)
    ptx = [i for i, (_, p) in enumerate(offers) if p is not None and p.runs_on(major, minor)]
    if ptx:
        return Pick(max(ptx, key=lambda i: offers[i][1].capability), True)  # type: ignore[union-attr]
    raise NoCompatibleVariantError(no_fit_message(name, offers, major, minor, hint))


def no_fit_message(name: str, offers: Sequence[Offer], major: int, minor: int, hint: str = "") -> str:
    """What the artifact has, what this GPU needs, and a build tmlr-build makes that gives it (:func:`advice`)."""
    has = [f"{c.arch} (runs on {_where(c)})" for c, _ in offers]
    has += [f"PTX {p.arch} (runs on {_where(p)})" for _, p in offers if p is not None]
    cc = major * 10 + minor
    needs = f"a cubin for {f'sm_{major}0 to ' if minor else ''}sm_{cc} (or sm_{cc}a), or PTX for compute_{cc} or older"
    return (f"{name}: nothing in the artifact runs on this GPU (compute capability {major}.{minor}): it has "
            f"{', '.join(has)}; {advice(major, minor, needs, hint)}")


def advice(major: int, minor: int, needs: str = "", hint: str = "") -> str:
    """The build that runs on a GPU of compute capability major.minor, among those tmlr-build makes
    (:data:`BUILD_CAPABILITIES`): a cubin for it (or an older one of its major), else PTX the driver compiles at
    load, else none: such a GPU is older than any target of tmlr-build. ``needs`` (what the GPU needs) leads the
    first two; ``hint`` ends them."""
    cubins = [c for c in BUILD_CAPABILITIES if Target.from_capability(c).runs_on(major, minor)]
    ptx = [c for c in PORTABLE_CAPABILITIES if c <= major * 10 + minor]
    built = ",".join(map(str, BUILD_CAPABILITIES))
    if not cubins and not ptx:
        return (f"tmlr does not support a GPU of compute capability {major}.{minor}: tmlr-build builds for 8.0 and newer "
                f"only (--arch {built}; Triton supports NVIDIA GPUs of compute capability 8.0 and newer), and neither "
                f"their cubins nor their PTX run on an older GPU")
    lead = f"this GPU needs {needs}. " if needs else ""
    portable = f"a portable target ({', '.join(map(str, ptx))}) with --ptx, whose PTX the driver compiles at load on this and newer GPUs"
    if cubins:
        return (f"{lead}Rebuild with `tmlr-build ... --arch {max(cubins)}` (add it to the existing --arch list), or build "
                f"{portable}{hint}")
    return (f"{lead}tmlr-build makes no cubin for {major}.{minor} (its --arch values: {built}): build {portable}, e.g. "
            f"`tmlr-build ... --arch {max(ptx)} --ptx` (add it to the existing --arch list){hint}")


def _where(t: Target) -> str:
    major = t.capability // 10
    if t.is_ptx:
        return f"{t.version} and newer, compiled at load"
    if t.arch_specific:
        return f"{t.version} only"
    return f"{t.version} to {major}.9"
