"""Timing one launch with CUDA events through the driver, as ``triton.testing.do_bench`` (L2 cleared before each
timed launch), but with ``reset_to_zero`` / ``restore_value`` work (:class:`Preserve`) outside the timed span, and
never on a stream being captured into a CUDA graph."""
from __future__ import annotations

import statistics
from typing import Any, Callable
from .. import driver
from ..errors import DriverError, NoCompatibleVariantError, TuningError, VariantNotBuiltError
from ..launch.execute import call_grid
from ..launch.streams import default_stream, stream_handle

GRID_META = "the chosen variant's constexprs, config kwargs, num_warps/num_stages and the arguments by name"

L2_FLUSH_BYTES = 256 << 20


def refuse_capture(stream: int, what: str) -> None:
    """Raise :class:`TuningError` when ``stream`` (or the legacy stream it syncs with) is capturing."""
    drv = driver.api()
    status = driver.check(drv.cuStreamIsCapturing(stream), "cuStreamIsCapturing")
    if int(status) != int(drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE):
        raise TuningError(f"{what}: the stream is being captured into a CUDA graph, and benchmarking the configs there "
                          "would record the benchmark into the graph; run one call of each shape before capturing (warm-up), "
                          "ship a tuning table (`tmlr tune`), or load with tuning='strict'")


class Preserve:
    """Keeps benchmark launches from changing what the caller owns: ``zero`` buffers are cleared before
    each launch (``reset_to_zero``), ``restore`` buffers copied aside once and back after each launch
    (``restore_value``); :meth:`close` leaves them as before the first launch, the zeroed ones zero."""

    def __init__(self, zero: list[tuple[int, int]], restore: list[tuple[int, int]], stream: int) -> None:
        self.drv, self.zero, self.restore, self.stream = driver.api(), zero, restore, stream
        self.copies: list[tuple[int, int, int]] = []  # (saved copy, address, bytes)
        for address, nbytes in restore:
            copy = int(driver.check(self.drv.cuMemAlloc(max(nbytes, 1)), "cuMemAlloc (restore_value copy)"))
            self.copies.append((copy, address, nbytes))
            driver.check(self.drv.cuMemcpyDtoDAsync(copy, address, nbytes, stream), "cuMemcpyDtoDAsync (restore_value save)")

    def before(self) -> None:
        for address, nbytes in self.zero:
            driver.check(self.drv.cuMemsetD8Async(address, 0, nbytes, self.stream), "cuMemsetD8Async (reset_to_zero)")

    def after(self) -> None:
        for copy, address, nbytes in self.copies:
            driver.check(self.drv.cuMemcpyDtoDAsync(address, copy, nbytes, self.stream), "cuMemcpyDtoDAsync (restore_value)")

    def close(self) -> None:
        self.before()
        driver.check(self.drv.cuStreamSynchronize(self.stream), "cuStreamSynchronize")
        for copy, _, _ in self.copies:
            driver.check(self.drv.cuMemFree(copy), "cuMemFree (restore_value copy)")
        self.copies = []


def _elapsed(drv: Any, start: Any, end: Any) -> float:
    return float(driver.check(drv.cuEventElapsedTime(start, end), "cuEventElapsedTime"))


