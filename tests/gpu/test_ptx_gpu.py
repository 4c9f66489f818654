"""A GPU newer than the build: tests/gpu/artifacts/add_ptx (examples' add as an sm_80 cubin and compute_80 PTX, built
by tests/gpu/ptx_kernels.json) on an sm_90 GPU, where no sm_80 cubin runs, in a process with Triton blocked.

The checks run in that process (this file as a script) and print one ``PASS`` line each:

- the driver refuses the sm_80 cubin itself on 9.0 (so a right result can only come from the PTX);
- ``Kernel.load`` picks the PTX and says so with exactly one :class:`PtxJitWarning` (the cost in it); a second load
  and the launches say nothing more;
- the result equals torch's ``x + y``;
- the PTX-loaded kernel launches through the same path as the cubin-only ``examples/artifacts/add`` (the compiled
  executor where that one has it): the choice happened at load. What a launch costs is the benchmark's question
  (``python benchmarks/launch.py --ptx``), not an assertion here.
"""
from __future__ import annotations

import os
import sys
import warnings

import pytest

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ADD_PTX = os.path.join(HERE, "artifacts", "add_ptx")
ADD = os.path.join(ROOT, "examples", "artifacts", "add")
CHECKS = ("cubin-refused", "one-warning", "result", "same-launch-path")


@pytest.mark.needs_sm(9, 0)
def test_sm80_ptx_runs_on_sm90_with_triton_blocked() -> None:
    from blocked_run import assert_checks_pass  # here: the file itself runs again where tests/ is not on the path

    assert_checks_pass(__file__, CHECKS)


def _main() -> None:
    assert sys.modules.get("triton", 0) is None, "run with Triton blocked"
    import torch

    import tmlr_runtime as tr
    from tmlr_runtime import driver
    from tmlr_runtime.artifact.metadata import read_cubin

    torch.cuda.init()
    meta = tr.ArtifactMetadata.read(ADD_PTX)
    (variant,) = meta.variants
    with torch.cuda.device(0):
        drv = driver.api()
        driver.current_context()  # the primary context current, as Kernel.load makes it
        err = drv.cuModuleLoadData(read_cubin(ADD_PTX, variant))[0]
        assert int(err) != 0, "the driver loaded an sm_80 cubin on an sm_90 GPU"
        print(f"PASS cubin-refused ({err.name})")

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel = tr.Kernel.load(ADD_PTX)
            again = tr.Kernel.load(ADD_PTX)
            n = 1 << 20
            x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
            out = torch.empty_like(x)
            for _ in range(3):
                kernel((n + 1023) // 1024, x, y, out, n)
            torch.cuda.synchronize()
        jit = [w.message for w in caught if isinstance(w.message, tr.PtxJitWarning)]
        assert len(jit) == 1 and again is kernel and kernel.variant.arch == "sm_80", [str(w.message) for w in caught]
        assert jit[0].arch == "sm_90" and "compute_80" in str(jit[0]) and "JIT cache" in str(jit[0]), str(jit[0])
        print(f"PASS one-warning ({jit[0].seconds * 1e3:.1f} ms to compile the PTX)")

        assert torch.equal(out, x + y)
        print(f"PASS result ({n} elements equal torch's x + y)")

        cubin = tr.Kernel.load(ADD)
        assert cubin.variant.arch == "sm_90a"
        assert (kernel._compiled is None) == (cubin._compiled is None)  # the compiled executor for both, or neither
        assert type(kernel.plan) is type(cubin.plan) and kernel.plan.variant.num_warps == cubin.plan.variant.num_warps
        print(f"PASS same-launch-path ({'compiled' if cubin._compiled is not None else 'pure Python'})")


if __name__ == "__main__":
    _main()
