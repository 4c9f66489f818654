"""Stress on a real GPU: one ``Kernel`` launched from 8 threads over 2 CUDA streams, every launch checked,
while a kernel that needs global scratch (device-side TMA descriptors) is launched from other threads on
the same two streams.

- 8 "add" threads x ``TMLR_STRESS_LAUNCHES`` (default 10,000) launches of ``examples/artifacts/add``.
  Launch ``g`` (over all threads) computes ``out = x + y`` with ``x = 0, 1, ..., n-1`` and
  ``y = g mod 2**22`` in every element, into its own output row, so each result names the launch that
  wrote it. Each thread owns a pool of up to 500 (y, out) rows, fills them on its stream, launches one
  batch, synchronises the stream and checks every row of the batch (the ``n`` computed elements and the
  masked tail, which must keep its sentinel) before reusing the pool: all 80,000 launches are checked.
  Threads 0, 2, 4, 6 use stream A and 1, 3, 5, 7 stream B; the stream is passed as a torch stream or as
  its int handle, the grid as an int or a tuple, and the output as a tensor or an int address, so the
  launcher's inline and converted argument paths all run concurrently.
- 4 "scratch" threads (2 per stream, compute capability 9.0 only: the artifact is sm_90a) launch
  ``examples/artifacts/tma_scale`` (``dst = 2 * src``; 256 B of stream-ordered global scratch per
  program) on fresh random inputs of several shapes, and check every result, until the add threads
  are done (and at least ``MIN_TMA_ROUNDS`` rounds each).

Knobs: ``TMLR_STRESS_LAUNCHES`` (launches per add thread), ``TMLR_STRESS_TIMEOUT_S`` (default 120: the
test fails, instead of hanging, when the threads are not done by then), ``TMLR_STRESS_REPORT`` (a path:
counts and launch rates are written there as JSON). Run: ``python -m pytest -m gpu tests/gpu/test_stress_gpu.py``.
"""
from __future__ import annotations

import json
import os
import threading
import time
import traceback

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADD = os.path.join(ROOT, "examples", "artifacts", "add")
TMA = os.path.join(ROOT, "examples", "artifacts", "tma_scale")

ADD_THREADS = 8
STREAMS = 2
SCRATCH_THREADS = 4  # 2 per stream
ROW = 1024  # the add artifact's BLOCK: one program per launch
N_ELEMS = 1000  # < BLOCK, so the masked tail of every launch is checked too
SENTINEL = -1.0  # never x + y (both >= 0)
Y_MOD = 2**22  # y values stay exact in fp32, and so do x + y
TMA_SHAPES = ((64, 64), (128, 192), (256, 256), (192, 512), (64, 1024))  # multiples of the 64x64 block
TMA_ROUND = 8  # launches (each with its own src/dst) between two checks
MIN_TMA_ROUNDS = 3


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value < 1:
        raise ValueError(f"{name}={raw!r} must be >= 1")
    return value


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, str(default))
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None


