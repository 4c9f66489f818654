"""``tmlr inspect`` / ``tmlr verify`` of an artifact directory; a family index is handed to ``cli/family.py``."""
from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path
from typing import Any

from .. import driver
from ..abi import PER_DIM_FIELDS, Descriptor, Parameter
from ..artifact.elf import Cubin, functions
from ..artifact.metadata import (METADATA_FILE, SCHEMA_PATH, SCHEMA_VERSIONS, ArtifactMetadata, Variant, check_cubin,
                                 open_cubin, read_cubin, read_ptx)
from ..errors import CudaUnavailableError, NoCompatibleVariantError, PtxJitWarning, TmlrError
from ..launch.kernel import Kernel
from ..launch.modules import check_params
from ..launch.plan import Layout

CheckResult = tuple[str, "bool | None", str]
DEVICE_CHECK = "this device can load and run it"
SCHEMA_CHECK = "metadata.json follows the schema"
NO_GPU = "not checked: no GPU here"
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
    if p.kind == "constexpr":  # its value as metadata.json has it (a Triton object: its text, and what it is)
        doc.update(p.to_json())
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
    try:
        kernel, _ = _load(directory)
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
            fn = functions(open_cubin(directory, v)).get(v.entry)
            regs = fn.registers if fn else None
        except TmlrError:
            pass
    return {
        "arch": v.arch, "capability": v.capability, "entry": v.entry,
        "cubin": {"file": v.cubin_file, "size": v.cubin_size, "sha256": v.cubin_sha256},
        "ptx": None if v.ptx is None else {"file": v.ptx.file, "size": v.ptx.size, "sha256": v.ptx.sha256, "arch": v.ptx.target.arch},
        "num_warps": v.num_warps, "threads_per_block": v.threads_per_block, "num_ctas": v.num_ctas,
        "cluster_dims": list(v.cluster_dims), "shared": v.shared, "tmem_size": v.tmem_size, "cooperative": v.cooperative, "pdl": v.pdl,
        "global_scratch": {"size_per_program": v.scratch_size, "align": v.scratch_align}, "hidden_params": list(v.hidden_params),
        "registers": regs, "spill_stores": v.resources.get("spill_stores"), "spill_loads": v.resources.get("spill_loads"),
        "provenance": v.provenance,
    }


def cubin_problems(directory: str, meta: ArtifactMetadata) -> list[str]:
    """Why each cubin (or PTX) that does not match metadata.json fails: its recorded size and sha256, and a cubin's own
    header, sections and kernel parameters (the cheap part of verify)."""
    problems = []
    for v in meta.variants:
        try:
            match_params(open_cubin(directory, v), meta, v)
            if v.ptx:
                read_ptx(directory, v)
        except TmlrError as e:
            problems.append(str(e))
    return problems


def match_params(cubin: Cubin, meta: ArtifactMetadata, v: Variant) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The parameters of the kernel of ``cubin`` (read by check_cubin: elf.kernel_params), after checking that they are
    those the launch of ``v`` packs (CubinMismatchError)."""
    check_params(Layout.build(meta.runtime_params, v.hidden_params), cubin.params, cubin.where, v.entry)
    return cubin.params


def would_load(meta: ArtifactMetadata, major: int, minor: int) -> dict[str, Any]:
    """What a GPU of compute capability major.minor loads of ``meta`` (``tmlr inspect --cc``), by the runtime's own choice."""
    where = {"cc": f"{major}.{minor}"}
    try:
        v, ptx = meta.pick(major, minor)
    except NoCompatibleVariantError as e:
        return {**where, "loads": None, "text": f"nothing: {e}"}
    if ptx and v.ptx:
        return {**where, "loads": "ptx", "arch": v.ptx.target.arch, "file": v.ptx.file,
                "text": f"PTX {v.ptx.target.arch} ({v.ptx.file}), compiled by the driver at load: no cubin runs on {major}.{minor}"}
    how = "exact" if v.capability == major * 10 + minor else f"compatible: built for {v.target.version}"
    return {**where, "loads": "cubin", "arch": v.arch, "file": v.cubin_file, "text": f"cubin {v.arch} ({v.cubin_file}, {how})"}


