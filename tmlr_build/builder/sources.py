"""Turning what the user named (files, ``file.py:kernel``, Triton cache entries) into compile jobs."""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tmlr_runtime.artifact.elf import EM_CUDA, header_sm

from ..common import devices
from ..common.arch import Target, triton_target
from ..common.errors import InputError, InputKindError, MissingMetadataError, UsageError
from ..common.jobs import STAGES, Job
from ..common.mlir_text import module_attributes, stage_of
from ..common.signature import given_constexpr

_EXT_STAGE = {".ttir": "ttir", ".ttgir": "ttgir", ".llir": "llir", ".ll": "llir", ".ptx": "ptx", ".cubin": "cubin"}


@dataclass(frozen=True)
class KernelRequest:
    """One kernel to build, with everything the user said about it."""

    source: str  # absolute path of the input file
    stage: str
    kernel: str | None = None
    module: str | None = None  # dotted name of a .py that is a package member
    name: str | None = None  # artifact name, when it should differ from the kernel's
    signature: str | None = None
    constexprs: dict[str, Any] = field(default_factory=dict)
    arg_names: tuple[str, ...] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    # the keys of ``options`` that are a spec's top-level defaults (the entry does not set them): an autotune
    # config's num_warps/num_stages/... wins over these, as Triton's config wins over a launch default
    default_options: frozenset[str] = frozenset()
    metadata_path: str | None = None
    archs: tuple[Target, ...] | None = None  # the archs this kernel may be built for (None: any)
    triton: str | None = None  # the Triton releases it may be built with (">=3.4"; None: any)
    # variants (builder/variants.py): type variables, configs to build, values of non-bool heuristics
    types: dict[str, list[str]] | None = None
    configs: Any = None  # None (all, for an autotuned kernel) | "all" | [index, ...] | [config object, ...]
    heuristics: dict[str, list[Any]] | None = None
    # what tmlr-build record wrote (tmlr_build/record/): the running @triton.jit function's (__module__, __qualname__),
    # and the configs Triton chose per autotune key ({"device", "key", "config"}: written into the family's tuning.json)
    identity: tuple[str, str] | None = None
    tuning: tuple[dict[str, Any], ...] | None = None
    ptx: bool = False  # also keep the PTX (--ptx; a spec's "ptx"), for each target that is not arch-specific
    device: str | None = None  # the GPU a Python kernel's import answers as (--device; a spec's "device"; None: each target's own)
    from_call: bool = False  # asked for by a @tmlr_build.jit call: errors speak of its arguments (common/wording.py)


def check_name(name: str, what: str = "") -> str:
    """``name`` if it may name an artifact (its directory, cubin files and metadata "name"), else UsageError."""
    if name.isascii() and name.isidentifier():
        return name
    fixed = re.sub(r"\W", "_", name, flags=re.ASCII)
    fixed = fixed if fixed[:1].isalpha() or fixed[:1] == "_" else "_" + fixed
    raise UsageError(f"{what}{' ' if what else ''}{name!r}: a kernel or artifact name may hold only ASCII letters, "
                     f"digits and '_', and may not start with a digit (no '.', '/', '-' or spaces); e.g. {fixed!r}")


class Source(NamedTuple):
    """What one input names: a file, its stage, and for Python the kernel and its module name."""

    source: str  # absolute path
    stage: str
    kernel: str | None = None
    module: str | None = None  # dotted name of a package member ("pkg.ops.norm"); None outside a package


_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def parse_source(text: str, base_dir: str | None = None) -> Source:
    """``"k.py:add"`` / ``"pkg.ops.norm:add"`` / ``"k.ttgir"`` / ``"cache/HASH/"`` -> a Source."""
    path, kernel = text, None
    head, sep, tail = text.rpartition(":")
    if sep and (head.endswith(".py") or _is_module_name(head)):
        path, kernel = head, tail.strip() or None
        if kernel is not None:
            check_name(kernel, f"{text}: kernel")
        if not head.endswith(".py"):
            return _module_source(head, kernel, text, base_dir)
    path = os.path.abspath(os.path.join(base_dir or "", os.path.expanduser(path)))
    if os.path.isdir(path):
        return Source(_cache_entry(path), "cubin")
    if not os.path.exists(path):
        where = "the spec file's directory" if base_dir else "the current directory"
        raise InputError(f"{text}: no such file; check the path (a relative one is taken from {where})")
    ext = os.path.splitext(path)[1]
    if ext == ".py":
        if kernel is None:
            raise InputError(f"{text}: name the kernel to build as {text}:<kernel_name>")
        return Source(path, "python", kernel, package_module(path))
    if ext not in _EXT_STAGE:
        raise InputError(f"{text}: unknown input kind {ext or '(no extension)'}; give a .py (as file.py:kernel or "
                         "package.module:kernel), .ttir, .ttgir, .llir, .ptx or .cubin file, or a Triton cache entry "
                         "directory")
    return Source(path, _EXT_STAGE[ext], None)


