"""Several GPUs in one host: one artifact, one process (or one per GPU), every device.

Every test needs at least two CUDA devices and skips otherwise. Run on a two-GPU machine with
``bash tests/multi_gpu.sh`` (pytest output and a summary under ``$OUT``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402
from tmlr_runtime import driver  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADD = os.path.join(ROOT, "examples", "artifacts", "add")
TMA = os.path.join(ROOT, "examples", "artifacts", "tma_scale")
BLOCK = 1024

pytestmark = [pytest.mark.gpu, pytest.mark.needs_gpus(2)]


def _blocks(n: int) -> int:
    return (n + BLOCK - 1) // BLOCK


def _on_both_devices(work) -> None:
    """Run ``work(device)`` in one thread per device; re-raise what any of them raised."""
    errors: list[BaseException] = []

    def run(dev: int) -> None:
        try:
            torch.cuda.set_device(dev)
            work(dev)
        except BaseException as e:  # noqa: BLE001 - reported below with the device
            errors.append(e)

    threads = [threading.Thread(target=run, args=(d,)) for d in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_one_load_alternating_devices_one_module_per_context() -> None:
    k = tr.Kernel.load(ADD)
    sha = k.variant.cubin_sha256  # both devices are the same model here: the same variant
    n = 50_000
    loads_after_first_round = None
    for step in range(8):
        dev = step % 2
        torch.cuda.set_device(dev)  # torch's current device decides where the kernel runs
        x = torch.randn(n, device=f"cuda:{dev}")
        y = torch.randn(n, device=f"cuda:{dev}")
        out = torch.empty_like(x)
        k(_blocks(n), x, y, out, n)
        torch.cuda.synchronize(dev)
        assert torch.equal(out, x + y), f"device {dev}, step {step}"
        if step == 1:
            loads_after_first_round = dict(driver.PROCESS.modules)
    torch.cuda.set_device(0)
    assert driver.PROCESS.modules == loads_after_first_round, "a module was loaded twice"
    contexts = [key[0] for key in driver.PROCESS.modules if sha in key]
    assert len(contexts) == len(set(contexts)) == 2, contexts
    assert tr.Kernel.load(ADD) is k


def test_one_thread_per_device_concurrently() -> None:
    k = tr.Kernel.load(ADD)
    launches = int(os.environ.get("TMLR_STRESS_LAUNCHES", "10000"))
    n = 4096
    done: list[int] = []

    def work(dev: int) -> None:
        stream = torch.cuda.Stream(device=dev)
        x = torch.arange(n, device=f"cuda:{dev}", dtype=torch.float32)
        # A ring of outputs: launch i writes x + i into outs[i % 16]; check the last 16 at the end
        # and every ring turn on the way, so a launch that ran on the wrong device or not at all shows.
        outs = [torch.full((n,), -1.0, device=f"cuda:{dev}") for _ in range(16)]
        ys = [torch.full((n,), float(i), device=f"cuda:{dev}") for i in range(16)]
        torch.cuda.synchronize(dev)
        for i in range(launches):
            k(_blocks(n), x, ys[i % 16], outs[i % 16], n, stream=stream)
            if i % 2000 == 1999:
                stream.synchronize()
                for j in range(16):
                    if not torch.equal(outs[j], x + j):
                        raise AssertionError(f"device {dev}: wrong result after {i + 1} launches (slot {j})")
                    outs[j].fill_(-1.0)
                torch.cuda.synchronize(dev)
        stream.synchronize()
        tail = {i % 16 for i in range(launches - launches % 2000, launches)}
        for j in range(16):
            expected = x + j if j in tail else torch.full_like(x, -1.0)
            if not torch.equal(outs[j], expected):
                raise AssertionError(f"device {dev}: wrong result in slot {j} after all {launches} launches")
        done.append(dev)

    _on_both_devices(work)
    assert sorted(done) == [0, 1]


def test_tensor_on_other_device_is_a_typed_error() -> None:
    k = tr.Kernel.load(ADD)
    n = 10_000
    x1 = torch.randn(n, device="cuda:1")
    torch.cuda.set_device(0)
    with pytest.raises(tr.PointerArgumentError, match="cuda:1|device 1"):
        k(_blocks(n), x1, x1, x1, n)
    # Nothing sticky: a correct launch on each device right after still works.
    for dev in (0, 1):
        torch.cuda.set_device(dev)
        x = torch.randn(n, device=f"cuda:{dev}")
        out = torch.empty_like(x)
        k(_blocks(n), x, x, out, n)
        torch.cuda.synchronize(dev)
        assert torch.equal(out, x + x)
    torch.cuda.set_device(0)


_CHILD = r"""
import sys, torch, tmlr_runtime as tr
dev, path = int(sys.argv[1]), sys.argv[2]
torch.cuda.set_device(dev)
k = tr.Kernel.load(path)
n = 100_000
x = torch.randn(n, device="cuda"); y = torch.randn(n, device="cuda"); out = torch.empty_like(x)
for _ in range(100):
    k((n + 1023) // 1024, x, y, out, n)
torch.cuda.synchronize()
print("OK" if torch.equal(out, x + y) else "WRONG", dev, torch.cuda.current_device())
"""


def test_one_process_per_gpu_same_directory() -> None:
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(dev), ADD], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=dict(os.environ, CUDA_VISIBLE_DEVICES="0,1"))
             for dev in (0, 1)]
    outs = [p.communicate(timeout=120) for p in procs]
    for dev, (p, (stdout, stderr)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and stdout.split() == ["OK", str(dev), str(dev)], stdout + stderr


@pytest.mark.needs_sm(9, 0)  # the sm_90a cubin, on both devices
def test_global_scratch_kernel_on_both_devices_at_once() -> None:
    k = tr.Kernel.load(TMA)
    M, N = 256, 512

    def work(dev: int) -> None:
        stream = torch.cuda.Stream(device=dev)
        src = torch.randn(M, N, device=f"cuda:{dev}", dtype=torch.float16)
        dst = torch.zeros_like(src)
        torch.cuda.synchronize(dev)
        for _ in range(200):
            k((M // 64, N // 64), src, dst, M, N, stream=stream)
        stream.synchronize()
        if not torch.equal(dst, src * 2):
            raise AssertionError(f"device {dev}: wrong TMA result")

    _on_both_devices(work)