def capability_check(meta: ArtifactMetadata, cc: tuple[int, int]) -> CheckResult:
    """``tmlr verify --cc``: whether a GPU of compute capability ``cc`` loads something of ``meta``, and what."""
    on = would_load(meta, *cc)
    return f"a GPU of compute capability {on['cc']} loads it", on["loads"] is not None, on["text"]


def inspect_kernel(directory: str, meta: ArtifactMetadata, with_device: bool = True,
                   cc: tuple[int, int] | None = None) -> dict[str, Any]:
    """Everything a person wants to know about a kernel artifact, as a JSON-able dict; ``problems`` lists
    the cubins that do not match metadata.json; ``cc``: a compute capability to say what it would load."""
    out = {"kind": "kernel", "name": meta.name, "directory": os.path.abspath(directory), "schema_version": meta.schema_version,
           "call": f"{meta.name}[grid]({', '.join(describe_param(p) for p in meta.signature)})",
           "signature": [_param_json(p) for p in meta.signature], "variants": [_describe_variant(directory, v) for v in meta.variants],
           "problems": cubin_problems(directory, meta)}
    if meta.tuples:  # the call passes tuples: show them nested, and what each holds
        from ..launch.tuple_call import usage

        out["call"], out["tuples"] = usage(meta.name, meta.signature), [t.to_json() for t in meta.tuples]
    if cc is not None:
        out["on"] = would_load(meta, *cc)
    if with_device and not out["problems"]:
        out["occupancy"] = _occupancy(directory)
    return out


def print_inspect_kernel(info: dict[str, Any]) -> None:
    print(f"{info['name']}  ({info['directory']}, schema v{info['schema_version']})\n  call      {info['call']}")
    for v in info["variants"]:
        spills = "" if v["spill_stores"] is None else f"  spills {v['spill_stores']}st/{v['spill_loads']}ld"
        extra = (" cooperative" if v["cooperative"] else "") + (" pdl" if v["pdl"] else "")
        p = v["provenance"]
        print(f"  {v['arch']:8s}  warps {v['num_warps']} ({v['threads_per_block']} threads)  ctas {v['num_ctas']}  cluster "
              f"{'x'.join(map(str, v['cluster_dims']))}  shared {v['shared']} B  scratch "
              f"{v['global_scratch']['size_per_program']} B/program  regs {'?' if v['registers'] is None else v['registers']}{spills}{extra}\n"
              f"            cubin {v['cubin']['file']}  {v['cubin']['size']} B  sha256 {v['cubin']['sha256']}\n"
              + ("" if v["ptx"] is None else f"            ptx   {v['ptx']['file']}  {v['ptx']['size']} B  sha256 {v['ptx']['sha256']}"
                 f"  ({v['ptx']['arch']}: the driver compiles it at load on a newer GPU)\n") +
              f"            built by Triton {p.get('triton_version')} / ptxas {p.get('ptxas_version')} from "
              f"{p.get('source_stage')} {p.get('source_name', '')} (sha256 {p.get('source_sha256', '')[:16]}…)")
    if "on" in info:
        print(f"  on {info['on']['cc']:6s} {info['on']['text']}")
    occ = info.get("occupancy")
    if occ:
        print(f"  occupancy on {occ['device']} ({occ['arch']}): {occ['blocks_per_sm']} blocks/SM = {occ['warps_per_sm']} "
              f"warps/SM, {occ['registers']} registers/thread, {occ['local_bytes']} B local")
    elif "occupancy" in info:
        print("  occupancy: no GPU here")


