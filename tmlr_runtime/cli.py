"""``tmlr``: look at and check artifacts where they are deployed (no Triton needed).

    tmlr inspect DIR [--json]     the call signature, variants, launch data, resources, provenance
    tmlr verify DIR [--json] [--no-device]
                                  schema, hashes, entry symbol in each cubin, and (with a GPU)
                                  that this device can load and run it; exit 1 on any failure.
                                  Without a GPU the device check says "skipped" (not checked)
    tmlr --version

A thin ``main(argv) -> int`` over library functions; errors become messages and exit codes in one
place. A reader that closes the pipe early (``tmlr inspect DIR | head``) ends it with status 141,
as SIGPIPE ends other commands, and no traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from . import __version__, _driver
from ._elf import functions
from ._errors import CudaUnavailableError, TmlrError
from ._metadata import ArtifactMetadata, Parameter, Variant, read_cubin
from ._schema import SCHEMA_VERSION


def describe_param(p: Parameter) -> str:
    if p.kind == "constexpr":
        return f"{p.name}={p.value!r} (constexpr)"
    if p.kind == "equal_to_1":
        return f"{p.name}: {p.type} (specialized: must be 1)"
    note = ""
    if p.divisibility == 16:
        note = " (16-byte aligned)" if p.is_pointer else " (divisible by 16)"
    return f"{p.name}: {p.type}{note}"


def _occupancy(directory: str, meta: ArtifactMetadata) -> dict[str, Any] | None:
    """Blocks per SM for the variant this device would run; None without a usable GPU."""
    try:
        from ._kernel import Kernel

        kernel = Kernel.load(directory)
        fn = kernel.function
        v = kernel.variant
        drv = _driver.api()
        blocks = int(_driver.check(
            drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn.function, v.threads_per_block, v.shared),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        ))
        return {"device": fn.device.name, "arch": v.arch, "blocks_per_sm": blocks,
                "warps_per_sm": blocks * v.num_warps, "registers": fn.registers, "local_bytes": fn.local_bytes}
    except CudaUnavailableError:
        return None


def inspect_artifact(directory: str, with_device: bool = True) -> dict[str, Any]:
    """Everything a person wants to know about an artifact, as a JSON-able dict."""
    meta = ArtifactMetadata.read(directory)
    out: dict[str, Any] = {
        "name": meta.name,
        "directory": os.path.abspath(directory),
        "schema_version": SCHEMA_VERSION,
        "call": f"{meta.name}[grid]({', '.join(describe_param(p) for p in meta.signature)})",
        "signature": [
            {"name": p.name, "kind": p.kind, "type": p.type, "divisibility": p.divisibility, "value": p.value}
            for p in meta.signature
        ],
        "variants": [],
    }
    for v in meta.variants:
        regs = v.resources.get("registers")
        if regs is None:
            try:
                regs = functions(read_cubin(directory, v)).get(v.entry, None)
                regs = regs.registers if regs else None
            except TmlrError:
                regs = None
        out["variants"].append({
            "arch": v.arch, "capability": v.capability, "entry": v.entry,
            "cubin": {"file": v.cubin_file, "size": v.cubin_size, "sha256": v.cubin_sha256},
            "num_warps": v.num_warps, "threads_per_block": v.threads_per_block, "num_ctas": v.num_ctas,
            "cluster_dims": list(v.cluster_dims), "shared": v.shared, "tmem_size": v.tmem_size,
            "cooperative": v.cooperative, "pdl": v.pdl,
            "global_scratch": {"size_per_program": v.scratch_size, "align": v.scratch_align},
            "hidden_params": list(v.hidden_params),
            "registers": regs, "spill_stores": v.resources.get("spill_stores"), "spill_loads": v.resources.get("spill_loads"),
            "provenance": v.provenance,
        })
    if with_device:
        out["occupancy"] = _occupancy(directory, meta)
    return out


def _print_inspect(info: dict[str, Any]) -> None:
    print(f"{info['name']}  ({info['directory']}, schema v{info['schema_version']})")
    print(f"  call      {info['call']}")
    for v in info["variants"]:
        cl = "x".join(map(str, v["cluster_dims"]))
        regs = "?" if v["registers"] is None else v["registers"]
        spills = "" if v["spill_stores"] is None else f"  spills {v['spill_stores']}st/{v['spill_loads']}ld"
        extra = " cooperative" if v["cooperative"] else ""
        extra += " pdl" if v["pdl"] else ""
        print(f"  {v['arch']:8s}  warps {v['num_warps']} ({v['threads_per_block']} threads)  ctas {v['num_ctas']}  cluster {cl}"
              f"  shared {v['shared']} B  scratch {v['global_scratch']['size_per_program']} B/program"
              f"  regs {regs}{spills}{extra}")
        print(f"            cubin {v['cubin']['file']}  {v['cubin']['size']} B  sha256 {v['cubin']['sha256']}")
        p = v["provenance"]
        print(f"            built by Triton {p.get('triton_version')} / ptxas {p.get('ptxas_version')} from "
              f"{p.get('source_stage')} {p.get('source_name', '')} (sha256 {p.get('source_sha256', '')[:16]}…)")
    occ = info.get("occupancy")
    if occ:
        print(f"  occupancy on {occ['device']} ({occ['arch']}): {occ['blocks_per_sm']} blocks/SM = {occ['warps_per_sm']} warps/SM,"
              f" {occ['registers']} registers/thread, {occ['local_bytes']} B local")
    elif "occupancy" in info:
        print("  occupancy: no GPU here")


DEVICE_CHECK = "this device can load and run it"


def verify_artifact(directory: str, with_device: bool = True) -> list[tuple[str, bool | None, str]]:
    """``(check, passed, detail)`` for every check, ``passed`` None for one that could not be made
    here (no GPU); never raises for a bad artifact. ``with_device=False`` leaves the device check out."""
    results: list[tuple[str, bool | None, str]] = []
    try:
        meta = ArtifactMetadata.read(directory)
        results.append(("metadata.json follows the schema", True, f"v{SCHEMA_VERSION}"))
    except TmlrError as e:
        return [("metadata.json follows the schema", False, str(e))]
    for v in meta.variants:
        try:
            data = read_cubin(directory, v)
            results.append((f"{v.arch}: cubin size and sha256", True, v.cubin_file))
            funcs = functions(data, v.cubin_file)
            ok = v.entry in funcs
            results.append((f"{v.arch}: entry symbol {v.entry!r} in the cubin", ok,
                            "" if ok else f"the cubin defines {sorted(funcs) or 'no functions'}; rebuild the artifact"))
        except TmlrError as e:
            results.append((f"{v.arch}: cubin size and sha256", False, str(e)))
    if with_device:
        try:
            from ._kernel import Kernel

            kernel = Kernel.load(directory)
            fn = kernel.function
            results.append((DEVICE_CHECK, True, f"{fn.device.name}: {kernel.variant.arch}"))
        except CudaUnavailableError as e:
            results.append((DEVICE_CHECK, None, f"not checked: loading the cubin on a device needs an NVIDIA GPU and driver ({e})"))
        except TmlrError as e:
            results.append((DEVICE_CHECK, False, str(e)))
    return results


_VERDICT = {True: "ok", False: "FAIL", None: "skipped"}


def _run(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="tmlr", description="Inspect and verify tmlr artifacts.")
    parser.add_argument("--version", action="version", version=f"tmlr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_inspect = sub.add_parser("inspect", help="show an artifact")
    p_verify = sub.add_parser("verify", help="check an artifact without launching it (exit 1 on failure)")
    for p in (p_inspect, p_verify):
        p.add_argument("directory")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--no-device", action="store_true", help="do not touch the GPU even if there is one")
    args = parser.parse_args(argv)
    try:
        if args.command == "inspect":
            info = inspect_artifact(args.directory, with_device=not args.no_device)
            if args.json:
                print(json.dumps(info, indent=1))
            else:
                _print_inspect(info)
            return 0
        results = verify_artifact(args.directory, with_device=not args.no_device)
        if args.no_device:
            results.append((DEVICE_CHECK, None, "not checked: loading the cubin on a device (--no-device)"))
        if args.json:
            print(json.dumps([{"check": c, "ok": ok, "verdict": _VERDICT[ok], "detail": d} for c, ok, d in results], indent=1))
        else:
            for check, ok, detail in results:
                print(f"{_VERDICT[ok]:7s}  {check}{'  - ' + detail if detail else ''}")
        return 1 if any(ok is False for _, ok, _ in results) else 0
    except TmlrError as e:
        print(f"tmlr {args.command}: error: {e}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """The ``tmlr`` command; returns the exit status."""
    try:
        status = _run(argv)
        sys.stdout.flush()  # a closed pipe must show here, not at interpreter exit
        return status
    except BrokenPipeError:
        # The reader stopped (``tmlr inspect DIR | head``): no traceback. Later writes, the
        # interpreter's own flush at exit included, go to /dev/null; the status is a shell's for a
        # command ended by SIGPIPE (128 + 13), as `cat` would give.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
