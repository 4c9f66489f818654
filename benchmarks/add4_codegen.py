"""How add4's memory accesses were compiled: tmlr's artifact against Triton's JIT specialization.

    python benchmarks/add4_codegen.py [--json OUT.json]

Triton's JIT specializes an int argument that is divisible by 16 (``n = 1024`` in the launch
benchmark) and then vectorizes the masked loads and stores (``ld.global.v4``); the ``add4``
artifact in ``examples/artifacts`` was built with ``n`` as a plain ``i32`` (no ``:16``), so its
cubin loads and stores one float per instruction. This script counts the global loads and stores
by width in the artifact's cubin (SASS, via ``cuobjdump``) and in two compiles of the same source
with the importable Triton (PTX and SASS): ``n`` plain and ``n`` divisible by 16. No GPU needed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import EXAMPLES, error_text, triton_version, write_json  # noqa: E402

ARTIFACT = os.path.join(EXAMPLES, "artifacts", "add4")


def ptx_memory_ops(ptx: str) -> dict[str, int]:
    """Global loads and stores in PTX text by their full opcode, e.g. ``ld.global.v4.b32: 4``."""
    return dict(sorted(Counter(re.findall(r"\b(?:ld|st)\.global[.\w]*", ptx)).items()))


def find_cuobjdump() -> str | None:
    """cuobjdump from PATH, the CUDA toolkit, or the one Triton bundles."""
    found = shutil.which("cuobjdump") or ("/usr/local/cuda/bin/cuobjdump" if os.path.exists("/usr/local/cuda/bin/cuobjdump") else None)
    if found:
        return found
    try:
        import triton

        bundled = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
        return bundled if os.path.exists(bundled) else None
    except Exception:  # noqa: BLE001
        return None


def sass_memory_ops(cubin: str, cuobjdump: str) -> dict[str, int]:
    """Global loads and stores in a cubin's SASS by opcode, e.g. ``LDG.E: 16`` (32-bit) or ``LDG.E.128: 4``."""
    out = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass: {out.stderr.strip()[:300]}")
    return dict(sorted(Counter(re.findall(r"\b(?:LDG|STG)(?:\.[A-Z0-9_]+)*", out.stdout)).items()))


def compile_add4(n_divisible_by_16: bool, capability: int = 90) -> Any:
    """Triton's compile of add4 (pointers :16, BLOCK 1024, 4 warps), with or without ``n`` :16."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sys.path.insert(0, os.path.join(EXAMPLES, "kernels"))
    import launch_latency as lk  # type: ignore[import-not-found]

    attrs = {(i,): [["tt.divisibility", 16]] for i in range(3 + n_divisible_by_16)}
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    src = ASTSource(lk.add4, sig, {(4,): 1024}, attrs)
    return triton.compile(src, target=GPUTarget("cuda", capability, 32), options={"num_warps": 4})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    doc: dict[str, Any] = {"python": platform.python_version(), "triton": triton_version(), "date": time.strftime("%Y-%m-%d"),
                           "artifact": {}, "triton_compile": {}, "errors": {}}
    cuobjdump = find_cuobjdump()
    doc["cuobjdump"] = cuobjdump
    cubin = os.path.join(ARTIFACT, "add4.sm_90a.cubin")
    with open(os.path.join(ARTIFACT, "metadata.json")) as f:
        n_param = [p for p in json.load(f)["signature"] if p["name"] == "n"][0]
    doc["artifact"]["n_parameter"] = n_param
    try:
        if cuobjdump is None:
            raise RuntimeError("no cuobjdump (CUDA toolkit or Triton's bundled one)")
        doc["artifact"]["sass"] = sass_memory_ops(cubin, cuobjdump)
    except Exception as e:  # noqa: BLE001
        doc["errors"]["artifact"] = error_text(e)
    for label, div in (("n_plain_i32", False), ("n_divisible_by_16", True)):
        try:
            k = compile_add4(div)
            row = {"ptx": ptx_memory_ops(k.asm["ptx"])}
            if cuobjdump:
                path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"tmlr-add4-{label}.cubin")
                with open(path, "wb") as f:
                    f.write(k.asm["cubin"])
                row["sass"] = sass_memory_ops(path, cuobjdump)
                os.remove(path)
            doc["triton_compile"][label] = row
        except Exception as e:  # noqa: BLE001
            doc["errors"][label] = error_text(e)
    for where, row in [("artifact add4.sm_90a.cubin", doc["artifact"])] + list(doc["triton_compile"].items()):
        print(f"{where:28s} " + "  ".join(f"{k}: {v}" for k, v in row.items() if k != "n_parameter"))
    for k, e in doc["errors"].items():
        print(f"{k}: ERROR {e}")
    if args.json:
        write_json(args.json, doc)
    return 1 if doc["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
