"""``tmlr``: look at and check artifacts where they are deployed (no Triton needed).

    tmlr inspect DIR [--json] [--no-device]   the call signature, variants, launch data, resources, provenance
    tmlr verify DIR [--json] [--no-device]    fields (and the schema file itself, with jsonschema installed), hashes,
                                              entry symbols, and with a GPU that this device can load it; exit 1 on a failure
    tmlr tune DIR --cases FILE.py:func        a family: benchmark its autotune configs here, write DIR/tuning.json

A family directory (index of schema v3) is inspected and verified by ``_family_cli``.

Errors become messages and exit codes in one place. A reader that closes the pipe early
(``tmlr inspect DIR | head``) ends it with status 141, as SIGPIPE ends other commands, and no traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any
from .. import __version__
from .. import driver
from ..launch import compiled
from . import family as family_cli
from ..artifact.elf import functions
from ..artifact.family_index import is_family
from ..errors import CudaUnavailableError, TmlrError
from ..artifact.metadata import METADATA_FILE, SCHEMA_PATH, SCHEMA_VERSION, ArtifactMetadata, Variant, read_cubin
from ..abi import PER_DIM_FIELDS, Descriptor, Parameter

DEVICE_CHECK = "this device can load and run it"
SCHEMA_CHECK = "metadata.json follows the schema"
_VERDICT = {True: "ok", False: "FAIL", None: "skipped"}
_SWIZZLE = {0: "no swizzle", 1: "swizzle 32B", 2: "swizzle 64B", 3: "swizzle 128B"}


def describe_param(p: Parameter) -> str:
    if p.kind == "constexpr":
        return f"{p.name}={p.value!r} (constexpr)"
    if p.kind == "equal_to_1":
        return f"{p.name}: {p.type} (specialized: must be 1)"
    if p.descriptor is not None:
        return f"{p.name}: {describe_descriptor(p.descriptor)}"
    note = "" if p.divisibility != 16 else " (16-byte aligned)" if p.is_pointer else " (divisible by 16)"
    return f"{p.name}: {p.type}{note}"


def _param_json(p: Parameter) -> dict[str, Any]:
    doc = {k: v for k, v in vars(p).items() if k != "descriptor"}
    return doc if p.descriptor is None else {**doc, "descriptor": p.descriptor.to_json()}


def describe_descriptor(d: Descriptor) -> str:
    """``tensordesc<fp16[64, 128]> -> tensormap (box [64, 64], swizzle 128B), shape:i32 x2, strides:i64 x2``."""
    parts = []
    for f in d.fields:
        if f == "tensormap" and d.tensormap is not None:
            m = d.tensormap
            parts.append(f"tensormap (box {list(m.block_size)}, {_SWIZZLE[m.swizzle]}, data type {m.elem_type}"
                         f"{', fp4 padded' if m.fp4_padded else ''})")
        else:
            parts.append(f"{f} x{d.ndim}" if f in PER_DIM_FIELDS else f)
    return f"tensordesc<{d.dtype}{list(d.block_shape)}> -> {', '.join(parts)}"


def _occupancy(directory: str) -> dict[str, Any] | None:
    """Blocks per SM for the variant this device would run; None without a usable GPU."""
    from ..launch.kernel import Kernel

    try:
        kernel = Kernel.load(directory)
        fn, v = kernel.function, kernel.variant
        blocks = int(driver.check(driver.api().cuOccupancyMaxActiveBlocksPerMultiprocessor(fn.function, v.threads_per_block, v.shared),
                                   "cuOccupancyMaxActiveBlocksPerMultiprocessor"))
    except CudaUnavailableError:
        return None
    return {"device": fn.device.name, "arch": v.arch, "blocks_per_sm": blocks, "warps_per_sm": blocks * v.num_warps,
            "registers": fn.registers, "local_bytes": fn.local_bytes}


def _describe_variant(directory: str, v: Variant) -> dict[str, Any]:
    regs = v.resources.get("registers")
    if regs is None:  # not in the metadata: the cubin's own
        try:
            fn = functions(read_cubin(directory, v)).get(v.entry)
            regs = fn.registers if fn else None
        except TmlrError:
            pass
    return {
        "arch": v.arch, "capability": v.capability, "entry": v.entry,
        "cubin": {"file": v.cubin_file, "size": v.cubin_size, "sha256": v.cubin_sha256},
        "num_warps": v.num_warps, "threads_per_block": v.threads_per_block, "num_ctas": v.num_ctas,
        "cluster_dims": list(v.cluster_dims), "shared": v.shared, "tmem_size": v.tmem_size, "cooperative": v.cooperative, "pdl": v.pdl,
        "global_scratch": {"size_per_program": v.scratch_size, "align": v.scratch_align}, "hidden_params": list(v.hidden_params),
        "registers": regs, "spill_stores": v.resources.get("spill_stores"), "spill_loads": v.resources.get("spill_loads"),
        "provenance": v.provenance,
    }


def inspect_artifact(directory: str, with_device: bool = True) -> dict[str, Any]:
    """Everything a person wants to know about an artifact, as a JSON-able dict."""
    if is_family(directory):
        return family_cli.inspect_family(directory)
    meta = ArtifactMetadata.read(directory)
    out = {"name": meta.name, "directory": os.path.abspath(directory), "schema_version": meta.schema_version,
           "call": f"{meta.name}[grid]({', '.join(describe_param(p) for p in meta.signature)})",
           "signature": [_param_json(p) for p in meta.signature], "variants": [_describe_variant(directory, v) for v in meta.variants]}
    if with_device:
        out["occupancy"] = _occupancy(directory)
    return out


def _print_inspect(info: dict[str, Any]) -> None:
    if info.get("schema_version") == 3:
        return family_cli.print_inspect_family(info)
    print(f"{info['name']}  ({info['directory']}, schema v{info['schema_version']})\n  call      {info['call']}")
    for v in info["variants"]:
        spills = "" if v["spill_stores"] is None else f"  spills {v['spill_stores']}st/{v['spill_loads']}ld"
        extra = (" cooperative" if v["cooperative"] else "") + (" pdl" if v["pdl"] else "")
        p = v["provenance"]
        print(f"  {v['arch']:8s}  warps {v['num_warps']} ({v['threads_per_block']} threads)  ctas {v['num_ctas']}  cluster "
              f"{'x'.join(map(str, v['cluster_dims']))}  shared {v['shared']} B  scratch "
              f"{v['global_scratch']['size_per_program']} B/program  regs {'?' if v['registers'] is None else v['registers']}{spills}{extra}\n"
              f"            cubin {v['cubin']['file']}  {v['cubin']['size']} B  sha256 {v['cubin']['sha256']}\n"
              f"            built by Triton {p.get('triton_version')} / ptxas {p.get('ptxas_version')} from "
              f"{p.get('source_stage')} {p.get('source_name', '')} (sha256 {p.get('source_sha256', '')[:16]}…)")
    occ = info.get("occupancy")
    if occ:
        print(f"  occupancy on {occ['device']} ({occ['arch']}): {occ['blocks_per_sm']} blocks/SM = {occ['warps_per_sm']} "
              f"warps/SM, {occ['registers']} registers/thread, {occ['local_bytes']} B local")
    elif "occupancy" in info:
        print("  occupancy: no GPU here")


def verify_artifact(directory: str, with_device: bool = True) -> list[tuple[str, bool | None, str]]:
    """``(check, passed, detail)`` for every check, ``passed`` None for one that could not be made
    here (no GPU, no jsonschema); never raises for a bad artifact. ``with_device=False`` leaves the device check out."""
    if is_family(directory):
        return family_cli.verify_family(directory, with_device)
    try:
        meta = ArtifactMetadata.read(directory)
    except TmlrError as e:
        return [(SCHEMA_CHECK, False, str(e))]
    results = [(SCHEMA_CHECK, True, f"v{meta.schema_version} (this reader: v1-v{SCHEMA_VERSION}), fields checked by the reader"), _jsonschema_check(directory)]
    for v in meta.variants:
        try:
            data = read_cubin(directory, v)
            results.append((f"{v.arch}: cubin size and sha256", True, v.cubin_file))
            funcs = functions(data, v.cubin_file)
            results.append((f"{v.arch}: entry symbol {v.entry!r} in the cubin", v.entry in funcs,
                            "" if v.entry in funcs else f"the cubin defines {sorted(funcs) or 'no functions'}; rebuild the artifact"))
        except TmlrError as e:
            results.append((f"{v.arch}: cubin size and sha256", False, str(e)))
    if with_device:
        from ..launch.kernel import Kernel

        try:
            kernel = Kernel.load(directory)
            results.append((DEVICE_CHECK, True, f"{kernel.function.device.name}: {kernel.variant.arch}"))
        except CudaUnavailableError as e:
            results.append((DEVICE_CHECK, None, f"not checked: loading the cubin on a device needs an NVIDIA GPU and driver ({e})"))
        except TmlrError as e:
            results.append((DEVICE_CHECK, False, str(e)))
    return results


def _jsonschema_check(directory: str) -> tuple[str, bool | None, str]:
    """The schema file itself, applied by ``jsonschema`` where it is installed."""
    check = "metadata.json validates with jsonschema"
    try:
        import jsonschema
    except ImportError:
        return check, None, "jsonschema not installed: schema check skipped, fields checked by the reader"
    with open(os.path.join(directory, METADATA_FILE), "rb") as f:
        doc = json.load(f)
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    return (check, True, f"schema/{SCHEMA_PATH.name}") if error is None else (check, False, f"{error.json_path}: {error.message}")


class _Version(argparse.Action):
    """``--version``: two lines, as written (argparse's own action rewraps them into one)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"tmlr {__version__}\n{compiled.describe()}")
        parser.exit()


def _run(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="tmlr", description="Inspect and verify tmlr artifacts.")
    parser.add_argument("--version", action=_Version, help="show the version and which launch path is active, and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("inspect", "show an artifact"), ("verify", "check an artifact without launching it (exit 1 on failure)")):
        p = sub.add_parser(name, help=text)
        p.add_argument("directory")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--no-device", action="store_true", help="do not touch the GPU even if there is one")
    family_cli.add_tune_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "tune":
            return family_cli.run_tune(args)
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
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