def test_one_kernel_8_threads_2_streams_with_scratch_kernels_alongside() -> None:
    launches = _env_int("TMLR_STRESS_LAUNCHES", 10_000)
    timeout_s = _env_float("TMLR_STRESS_TIMEOUT_S", 120.0)
    batch = max(1, min(500, launches // 4))  # at least 4 check rounds per thread
    with_scratch = torch.cuda.get_device_capability(0) == (9, 0)

    torch.cuda.set_device(0)
    add = tr.Kernel.load(ADD)
    tma = tr.Kernel.load(TMA) if with_scratch else None
    if tma is not None:
        assert tma.variant.scratch_size > 0
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    x = torch.arange(ROW, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()

    n_threads = ADD_THREADS + (SCRATCH_THREADS if with_scratch else 0)
    start = threading.Barrier(n_threads + 1)
    stop = threading.Event()  # set on the first failure: every thread leaves at its next check
    adds_done = threading.Event()
    lock = threading.Lock()
    adds_left = [ADD_THREADS]
    errors: list[str] = []
    verified = [0] * ADD_THREADS  # add launches checked, per thread
    tma_checked = [0] * SCRATCH_THREADS
    tma_during_adds = [0] * SCRATCH_THREADS  # scratch launches issued before the add threads finished
    deadline = time.monotonic() + timeout_s

    def fail(msg: str) -> None:
        with lock:
            errors.append(msg)
        stop.set()
        start.abort()  # a thread still waiting at the start gets BrokenBarrierError instead of hanging

    def add_worker(t: int) -> None:
        try:
            torch.cuda.set_device(0)
            s = streams[t % STREAMS]
            stream_arg = s if (t // STREAMS) % 2 == 0 else s.cuda_stream  # torch stream or int handle
            grid = 1 if t < ADD_THREADS // 2 else (1,)  # int grid or tuple grid
            int_out = t % 4 == 3  # out as an int address (the launcher's slow pointer path)
            with torch.cuda.stream(s):
                ybuf = torch.empty(batch, ROW, device="cuda")
                obuf = torch.empty(batch, ROW, device="cuda")
                rows = torch.arange(batch, device="cuda", dtype=torch.float32).unsqueeze(1)
            ys = ybuf.unbind(0)  # one view per launch: distinct inputs and outputs within a batch
            outs = [o.data_ptr() for o in obuf.unbind(0)] if int_out else obuf.unbind(0)
            s.synchronize()
            start.wait(timeout=120)
            for b0 in range(0, launches, batch):
                if stop.is_set():
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{verified[t]} of {launches} launches checked after {timeout_s:.0f} s")
                cnt = min(batch, launches - b0)
                g0 = t * launches + b0  # global index of this batch's first launch
                base = float(g0 % Y_MOD)
                with torch.cuda.stream(s):
                    torch.add(rows[:cnt].expand(cnt, ROW), base, out=ybuf[:cnt])
                    obuf[:cnt].fill_(SENTINEL)
                for r in range(cnt):
                    add(grid, x, ys[r], outs[r], N_ELEMS, stream=stream_arg)
                s.synchronize()
                with torch.cuda.stream(s):
                    expected = x[:N_ELEMS] + ybuf[:cnt, :N_ELEMS]
                    bad = (obuf[:cnt, :N_ELEMS] != expected).any(1) | (obuf[:cnt, N_ELEMS:] != SENTINEL).any(1)
                    bad_rows = bad.nonzero().flatten().tolist()
                if bad_rows:
                    r = bad_rows[0]
                    want = torch.cat([expected[r], torch.full((ROW - N_ELEMS,), SENTINEL, device=expected.device)])
                    i = int((obuf[r] != want).nonzero()[0])
                    fail(
                        f"add thread {t} (stream {t % STREAMS}): {len(bad_rows)} of {cnt} launches in the batch "
                        f"from launch {g0} are wrong; first: launch {g0 + r}, element {i}: got {obuf[r, i].item()}, "
                        f"expected {want[i].item()} ({'masked tail, must stay ' + str(SENTINEL) if i >= N_ELEMS else 'x[i] + y'})"
                    )
                    return
                verified[t] += cnt
        except threading.BrokenBarrierError:
            return  # another thread failed during setup; its error is recorded
        except BaseException:  # noqa: BLE001 - reported with the thread
            fail(f"add thread {t}:\n{traceback.format_exc()}")
        finally:
            with lock:
                adds_left[0] -= 1
                if adds_left[0] == 0:
                    adds_done.set()

    def tma_worker(w: int) -> None:
        try:
            torch.cuda.set_device(0)
            s = streams[w % STREAMS]
            gen = torch.Generator(device="cuda")
            gen.manual_seed(1000 + w)
            start.wait(timeout=120)
            rounds = 0
            while not stop.is_set():
                if adds_done.is_set() and rounds >= MIN_TMA_ROUNDS:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{rounds} rounds done after {timeout_s:.0f} s")
                during = not adds_done.is_set()
                pairs = []
                with torch.cuda.stream(s):
                    for i in range(TMA_ROUND):
                        M, N = TMA_SHAPES[(rounds * TMA_ROUND + i + w) % len(TMA_SHAPES)]
                        src = torch.randn(M, N, device="cuda", dtype=torch.float16, generator=gen)
                        dst = torch.full_like(src, float("nan"))  # an element not written stays NaN and fails
                        pairs.append((M, N, src, dst))
                for M, N, src, dst in pairs:
                    tma((M // 64, N // 64), src, dst, M, N, stream=s)
                s.synchronize()
                with torch.cuda.stream(s):
                    for i, (M, N, src, dst) in enumerate(pairs):
                        if not torch.equal(dst, src * 2):
                            wrong = int((dst != src * 2).sum())
                            fail(f"scratch thread {w} (stream {w % STREAMS}): round {rounds} launch {i} "
                                 f"({M}x{N}): {wrong} of {M * N} elements are not 2 * src")
                            return
                tma_checked[w] += len(pairs)
                if during:
                    tma_during_adds[w] += len(pairs)
                rounds += 1
        except threading.BrokenBarrierError:
            return
        except BaseException:  # noqa: BLE001
            fail(f"scratch thread {w}:\n{traceback.format_exc()}")

    threads = [threading.Thread(target=add_worker, args=(t,), name=f"add-{t}", daemon=True) for t in range(ADD_THREADS)]
    if with_scratch:
        threads += [threading.Thread(target=tma_worker, args=(w,), name=f"tma-{w}", daemon=True)
                    for w in range(SCRATCH_THREADS)]
    for th in threads:
        th.start()
    try:
        start.wait(timeout=120)
    except threading.BrokenBarrierError:
        pass  # a worker failed while setting up; reported below
    t0 = time.monotonic()
    for th in threads:
        th.join(timeout=max(1.0, deadline + 30 - time.monotonic()))
    elapsed = time.monotonic() - t0
    hung = [th.name for th in threads if th.is_alive()]
    if hung:
        stop.set()
        pytest.fail(f"threads {hung} still running {timeout_s:.0f} s + 30 s after the start (hang?); "
                    f"checked so far: {sum(verified)} add launches, {sum(tma_checked)} scratch launches")
    torch.cuda.synchronize()

    total = ADD_THREADS * launches
    report = {
        "add_threads": ADD_THREADS, "streams": STREAMS, "launches_per_thread": launches,
        "add_launches_checked": sum(verified), "add_launches_expected": total,
        "scratch_threads": SCRATCH_THREADS if with_scratch else 0,
        "scratch_launches_checked": sum(tma_checked),
        "scratch_launches_while_adds_ran": sum(tma_during_adds),
        "seconds": round(elapsed, 3),
        "add_launches_per_s": round(sum(verified) / elapsed) if elapsed > 0 else None,
        "device": torch.cuda.get_device_name(0),
        "launch_path": "compiled" if add._compiled is not None else "python",  # TMLR_PURE_PYTHON=1 or no extension: python
        "errors": errors,
    }
    path = os.environ.get("TMLR_STRESS_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(report, f, indent=1)
    print("stress:", json.dumps(report))

    assert not errors, "\n".join(errors[:5])
    assert sum(verified) == total, f"only {sum(verified)} of {total} add launches were checked: {verified}"
    if with_scratch:
        assert all(c >= MIN_TMA_ROUNDS * TMA_ROUND for c in tma_checked), tma_checked
        if launches >= 1000:  # with few launches the add threads may finish before a scratch round ends
            assert sum(tma_during_adds) > 0, "no scratch-kernel round overlapped the add launches"
