"""Build tests/gpu/artifacts/add_family: a family of examples/kernels/vector_add.py's ``add`` for sm_90a.

    PYTHONPATH=. python tests/gpu/make_add_family.py [OUT]

18 variants: 2 autotune configs (BLOCK 1024 at 4 warps, BLOCK 2048 at 8 warps; key ["n"], dtypes in
the key, ``restore_value=["out_ptr"]`` so an in-place call survives tuning) x {fp32, fp16, bf16} x
{aligned pointers with n divisible by 16, aligned with plain n, unaligned with plain n}. Each is an
ordinary single build by tmlr-build (CPU, no GPU), moved under ``v/<vid>/`` with the family index
written beside them, as the family layout of docs/variants.md says.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = [{"kwargs": {"BLOCK": 1024}, "num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None},
           {"kwargs": {"BLOCK": 2048}, "num_warps": 8, "num_stages": 3, "num_ctas": 1, "maxnreg": None}]
PATTERNS = [("16", "16"), ("16", ""), ("", "")]  # (pointer divisibility, n divisibility)


def signature(dtype: str, ptr: str, n: str, block: int) -> str:
    p = f"*{dtype}:16" if ptr else f"*{dtype}"
    return f"{p}, {p}, {p}, {'i32:16' if n else 'i32'}, {block}"


def cubin_digests(directory: str) -> dict[str, str]:
    """arch -> cubin sha256 of a sub-artifact, as the family index records them (docs/variants.md)."""
    with open(os.path.join(directory, "metadata.json")) as f:
        return {v["target"]["arch"]: v["cubin"]["sha256"] for v in json.load(f)["variants"]}


def main(out: str) -> None:
    kernels = []
    for c, config in enumerate(CONFIGS):
        for dtype in ("fp32", "fp16", "bf16"):
            for ptr, n in PATTERNS:
                sig = signature(dtype, ptr, n, config["kwargs"]["BLOCK"])
                vid = f"c{c}-{hashlib.sha256(sig.encode()).hexdigest()[:12]}"
                kernels.append({"source": os.path.join(ROOT, "examples", "kernels", "vector_add.py"), "kernel": "add",
                                "name": vid.replace("-", "_"), "signature": sig, "options": {"num_warps": config["num_warps"]},
                                "vid": vid, "config": c})
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"arch": [90], "kernels": [{k: v for k, v in e.items() if k not in ("vid", "config")} for e in kernels]}, f)
        subprocess.run([sys.executable, "-m", "tmlr_build", "--spec", spec, "-o", os.path.join(tmp, "built"), "-j", "2", "-q"],
                       check=True, cwd=ROOT)
        shutil.rmtree(os.path.join(out, "v"), ignore_errors=True)  # only what this script writes: other files stay
        for e in kernels:
            shutil.move(os.path.join(tmp, "built", e["name"]), os.path.join(out, "v", e["vid"]))
    params = [{"name": n, "kind": "runtime"} for n in ("x_ptr", "y_ptr", "out_ptr", "n")] + [{"name": "BLOCK", "kind": "constexpr"}]
    index = {"schema_version": 3, "kind": "family", "name": "add", "params": params,
             "autotune": {"key": ["n"], "configs": CONFIGS, "reset_to_zero": [], "restore_value": ["out_ptr"],
                          "has_pre_hook": False, "dtype_in_key": True},
             "heuristics": [], "variants": [{"dir": f"v/{e['vid']}", "config": e["config"], "signature": e["signature"],
                                             "cubin_sha256": cubin_digests(os.path.join(out, "v", e["vid"]))} for e in kernels]}
    with open(os.path.join(out, "metadata.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "gpu", "artifacts", "add_family"))
