"""Spec files: several kernels, each with its own source, signature, options and archs.

    {
      "arch": [80, 90],                       # default archs (--arch overrides)
      "options": {"num_warps": 4},            # default options for every kernel (an autotune config's win)
      "kernels": [
        {"source": "kernels/add.py", "kernel": "add", "signature": "*fp32:16, *fp32:16, *fp32:16, i32",
         "constexprs": {"BLOCK": 1024}, "options": {"num_warps": 4}, "arch": [90], "name": "add_1024"}
      ]
    }

Paths are relative to the spec file. A kernel's "arch" restricts it to those archs (a num_ctas=2
kernel lists [90]); "triton" to the Triton releases it is written for (">=3.4" for a kernel with
host tensor descriptors); "name" renames the artifact directory. A constexpr given as a list builds one variant
per value. Entries written by ``tmlr-build record`` (tmlr_build/record/) say "recorded": true and may carry
"module"/"qualname" (the running kernel's) and "tuning" (the configs Triton chose, written into the family's
tuning.json by the build); the top-level "not_recorded" lists kernels the recorder saw but could not record.
docs/spec-format.md documents every key (tests/build/test_build_spec_format.py keeps it in step with the keys below).
"""
from __future__ import annotations

import json
import os
from typing import Any

from ..common import devices
from ..common.arch import Target, parse_arch_list
from ..common.errors import BuildError, SpecError
from ..common.signature import is_tuple_value, parse_arg_names, spec_constexpr
from ..common.triton_check import release_range
from .sources import KernelRequest, check_name, parse_source

_TOP_KEYS = {"arch", "options", "ptx", "device", "kernels", "not_recorded", "$comment"}
_KERNEL_KEYS = {"source", "kernel", "name", "signature", "constexprs", "arg_names", "options", "arch", "metadata",
                "triton", "types", "configs", "heuristics", "ptx", "device", "recorded", "module", "qualname", "tuning",
                "$comment"}


def load_spec(path: str) -> tuple[list[KernelRequest], tuple[Target, ...] | None]:
    """The kernel requests of a spec file, and its default archs."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file") from None
    except ValueError as e:
        raise SpecError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("kernels"), list):
        raise SpecError(f'{path}: a spec is a JSON object with a "kernels" list')
    _no_unknown(path, "the spec", doc, _TOP_KEYS)
    if not isinstance(doc.get("not_recorded", []), list):
        raise SpecError(f'{path}: "not_recorded" must be a list (tmlr-build record writes it; the build ignores it)')
    base = os.path.dirname(os.path.abspath(path))
    defaults = _options(path, "the spec", doc.get("options", {}))
    archs = _archs(path, "the spec", doc["arch"]) if "arch" in doc else None
    ptx = _flag(path, "the spec", doc, "ptx", False)
    device = _device(path, "the spec", doc.get("device"))
    requests = [_kernel(path, base, i, k, defaults, ptx, device) for i, k in enumerate(doc["kernels"])]
    return requests, archs


def _kernel(path: str, base: str, i: int, k: Any, defaults: dict[str, Any], ptx: bool = False,
            device: str | None = None) -> KernelRequest:
    where = f"kernels[{i}]"
    if not isinstance(k, dict) or not isinstance(k.get("source"), str):
        raise SpecError(f'{path}: {where} must be an object with a "source" string')
    _no_unknown(path, where, k, _KERNEL_KEYS)
    source = k["source"] + (f":{k['kernel']}" if "kernel" in k and ":" not in k["source"] else "")
    try:
        parsed = parse_source(source, base)
        arg_names = tuple(parse_arg_names(k["arg_names"])) if "arg_names" in k else None
        if "name" in k:
            check_name(str(k["name"]), '"name"')
    except BuildError as e:
        raise SpecError(f"{path}: {where}: {e}") from None
    constexprs = _constexprs(path, where, k.get("constexprs", {}), parsed.stage)
    signature = k.get("signature")
    if signature is not None and not isinstance(signature, str):
        raise SpecError(f'{path}: {where}: "signature" must be a string like "*fp16:16, i32, 128"')
    own = _options(path, where, k.get("options", {}))
    options = {**defaults, **own}
    metadata = os.path.join(base, k["metadata"]) if "metadata" in k else None
    archs = _archs(path, where, k["arch"]) if "arch" in k else None
    return KernelRequest(**parsed._asdict(), name=k.get("name"), signature=signature,
                         constexprs=constexprs, arg_names=arg_names, options=options,
                         default_options=frozenset(defaults) - frozenset(own), metadata_path=metadata,
                         archs=archs, triton=_triton_range(path, where, k.get("triton")), ptx=_flag(path, where, k, "ptx", ptx),
                         device=_device(path, where, k["device"]) if "device" in k else device,
                         **_variants(path, where, k), **_recorded(path, where, k))


def _variants(path: str, where: str, k: dict[str, Any]) -> dict[str, Any]:
    """The entry's "types", "configs" and "heuristics" (their values are checked against the kernel later)."""
    types, heuristics = k.get("types"), k.get("heuristics")
    for key, value, example in (("types", types, '{"T": ["fp16", "bf16"]}'), ("heuristics", heuristics,
                                                                             '{"BLOCK": [256, 512]}')):
        if value is not None and not (isinstance(value, dict) and all(isinstance(v, list) for v in value.values())):
            raise SpecError(f'{path}: {where}: "{key}" must be an object of lists like {example}')
    configs = k.get("configs")
    if configs is not None and configs != "all" and not isinstance(configs, list):
        raise SpecError(f'{path}: {where}: "configs" must be "all", a list of indices or a list of config objects')
    return {"types": types, "configs": configs, "heuristics": heuristics}


