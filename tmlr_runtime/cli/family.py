"""``tmlr inspect`` / ``tmlr verify`` of a family directory, and ``tmlr tune DIR --cases FILE.py:func``: ``func()``
gives ``(grid, args, kwargs)`` calls, each key's configs are benchmarked and the choices merged into the table."""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any, Iterable

from ..artifact.family_index import FAMILY_SCHEMA_PATH, FamilyIndex, FamilyVariant
from ..artifact.metadata import ArtifactMetadata
from ..artifact.output_folder import artifacts_in, output_folder_error, tunable_in
from ..artifact.read import read, read_index
from ..artifact.tuning_table import TABLE_FILE, TUNING_SCHEMA_PATH, entry, read_entries
from ..errors import ArgumentError, CudaUnavailableError, SchemaError, TmlrError
from ..family.dispatch import KernelFamily
from ..family.members import read_members
from ..family.tuning import cache_path, check_writable, keep_damaged_aside, write_entries
from ..launch.kernel import Kernel
from ..tuples import format_nested
from .artifact import CheckResult, cubin_problems, jsonschema_check, no_gpu, verify_kernel, would_load


def inspect_family(index: FamilyIndex, cc: tuple[int, int] | None = None) -> dict[str, Any]:
    """Variants, configs, heuristics and the shipped table of a family, as a JSON-able dict; ``cc``: a compute
    capability to say what a GPU of it loads of each variant."""
    at = index.autotune
    configs = at.configs if at else ()
    table = read_entries(os.path.join(index.directory, TABLE_FILE), len(configs)) if at else []
    variants, problems = [], []
    for v in index.variants:
        info, damaged = _variant(index, v, cc)
        variants.append(info)
        problems += damaged
    out = {
        "kind": "family", "name": index.name, "directory": index.directory, "schema_version": index.schema_version, "index_sha256": index.sha256,
        "call": f"{index.name}[grid]({', '.join(n if k == 'runtime' else n + '=...' for n, k in index.params)})",
        "autotune": None if at is None else {
            "key": list(at.key), "configs": [c.describe() for c in at.configs], "reset_to_zero": list(at.reset_to_zero),
            "restore_value": list(at.restore_value), "has_pre_hook": at.has_pre_hook, "dtype_in_key": at.dtype_in_key},
        "heuristics": [{"name": h.name, "expr": h.expr, "after_config": h.after_config} for h in index.heuristics],
        "variants": variants, "failed": [{"vid": f.vid, "config": f.config, "signature": f.signature, "error": f.error} for f in index.failed],
        "table": table, "cache_file": cache_path(index.sha256) if at else None, "problems": problems,
    }
    if cc is not None:  # a GPU of it can take every call only when every variant loads there
        out["on"] = {"cc": "%d.%d" % cc, "variants": len(variants), "loading": sum(v["on"]["loads"] is not None for v in variants)}
    return out


def _variant(index: FamilyIndex, v: FamilyVariant, cc: tuple[int, int] | None) -> tuple[dict[str, Any], list[str]]:
    """One variant, its metadata read once: its signature (its tuples nested, as its metadata records them; the index
    keeps the flat text), what a GPU of compute capability ``cc`` loads of it, and the cubins that do not match their
    recorded size and sha256."""
    directory = os.path.join(index.directory, v.dir)
    info: dict[str, Any] = {"dir": v.dir, "config": v.config, "signature": v.signature}
    try:
        meta = ArtifactMetadata.read(directory)
    except TmlrError as e:
        if cc is not None:
            info["on"] = {"cc": "%d.%d" % cc, "loads": None, "text": f"nothing: {e}"}
        return info, [str(e)]
    if meta.tuples:
        info["signature"] = format_nested(meta.signature)
    if cc is not None:
        info["on"] = would_load(meta, *cc)
    return info, cubin_problems(directory, meta)


