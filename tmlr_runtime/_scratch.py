"""Global scratch for kernels that need it (device-side TMA descriptors and the like).

Allocated per launch with ``cuMemAllocAsync`` on the launch stream and released with
``cuMemFreeAsync`` right after it, so the memory is stream-ordered: no synchronisation, correct
on several streams, and recorded as allocation/free nodes under CUDA-graph capture.
"""
from __future__ import annotations

from ._driver import api, check

# Memory-pool allocations are at least this aligned; larger alignments are made by over-allocating.
_POOL_ALIGN = 256


def alloc(nbytes: int, align: int, stream: int) -> tuple[int, int]:
    """``(aligned address, raw address)`` of ``nbytes`` of stream-ordered device memory."""
    extra = align - 1 if align > _POOL_ALIGN else 0
    raw = int(check(api().cuMemAllocAsync(nbytes + extra, stream), "cuMemAllocAsync (global scratch)"))
    return raw + (-raw % align), raw


def free(raw: int, stream: int) -> None:
    check(api().cuMemFreeAsync(raw, stream), "cuMemFreeAsync (global scratch)")