def _constexprs(path: str, where: str, value: Any, stage: str) -> dict[str, Any]:
    """The entry's "constexprs", a string naming a Triton object (``"tl.float16"``) read as that object, in a list
    too; a list value (a Python kernel's) builds one variant per value."""
    if not isinstance(value, dict):
        raise SpecError(f'{path}: {where}: "constexprs" must be an object like {{"BLOCK": 128}}')
    for name, v in value.items():
        if not isinstance(v, list):
            continue
        if stage != "python":
            raise SpecError(f'{path}: {where}: "constexprs" {name}: a list of values builds variants of a Python '
                            "kernel only; give one value")
        if not v or len({json.dumps(x) for x in v}) != len(v) or not all(
                x is None or isinstance(x, (bool, int, float, str)) or is_tuple_value(x, list) for x in v):
            raise SpecError(f'{path}: {where}: "constexprs" {name}: give one value, or a list of distinct numbers, '
                            "booleans, strings, nulls or arrays (tuples) (one variant each), e.g. [128, 256] or "
                            "[[8, 8], [16, 16]]")
    return {n: [spec_constexpr(x) for x in v] if isinstance(v, list) else spec_constexpr(v) for n, v in value.items()}


def _recorded(path: str, where: str, k: dict[str, Any]) -> dict[str, Any]:
    """What ``tmlr-build record`` wrote beside the build keys: the running kernel's module and qualname, and the
    configs Triton chose per autotune key ("tuning": [{"device", "key", "config"}, ...])."""
    for key in ("module", "qualname"):
        if key in k and not isinstance(k[key], str):
            raise SpecError(f'{path}: {where}: "{key}" must be a string')
    if "recorded" in k and not isinstance(k["recorded"], bool):
        raise SpecError(f'{path}: {where}: "recorded" must be true or false')
    tuning = k.get("tuning")
    if tuning is not None and not (isinstance(tuning, list) and all(
            isinstance(t, dict) and isinstance(t.get("device"), str) and isinstance(t.get("key"), list)
            and isinstance(t.get("config"), dict) for t in tuning)):
        raise SpecError(f'{path}: {where}: "tuning" must be a list like [{{"device": "NVIDIA H100 80GB HBM3", '
                        '"key": [1024, "fp16"], "config": {"kwargs": {"BLOCK": 128}, "num_warps": 4}}]')
    identity = (k["module"], k["qualname"]) if "module" in k and "qualname" in k else None
    return {"identity": identity, "tuning": tuple(tuning) if tuning else None}


def _flag(path: str, where: str, doc: dict[str, Any], key: str, default: bool) -> bool:
    value = doc.get(key, default)
    if not isinstance(value, bool):
        raise SpecError(f'{path}: {where}: "{key}" must be true or false')
    return value


def _triton_range(path: str, where: str, value: Any) -> str | None:
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not a string")
        release_range(value)
    except ValueError as e:
        raise SpecError(f'{path}: {where}: "triton": {e}') from None
    return value


def _device(path: str, where: str, value: Any) -> str | None:
    """A "device": the key of a known device profile (common/devices.py), or None where none is given."""
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise SpecError(f'"device" must be a GPU\'s name like "H100", not {value!r}')
        return devices.profile(value).key
    except BuildError as e:
        raise SpecError(f"{path}: {where}: {e}") from None


def _options(path: str, where: str, options: Any) -> dict[str, Any]:
    if not isinstance(options, dict):
        raise SpecError(f'{path}: {where}: "options" must be an object like {{"num_warps": 4}}')
    return dict(options)


def _archs(path: str, where: str, value: Any) -> tuple[Target, ...]:
    try:
        return parse_arch_list(value if isinstance(value, list) else str(value))
    except BuildError as e:
        raise SpecError(f"{path}: {where}: {e}") from None


def _no_unknown(path: str, where: str, doc: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise SpecError(f"{path}: {where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