def verify_kernel(directory: str, with_device: bool = True, meta: ArtifactMetadata | None = None,
                  cc: tuple[int, int] | None = None) -> list[CheckResult]:
    """``(check, passed, detail)`` for every check of a kernel artifact (``meta``: its metadata, read already),
    ``passed`` None for one that could not be made here (no GPU, no jsonschema); never raises for a bad
    artifact. ``with_device=False`` leaves the device check out; ``cc``: a compute capability that something
    must load on (:func:`capability_check`)."""
    try:
        meta = meta or ArtifactMetadata.read(directory)
    except TmlrError as e:
        return [(SCHEMA_CHECK, False, str(e))]
    results = [(SCHEMA_CHECK, True, f"v{meta.schema_version} (this reader: {', '.join(f'v{n}' for n in SCHEMA_VERSIONS)}), fields checked by the reader"), jsonschema_check(os.path.join(directory, METADATA_FILE), SCHEMA_PATH, "metadata.json validates with jsonschema")]
    for v in meta.variants:
        results += _cubin_checks(directory, meta, v)
        if v.ptx is not None:
            results += _ptx_checks(directory, v)
    if cc is not None:
        results.append(capability_check(meta, cc))
    if with_device:
        try:
            kernel, jit = _load(directory)
            how = "" if jit is None else f" from its PTX, which the driver compiled in {jit.seconds * 1e3:.0f} ms"
            results.append((DEVICE_CHECK, True, f"{kernel.function.device.name}: {kernel.variant.arch}{how}"))
        except CudaUnavailableError as e:
            results.append((DEVICE_CHECK, None, no_gpu(e)))
        except TmlrError as e:
            results.append((DEVICE_CHECK, False, str(e)))
    return results


def _cubin_checks(directory: str, meta: ArtifactMetadata, v: Variant) -> list[CheckResult]:
    """The cubin of ``v``: its size and sha256 as recorded, a whole cubin for ``v``'s target, the entry it defines, and
    that entry's parameters as the signature makes them; each check after the first that fails is left out."""
    checks = [f"{v.arch}: cubin size and sha256", f"{v.arch}: cubin is a whole ELF file built for {v.arch}",
              f"{v.arch}: entry symbol {v.entry!r} in the cubin", f"{v.arch}: kernel parameters match the signature"]
    results: list[CheckResult] = []
    try:
        data = read_cubin(directory, v)
        results.append((checks[0], True, v.cubin_file))
        cubin = check_cubin(data, v, os.path.join(directory, v.cubin_file))
        results.append((checks[1], True, "its ELF header names " + (cubin.arch or "no SM this reader knows")))
        funcs = functions(cubin)
        if v.entry not in funcs:
            defined = sorted(funcs) or "no functions"
            return results + [(checks[2], False, f"the cubin defines {defined}; rebuild the artifact")]
        results.append((checks[2], True, ""))
        params = match_params(cubin, meta, v)
        results.append((checks[3], True, "not recorded in the cubin" if params is None else f"{len(params[0])} parameters"))
    except TmlrError as e:
        results.append((checks[len(results)], False, str(e)))
    return results


def no_gpu(e: CudaUnavailableError) -> str:
    """The detail of a device check skipped for want of a GPU: :data:`NO_GPU`, then why (``tmlr verify`` prints
    the why once, in its summary)."""
    return f"{NO_GPU}, so loading on a device was not checked ({e})"


def _ptx_checks(directory: str, v: Variant) -> list[CheckResult]:
    """The PTX of ``v``: its size and sha256 as recorded, and the entry it defines."""
    assert v.ptx is not None
    check = f"{v.arch}: ptx {v.ptx.target.arch} size and sha256"
    try:
        text = read_ptx(directory, v)
    except TmlrError as e:
        return [(check, False, str(e))]
    entries = re.findall(rb"\.entry\s+([A-Za-z_][A-Za-z0-9_]*)", text)
    found = v.entry.encode() in entries
    return [(check, True, v.ptx.file), (f"{v.arch}: entry {v.entry!r} in the PTX", found,
                                          "" if found else f"the PTX defines {sorted(e.decode() for e in entries) or 'no entries'}; rebuild the artifact")]


def _load(directory: str) -> tuple[Kernel, PtxJitWarning | None]:
    """The kernel loaded here, and the PtxJitWarning of its load from PTX (kept from stderr: the caller reports it)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PtxJitWarning)
        kernel = Kernel.load(directory)
    jit = [w.message for w in caught if isinstance(w.message, PtxJitWarning)]
    for w in caught:
        if not isinstance(w.message, PtxJitWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return kernel, jit[0] if jit else None


def jsonschema_check(path: str, schema_path: Path, what: str) -> CheckResult:
    """The schema file itself applied to the document at ``path`` by ``jsonschema``, where it is installed."""
    try:
        import jsonschema
    except ImportError:
        return what, None, "jsonschema not installed: schema check skipped, fields checked by the reader"
    with open(path, "rb") as f:
        doc = json.load(f)
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    return (what, True, f"schema/{schema_path.name}") if error is None else (what, False, f"{error.json_path}: {error.message}")