def print_inspect_family(info: dict[str, Any]) -> None:
    print(f"{info['name']}  ({info['directory']}, family index schema v{info['schema_version']}, sha256 {info['index_sha256'][:16]}…)\n  call      {info['call']}")
    at = info["autotune"]
    if at:
        print(f"  autotune  key {at['key']}{' + argument dtypes' if at['dtype_in_key'] else ''}; reset_to_zero {at['reset_to_zero']}, "
              f"restore_value {at['restore_value']}{', pre_hook (not benchmarked by tmlr)' if at['has_pre_hook'] else ''}")
        for i, c in enumerate(at["configs"]):
            print(f"    config {i}: {c}")
    for h in info["heuristics"]:
        where = "inside @autotune" if h["after_config"] else "outside @autotune"
        print(f"  heuristic {h['name']} = {h['expr'] if h['expr'] else '(not recorded: pass it by keyword)'}  ({where})")
    print(f"  {len(info['variants'])} variants")
    for v in info["variants"]:
        print(f"    {v['dir']:24s} config {'-' if v['config'] is None else v['config']}  {v['signature']}")
        if "on" in v:
            print(f"      on {v['on']['cc']}: {v['on']['text']}")
    if info["failed"]:
        print(f"  {len(info['failed'])} variants failed to compile (not in the family: a call that needs one is refused with its error)")
        for f in info["failed"]:
            print(f"    {f['vid']:24s} config {'-' if f['config'] is None else f['config']}  {f['signature']}\n      {f['error']}")
    if "on" in info:
        on = info["on"]
        others = on["variants"] - on["loading"]
        print(f"  on {on['cc']}: {on['loading']} of {on['variants']} variants load"
              + (f": a call that takes one of the other {others} fails there" if others else ""))
    if at:
        print(f"  tuning table: {len(info['table'])} entries" + ("" if info["table"] else f" (no {TABLE_FILE})"))
        for e in info["table"]:
            print(f"    {e['device']}: key {e['key']} -> config {e['config']}"
                  + ("" if e["index_sha256"] == info["index_sha256"] else "  (for another index: ignored)"))
        print(f"  cache file: {info['cache_file']}")


def _table_checks(directory: str, sha256: str, configs: int) -> list[CheckResult]:
    path = os.path.join(directory, TABLE_FILE)
    if not os.path.exists(path):
        return [(f"{TABLE_FILE}", None, "no shipped table: unseen keys are tuned at run time or take the fallback")]
    try:
        entries = read_entries(path, configs)
    except TmlrError as e:
        return [(f"{TABLE_FILE} reads", False, str(e))]
    stale = [e for e in entries if e["index_sha256"] != sha256]
    return [(f"{TABLE_FILE} reads", True, f"{len(entries)} entries"), jsonschema_check(path, TUNING_SCHEMA_PATH, f"{TABLE_FILE} validates with jsonschema"),
            (f"{TABLE_FILE} is for this index", not stale,
             "" if not stale else f"{len(stale)} of {len(entries)} entries are stale: they name another index sha256 (the "
             "family was rebuilt with other configs, variants or cubin bytes) and are ignored; run `tmlr tune` again")]


def verify_family(directory: str, with_device: bool = True, index: FamilyIndex | None = None,
                  cc: tuple[int, int] | None = None) -> list[CheckResult]:
    """Every check of a family (``index``: its index, read already): the index, each sub-artifact (as `tmlr
    verify` checks one, ``cc`` included: a variant that loads nothing there fails), their signatures against the
    index, the shipped table; with a GPU, every variant loads."""
    try:
        index = index or read_index(os.path.abspath(directory))
    except TmlrError as e:
        return [("family index follows the schema", False, str(e))]
    results: list[CheckResult] = [("family index follows the schema", True, f"v{index.schema_version}, {len(index.variants)} variants"),
                                  jsonschema_check(os.path.join(index.directory, "metadata.json"), FAMILY_SCHEMA_PATH, "family index validates with jsonschema")]
    for v in index.variants:
        results += [(f"{v.dir}: {check}", ok, detail) for check, ok, detail in verify_kernel(os.path.join(index.directory, v.dir), False, cc=cc)]
    check = "sub-artifacts match the index (signatures, cubin sha256)"
    try:
        read_members(index, True, Kernel)
        results.append((check, True, ""))
    except TmlrError as e:
        return results + [(check, False, str(e))]
    if index.failed:
        results.append(("every planned variant was built", None,
                        f"{len(index.failed)} failed to compile and are not in the family (a call that needs one is refused "
                        f"with its error): {', '.join(f.vid for f in index.failed)}; `tmlr inspect` shows each error"))
    unrecorded = sum(v.cubin_sha256 is None for v in index.variants)
    if unrecorded:
        results.append(("index records each variant's cubin sha256", None,
                        f"{unrecorded} variants without: a tuning table keyed by this index cannot tell a rebuild with other "
                        "cubins; rebuild with tmlr-build (a table whose cubins are unchanged is re-stamped)"))
    if index.autotune:
        results += _table_checks(index.directory, index.sha256, len(index.autotune.configs))
    if with_device:
        results.append(_device_check(index))
    return results


def _device_check(index: FamilyIndex) -> CheckResult:
    check = "every variant loads on this device"
    try:
        family = KernelFamily(index, Kernel, tuning="strict")
        for m in family.members:
            m.kernel.variant  # noqa: B018 - loads the cubin in this context
    except CudaUnavailableError as e:
        return check, None, no_gpu(e)
    except TmlrError as e:
        return check, False, str(e)
    return check, True, f"{len(family.members)} variants on {family.tuner.device if family.tuner else 'this device'}"