def _is_module_name(text: str) -> bool:
    """``pkg.ops.norm`` as ``python -m`` takes it (and not a stage file's name such as ``k.ttgir``)."""
    return _DOTTED.fullmatch(text) is not None and os.path.splitext(text)[1] not in _EXT_STAGE


def _module_source(name: str, kernel: str | None, text: str, base_dir: str | None) -> Source:
    """``pkg.ops.norm:kernel`` found the way ``python -m`` finds it: the current (or spec file's) folder, then sys.path."""
    if kernel is None:
        raise InputError(f"{text}: name the kernel to build as {text}:<kernel_name>")
    rel = os.path.join(*name.split("."))
    for root in [os.path.abspath(base_dir or os.getcwd())] + [os.path.abspath(p) for p in sys.path if p]:
        for path in (rel + ".py", os.path.join(rel, "__init__.py")):
            if os.path.isfile(os.path.join(root, path)):
                member = "." in name or path.endswith("__init__.py")  # else a plain file, as for file.py:kernel
                return Source(os.path.join(root, path), "python", kernel, name if member else None)
    where = "the spec file's directory" if base_dir else "the current directory"
    raise InputError(f"{text}: no module {name} in {where} or on sys.path; run tmlr-build from the folder that holds "
                     f"{name.split('.')[0]}/, or give the file's path ({rel}.py:{kernel})")


def package_module(path: str) -> str | None:
    """The dotted name of a .py inside a package (``pkg/ops/norm.py`` -> ``pkg.ops.norm``): the package
    root is the highest folder reached through ``__init__.py`` files. None outside a package."""
    folder = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    parts = [] if stem == "__init__" else [stem]
    while os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.basename(folder).isidentifier():
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    return ".".join(parts) if folder != os.path.dirname(path) else None


def _cache_entry(path: str) -> str:
    cubins = sorted(f for f in os.listdir(path) if f.endswith(".cubin"))
    if len(cubins) != 1:
        raise InputError(f"{path}: a directory input must be one Triton cache entry holding exactly one .cubin "
                         f"(found {len(cubins)}); pass the .cubin file and its --metadata instead")
    return os.path.join(path, cubins[0])


