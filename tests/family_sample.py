"""Family directories for the CPU tests, composed from the example ``add`` artifact (no build needed).

Each variant is the sm_90a ``add`` artifact of examples/artifacts/add with its signature rewritten
(pointee dtype, alignment, ``n``'s pattern, ``BLOCK``) and ``num_warps`` set: under the fake driver
the cubin only has to hold the entry symbol (its parameter records are renamed away: fake_driver.any_signature). fp32 variants keep the ``add`` cubin, which the fake
driver runs on host memory (``out = x + y``); other dtypes get the ``nop`` cubin, whose launches are
only recorded.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from fake_driver import any_signature
from tmlr_runtime.abi import format_signature
from tmlr_runtime.artifact.metadata import read_parameter
from tmlr_runtime.tuples import TupleParam, call_params

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADD = os.path.join(ROOT, "examples", "artifacts", "add")
NOP = os.path.join(ROOT, "examples", "artifacts", "nop")
PARAMS = [{"name": "x_ptr", "kind": "runtime"}, {"name": "y_ptr", "kind": "runtime"}, {"name": "out_ptr", "kind": "runtime"},
          {"name": "n", "kind": "runtime"}, {"name": "BLOCK", "kind": "constexpr"}]


def signature(dtype: str = "fp32", aligned: bool = True, n: str = "", block: Any = 1024) -> list[dict[str, Any]]:
    """The add kernel's signature: ``n`` is "" (plain i32), "16" (divisible by 16) or "1" (equal to 1)."""
    ptr = [{"name": p, "kind": "runtime", "type": f"*{dtype}", "divisibility": 16 if aligned else 1} for p in ("x_ptr", "y_ptr", "out_ptr")]
    n_param = ({"name": "n", "kind": "equal_to_1", "type": "i32"} if n == "1" else
               {"name": "n", "kind": "runtime", "type": "i32", "divisibility": 16 if n == "16" else 1})
    return ptr + [n_param, {"name": "BLOCK", "kind": "constexpr", "value": block}]


def write_variant(family: str, config: int | None, sig: list[dict[str, Any]], num_warps: int = 4) -> dict[str, Any]:
    """Write one ``v/<vid>/`` sub-artifact; returns its index entry."""
    text = format_signature(read_parameter(p) for p in sig)
    vid = f"c{config if config is not None else 0}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    out = os.path.join(family, "v", vid)
    os.makedirs(out)
    source = ADD if sig[0]["type"] == "*fp32" else NOP
    with open(os.path.join(source, "metadata.json")) as f:
        doc = json.load(f)
    variant = next(v for v in doc["variants"] if v["target"]["arch"] == "sm_90a")
    variant["launch"]["num_warps"] = num_warps
    doc.update(schema_version=1, name="add", signature=sig, variants=[variant])
    tuples = [p.to_json() for p in call_params(p["name"] for p in sig) if isinstance(p, TupleParam)]
    if tuples:  # a kernel with tuple parameters: its elements named by path (schema v5)
        doc.update(schema_version=5, tuples=tuples)
    with open(os.path.join(source, variant["cubin"]["file"]), "rb") as f:
        cubin = any_signature(f.read(), variant["entry"])  # the signature is rewritten
    variant["cubin"].update(sha256=hashlib.sha256(cubin).hexdigest(), size=len(cubin))
    with open(os.path.join(out, variant["cubin"]["file"]), "wb") as f:
        f.write(cubin)
    with open(os.path.join(out, "metadata.json"), "w") as f:
        json.dump(doc, f, indent=1)
    return {"dir": f"v/{vid}", "config": config, "signature": text}


def autotune(key: list[str], configs: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    doc = {"key": key, "configs": [{"kwargs": c.get("kwargs", {}), "num_warps": c.get("num_warps", 4), "num_stages": 3,
                                    "num_ctas": 1, "maxnreg": None} for c in configs],
           "reset_to_zero": [], "restore_value": [], "has_pre_hook": False, "dtype_in_key": True}
    doc.update(extra)
    return doc


def make_family(directory: str, variants: list[tuple[int | None, list[dict[str, Any]]]], autotune_doc: dict[str, Any] | None = None,
                heuristics: list[dict[str, Any]] | None = None, name: str = "add", params: list[dict[str, Any]] = PARAMS,
                num_warps: list[int] | None = None) -> str:
    """A family of ``(config, signature)`` variants; each config's num_warps is taken from ``autotune_doc`` (else from
    ``num_warps``, one per variant, else 4); ``params``: the kernel's own parameters (a tuple one stands for its elements,
    named ``ptrs[0]``... in the signatures)."""
    os.makedirs(directory, exist_ok=True)
    entries = []
    for i, (config, sig) in enumerate(variants):
        warps = autotune_doc["configs"][config]["num_warps"] if autotune_doc and config is not None else num_warps[i] if num_warps else 4
        entries.append(write_variant(directory, config, sig, warps))
    tupled = any("tuples" in json.load(open(os.path.join(directory, e["dir"], "metadata.json"))) for e in entries)
    index = {"schema_version": 6 if tupled else 3, "kind": "family", "name": name, "params": params, "autotune": autotune_doc,
             "heuristics": heuristics or [], "variants": entries}
    with open(os.path.join(directory, "metadata.json"), "w") as f:
        json.dump(index, f, indent=1)
    return directory


def dtype_family(directory: str) -> str:
    """8 variants: {fp32, fp16} x n {plain, divisible by 16} x 2 configs (BLOCK 1024 at 4 and 8 warps),
    autotuned on n, aligned pointers: the family whose dispatch cost benchmarks/launch.py measures."""
    at = autotune(["n"], [{"kwargs": {"BLOCK": 1024}, "num_warps": 4}, {"kwargs": {"BLOCK": 1024}, "num_warps": 8}])
    variants = [(c, signature(t, True, n, 1024)) for c in (0, 1) for t in ("fp32", "fp16") for n in ("", "16")]
    return make_family(directory, variants, at)
