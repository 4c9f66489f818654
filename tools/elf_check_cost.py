"""What the cubin cross-check costs a first ``Kernel.load``: loads with and without it, alternating in one process.

    python3 tools/elf_check_cost.py [--gpu] [--rounds 5] [--loads 200] [--python-walk] [--json OUT]

The cross-check (``artifact.metadata.check_cubin``: the ELF header's SM against the variant's target, every section
inside the file, the kernel's parameter layout from ``EIATTR_KPARAM_INFO``) runs in every first load of a cubin.
Here each load is of a fresh copy of ``examples/artifacts/add4`` or ``nop_args`` with the module cache emptied, so
the cubin is read, hashed, checked and loaded each time; every other load replaces ``check_cubin`` with one that
only wraps the bytes (the load as it was before the check). Pairs alternate in one process, so that a shared or
busy machine slows both alike. A round reports the median of each side over ``--loads`` loads; printed and written
with ``--json``: per artifact, the median and the spread over the rounds of each side, and with/without.

Without ``--gpu`` the CUDA driver is faked (tools/runtime_ab.py's: its calls return at once), so the ratio is over
tmlr's own share of a load; with ``--gpu`` the real driver loads each module (cuModuleLoadData and the rest), as a
service's first load does. ``TMLR_PURE_PYTHON=1`` takes the Python launch path for the plan and the Python ELF walk;
``--python-walk`` only the latter (the check as it was before the walk in launch/_fastlaunch.c, ``elf_walk``).
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tools")]

import runtime_ab  # noqa: E402  (its fake driver and module-cache reset)


def one_round(loads: int, gpu: bool, tmp: str, tag: str) -> dict[str, dict[str, float]]:
    import tmlr_runtime as tr
    from tmlr_runtime.artifact import elf, metadata

    clear = runtime_ab.install(None if gpu else runtime_ab.fake_driver())
    real = metadata.check_cubin

    def unchecked(data: bytes, variant: Any, path: str) -> elf.Cubin:  # the load before the cross-check
        return elf.Cubin(data, path, None, None, (), (0, 0), None)

    out: dict[str, dict[str, float]] = {}
    pc = time.perf_counter
    try:
        for name in ("add4", "nop_args"):
            times: dict[str, list[float]] = {"with": [], "without": []}
            for i in range(2 * loads):
                side = "with" if i % 2 else "without"
                metadata.check_cubin = real if side == "with" else unchecked
                d = shutil.copytree(os.path.join(runtime_ab.ARTIFACTS, name), os.path.join(tmp, f"{tag}-{name}-{i}"))
                clear()
                t0 = pc()
                tr.Kernel.load(d)
                times[side].append((pc() - t0) * 1e6)
            out[name] = {side: statistics.median(v) for side, v in times.items()}
    finally:
        metadata.check_cubin = real
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loads", type=int, default=200)
    ap.add_argument("--gpu", action="store_true", help="the real driver (a GPU machine), not the fake")
    ap.add_argument("--python-walk", action="store_true", help="the Python ELF walk, not the compiled one")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    from tmlr_runtime.artifact import elf

    if a.python_walk:
        elf._walk = None
    if a.gpu:
        import torch  # the CUDA context the loads use is torch's primary one, as in a service

        torch.cuda.init()
        device = torch.cuda.get_device_name()
    else:
        device = "none (driver faked)"
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            rounds.append(one_round(a.loads, a.gpu, tmp, str(r)))
    report: dict[str, Any] = {
        "what": "first Kernel.load with / without the cubin cross-check (check_cubin), alternating in one process",
        "command": "python3 tools/elf_check_cost.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d"), "device": device, "gpu": a.gpu, "cpus": os.cpu_count(),
        "python": platform.python_version(), "TMLR_PURE_PYTHON": os.environ.get("TMLR_PURE_PYTHON"),
        "ELF walk": "python" if elf._walk is None else "compiled",
        "rounds": a.rounds, "loads per side and round": a.loads, "unit": "us", "artifacts": {}}
    for name in rounds[0]:
        row: dict[str, Any] = {}
        for side in ("with", "without"):
            values = [r[name][side] for r in rounds]
            row[side] = {**runtime_ab.spread(values), "samples": values}
        row["with/without"] = runtime_ab.spread([r[name]["with"] / r[name]["without"] for r in rounds])
        row["cost (us)"] = row["with"]["median"] - row["without"]["median"]
        report["artifacts"][name] = row
        print(f"{name:9s} with {row['with']['median']:8.1f} us  without {row['without']['median']:8.1f} us  "
              f"with/without {row['with/without']['median']:.3f} [{row['with/without']['min']:.3f}-"
              f"{row['with/without']['max']:.3f}]  cost {row['cost (us)']:.1f} us  ({device}, {report['ELF walk']} ELF walk)")
    runtime_ab.save(a.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