def _cases_file(spec: str) -> tuple[str, str]:
    """``FILE.py:func`` -> (path, func), refused before anything is loaded when the file is not there."""
    path, sep, func = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not func.isidentifier():
        raise ArgumentError(f"--cases {spec!r}: write it as FILE.py:function", "cases")
    if not os.path.isfile(path):
        raise ArgumentError(f"--cases {spec!r}: {path} is not a Python file (check the path)", "cases")
    return path, func


def _cases(spec: str) -> Iterable[Any]:
    path, func = _cases_file(spec)
    module_spec = importlib.util.spec_from_file_location("tmlr_tune_cases", path)
    if module_spec is None:
        raise ArgumentError(f"--cases {spec!r}: {path} is not a Python file", "cases")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)  # type: ignore[union-attr]
    fn = getattr(module, func, None)
    if not callable(fn):
        raise ArgumentError(f"--cases {spec!r}: {path} defines no function {func!r}", "cases")
    return fn()


def _check_tunable(directory: str) -> None:
    """Refuse, before any driver call, a directory that is no family: there is nothing to tune."""
    found = artifacts_in(directory)
    if found:
        tunable = tunable_in(found)
        raise output_folder_error(directory, found, f"the families among them are {', '.join(tunable)}: tune each, e.g. "
                                  f"tmlr tune {tunable[0]} --cases ..." if tunable else "none of them is a family with "
                                  "@triton.autotune configs, which is what tmlr tune takes")
    if os.path.isfile(os.path.join(directory, "metadata.json")) and read(directory).kind != "family":
        raise ArgumentError(f"{directory}: not a family: nothing to tune (a plain artifact has one set of options); "
                            "tmlr tune takes the family tmlr-build writes for an @triton.autotune kernel", "directory")


def _load_to_tune(directory: str, out: str) -> Any:
    """The family, to benchmark. A damaged shipped table that this run writes again is kept aside first (its
    error says to run `tmlr tune`, which could not load the family else); any other load error is raised."""
    try:
        return Kernel.load(directory, tuning="strict")
    except SchemaError as e:
        if not (e.path and os.path.isfile(out) and os.path.samefile(e.path, out)):
            raise
        _, aside = keep_damaged_aside(out, len(read_index(directory).autotune.configs))
        if aside is not None:
            print(f"{e}\n  kept aside as {aside}; this run writes {out} again", file=sys.stderr)
    return Kernel.load(directory, tuning="strict")


def tune(directory: str, cases: str, out: str | None = None) -> list[dict[str, Any]]:
    """Benchmark every config for each case's key and merge the choices into the table; the new entries."""
    _cases_file(cases)
    _check_tunable(directory)
    out = out or os.path.join(directory, TABLE_FILE)
    family = _load_to_tune(directory, out)
    if not isinstance(family, KernelFamily) or family.tuner is None:
        raise ArgumentError(f"{directory}: the kernel has no @triton.autotune configs; there is nothing to tune")
    check_writable(out)  # a read-only folder refused before the benchmarks, not after
    new = []
    for n, case in enumerate(_cases(cases)):
        try:
            grid, args, kwargs = case
        except (TypeError, ValueError):
            raise ArgumentError(f"--cases: item {n} is not (grid, args, kwargs)", "cases") from None
        config, times = family.tune(grid, *args, **dict(kwargs or {}))
        key = family.key_of(*args, **dict(kwargs or {}))
        new.append(entry(family.tuner.device, family.index.sha256, key, config, times))
        print(f"  key {list(key)} -> config {config} ({family.configs[config].describe()}); "
              f"{', '.join('-' if t == float('inf') else f'{t:.4f}' for t in times)} ms")
    write_entries(out, family.name, new, len(family.configs))
    return new


def add_tune_parser(sub: Any) -> None:
    p = sub.add_parser("tune", help="benchmark a family's autotune configs on this GPU and write its tuning table")
    p.add_argument("directory")
    p.add_argument("--cases", required=True, help="FILE.py:func; func() yields (grid, args, kwargs) calls")
    p.add_argument("--out", help=f"the table to write or merge into (default DIR/{TABLE_FILE})")


def run_tune(args: argparse.Namespace) -> int:
    out = args.out or os.path.join(args.directory, TABLE_FILE)
    new = tune(args.directory, args.cases, out)
    print(f"{out}: {len(new)} entries written", file=sys.stderr)
    return 0