def _read_json(path: str, what: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise MissingMetadataError(f"{path}: no such file ({what})") from None
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read {what}: {e}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: {what} must be a JSON object")
    return doc


def _beside(source: str, suffix: str) -> str | None:
    path = os.path.splitext(source)[0] + suffix
    return path if os.path.isfile(path) else None


def imported_without_constexprs(req: KernelRequest) -> bool:
    """An IR input built with neither --signature nor --constexpr, nor tmlr's sidecar (which records them)."""
    return req.stage != "python" and req.signature is None and not req.constexprs and not _beside(req.source, ".tmlr.json")


_STAGE_WORDS = {"ttir": "TTIR", "ttgir": "TTGIR", "llir": "LLVM IR", "ptx": "PTX", "cubin": "a cubin (ELF)"}
_WHY = {"ttir": " (a tt.func but no ttg.* layouts or module attributes)", "ttgir": " (it has ttg.* layouts)"}
_THEN = {"ttir": " and pass --arch (TTIR is portable)", "ttgir": ""}


def check_input_kind(req: KernelRequest) -> None:
    """An IR input must hold the stage its extension names: Triton aborts, or tmlr-build would give
    a misleading message, on TTIR saved as .ttgir, PTX saved as .llir, or a file that is no IR.
    Checked first, before any question about flags that such a file would not answer anyway."""
    if req.stage == "python":
        return
    with open(req.source, "rb") as f:
        data = f.read()
    name = os.path.basename(req.source)
    if req.stage == "cubin":
        if cubin_capability(data) is None:
            found = stage_of(data)
            also = f" (it holds {_STAGE_WORDS[found]}: rename it to {os.path.splitext(name)[0]}.{found})" \
                if found not in (None, "cubin") else ""
            raise InputKindError(f"{name}: not a cubin (no CUDA ELF header){also}; pass the .cubin Triton wrote")
        return
    found = stage_of(data)
    if found == req.stage:
        return
    if found is None:
        raise InputKindError(
            f"{name}: is not {_STAGE_WORDS[req.stage]}, nor any IR tmlr-build reads (no tt.func, no LLVM 'define', "
            f"no PTX .version/.target); pass the .{req.stage} file Triton wrote (tmlr-build --keep-ir or "
            "--stop-after, or Triton's cache)")
    stem = os.path.splitext(name)[0]
    then = _THEN.get(found, " and keep Triton's metadata JSON of its compile beside it (or pass --metadata)")
    raise InputKindError(f"{name}: holds {_STAGE_WORDS[found]}{_WHY.get(found, '')}, not {_STAGE_WORDS[req.stage]}: "
                         f"rename it to {stem}.{found}{then}")


def cubin_capability(data: bytes) -> int | None:
    """The SM a cubin is compiled for (90 for sm_90a), from its ELF header (the runtime's reading of it:
    tmlr_runtime.artifact.elf.header_sm); None if it is no CUDA ELF or names no SM the runtime knows."""
    if len(data) < 0x34 or not data.startswith(b"\x7fELF") or int.from_bytes(data[18:20], "little") != EM_CUDA:
        return None
    return header_sm(data)[0] or None


def default_archs(req: KernelRequest) -> tuple[Target, ...] | None:
    """The target an architecture-specific input was made for, when it records one (the compile checks
    that tmlr-build supports it)."""
    if req.stage == "ttgir":
        with open(req.source, encoding="utf-8", errors="replace") as f:
            target = triton_target(module_attributes(f.read()).get("ttg.target"))
        return (target,) if target else None
    sidecar = _beside(req.source, ".tmlr.json")
    if req.stage == "ttir" and sidecar:
        cap = _read_json(sidecar, "tmlr sidecar").get("capability")
        return (Target.from_capability(cap),) if isinstance(cap, int) else None
    if req.stage in ("llir", "ptx", "cubin"):
        meta_path = req.metadata_path or _beside(req.source, ".json")
        if meta_path:
            arch = (_read_json(meta_path, "Triton metadata JSON").get("target") or {}).get("arch")
            if arch is not None:
                return (Target.from_capability(int(arch)),)
    if req.stage == "cubin":  # no metadata JSON to ask: the cubin's own ELF header
        with open(req.source, "rb") as f:
            cap = cubin_capability(f.read(0x34))
        return (Target.from_capability(cap),) if cap else None
    return None


def make_jobs(req: KernelRequest, targets: tuple[Target, ...], stop_after: str | None, keep_ir: bool,
              line_info: bool) -> list[Job]:
    """One Job per target, with the metadata and sidecars found beside the input attached."""
    if stop_after is not None and STAGES.index(stop_after) <= STAGES.index(req.stage):
        raise UsageError(f"--stop-after {stop_after}: the input {os.path.basename(req.source)} is already a "
                         f".{req.stage}; name a later stage ({', '.join(STAGES[STAGES.index(req.stage) + 1:-1])})")
    meta_path = req.metadata_path or (_beside(req.source, ".json") if req.stage != "python" else None)
    meta = _read_json(meta_path, "Triton metadata JSON") if meta_path else None
    sidecar_path = _beside(req.source, ".tmlr.json") if req.stage != "python" else None
    sidecar = _read_json(sidecar_path, "tmlr sidecar") if sidecar_path else None
    sibling = ir_path = None
    if req.stage in ("llir", "ptx", "cubin"):
        ir_path = _beside(req.source, ".ttgir") or _beside(req.source, ".ttir")
        if ir_path:
            with open(ir_path, encoding="utf-8", errors="replace") as f:
                sibling = f.read()
    return [
        Job(source=req.source, stage=req.stage, target=target, kernel=req.kernel, module=req.module, name=req.name,
            signature=req.signature, constexprs=dict(req.constexprs), arg_names=req.arg_names,
            options=dict(req.options), triton_metadata=meta, triton_metadata_path=meta_path, sidecar=sidecar,
            sibling_ir=sibling, sibling_ir_name=os.path.basename(ir_path) if ir_path else None,
            stop_after=stop_after, keep_ir=keep_ir, line_info=line_info, ptx=req.ptx and not target.arch_specific,
            from_call=req.from_call, device=device_profile(req, target))
        for target in targets
    ]


def device_profile(req: KernelRequest, target: Target) -> str | None:
    """The device profile a Python kernel's import answers as when built for ``target`` (None for a stage file,
    which asks nothing); DeviceProfileError for a --device that does not run the target's code."""
    return devices.for_target(target, req.device).key if req.stage == "python" else None


def request(source: str, *, signature: str | None = None, constexprs: dict[str, Any] | None = None,
            arg_names: tuple[str, ...] | None = None, options: dict[str, Any] | None = None,
            metadata: str | None = None, name: str | None = None, ptx: bool = False,
            device: str | None = None) -> KernelRequest:
    """A KernelRequest from the same words the command line takes (``"k.py:add"``, ``"k.ttgir"``; ``ptx``: --ptx;
    ``device``: --device). A constexpr's value may be the Python object itself (``tl.int8``, a @triton.jit function,
    ``tl.constexpr(64)``), taken as ``--constexpr`` takes its text (a list: a value per variant)."""
    given = {n: [given_constexpr(x) for x in v] if isinstance(v, list) else given_constexpr(v)
             for n, v in (constexprs or {}).items()}
    return KernelRequest(**parse_source(source)._asdict(), name=name, signature=signature,
                         constexprs=given, arg_names=arg_names, options=dict(options or {}),
                         metadata_path=os.path.abspath(metadata) if metadata else None, ptx=ptx,
                         device=devices.profile(device).key if device else None)