def median_ms(launch: Callable[[], None], stream: int, preserve: Preserve | None = None, *, warmup_ms: float = 25.0,
              rep_ms: float = 100.0, max_reps: int = 1000, flush_bytes: int = L2_FLUSH_BYTES) -> float:
    """The median time in ms of ``launch()`` on ``stream``: one launch, an estimate over 5, then warm-up and timed
    launches filling ``warmup_ms`` and ``rep_ms`` (at most ``max_reps``), each timed between two events."""
    drv = driver.api()
    before = preserve.before if preserve else (lambda: None)
    after = preserve.after if preserve else (lambda: None)
    flush = int(driver.check(drv.cuMemAlloc(flush_bytes), "cuMemAlloc (L2 flush buffer)")) if flush_bytes else 0
    events: list[Any] = []
    try:
        def timed(i: int) -> None:
            while len(events) < 2 * i + 2:
                events.append(driver.check(drv.cuEventCreate(0), "cuEventCreate"))
            before()
            if flush:
                driver.check(drv.cuMemsetD8Async(flush, 0, flush_bytes, stream), "cuMemsetD8Async (L2 flush)")
            driver.check(drv.cuEventRecord(events[2 * i], stream), "cuEventRecord")
            launch()
            driver.check(drv.cuEventRecord(events[2 * i + 1], stream), "cuEventRecord")
            after()

        def times(n: int) -> list[float]:
            driver.check(drv.cuEventSynchronize(events[2 * n - 1]), "cuEventSynchronize")
            return [_elapsed(drv, events[2 * i], events[2 * i + 1]) for i in range(n)]

        for i in range(5):
            timed(i)
        estimate = max(statistics.fmean(times(5)), 1e-6)
        for _ in range(max(1, min(max_reps, int(warmup_ms / estimate)))):
            before(), launch(), after()
        reps = max(1, min(max_reps, int(rep_ms / estimate)))
        for i in range(reps):
            timed(i)
        return statistics.median(times(reps))
    finally:
        for event in events:
            drv.cuEventDestroy(event)
        if flush:
            drv.cuMemFree(flush)


def extent(args: dict[str, Any], name: str, dense: bool) -> tuple[int, int]:
    """(address, bytes) of the memory argument ``name`` spans (a torch tensor or an object with
    ``__cuda_array_interface__``); ``dense``: it must cover no gaps (it is cleared whole)."""
    value = args.get(name)
    try:
        if hasattr(value, "data_ptr") and hasattr(value, "stride"):
            shape, strides, item, address = tuple(value.shape), tuple(value.stride()), value.element_size(), value.data_ptr()
        else:
            cai = value.__cuda_array_interface__  # type: ignore[union-attr]
            shape, item, address = tuple(cai["shape"]), int(str(cai["typestr"])[2:]), int(cai["data"][0])
            strides = tuple(s // item for s in cai["strides"]) if cai.get("strides") else None
    except Exception:
        raise TuningError(f"argument {name!r} (in reset_to_zero/restore_value): {type(value).__name__} gives no size; pass a "
                          "torch tensor or an object with __cuda_array_interface__ so a benchmark can save or clear it") from None
    count = 1
    for n in shape:
        count *= n
    if strides is None or count == 0:
        return address, count * item
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, strides))
    if dense and span != count:
        raise TuningError(f"argument {name!r} is in reset_to_zero but is not contiguous: clearing its span would clear memory "
                          "it does not own; pass a contiguous tensor")
    return address, span * item


def benchmark(family: Any, key: tuple[Any, ...], grid: Any, args: tuple[Any, ...], given: dict[str, Any], stream: Any) -> tuple[int, list[float]]:
    """(the fastest config, each config's median ms) for one call, its data left as one launch would leave it."""
    at = family.index.autotune
    if at is None or at.has_pre_hook:
        raise TuningError(f"{family.name}: its @triton.autotune has a pre_hook, which tmlr cannot run; tune it where Triton "
                          "runs it, or ship a tuning table (`tmlr tune` needs the same), or load with tuning='strict'")
    handle = stream_handle(stream) if stream is not None else \
        default_stream(driver.current_device())
    refuse_capture(handle, f"{family.name}: tuning autotune key {key}")
    named = {**dict(zip(family.names, args)), **given}
    preserve = Preserve([extent(named, n, dense=True) for n in at.reset_to_zero],
                        [extent(named, n, dense=False) for n in at.restore_value], handle)
    times, failure = [], None
    try:
        for c in range(len(family.configs)):
            try:
                heur = family._heuristics(args, given, c)
                kernel, base, _ = family._resolve(c, heur, args, given)
                g = call_grid(grid, {**base, **named}, GRID_META) if callable(grid) else grid
                times.append(median_ms(lambda: kernel(g, *args, stream=handle), handle, preserve))
            except (NoCompatibleVariantError, DriverError) as e:
                times.append(float("inf"))
                failure = e
    finally:
        preserve.close()
    best = min(range(len(times)), key=times.__getitem__)
    if times[best] == float("inf"):
        if isinstance(failure, VariantNotBuiltError):  # no config was built for this call: its compile error says why
            raise failure
        raise TuningError(f"{family.name}: no config could be benchmarked for key {key} (last error: {failure})")
    return best, times
