"""Splitting an ``MLIR_ENABLE_DUMP=1`` log into one file per pass (``tmlr-build --split-dump``).

Triton prints the IR *before* each pass, so file ``NN-Name.mlir`` holds the output of every pass
that ran before ``Name``. Two header forms exist: ``// -----// IR Dump Before Name (arg) ('op' ...)``
(Triton 3.3-3.7) and ``// -----// IR Dump Before NamePass: arg{options} ('op' ...)`` (3.8+, MLIR's
newer printer). From 3.8 the software pipeliner also writes its own internal dumps into the log, in
the middle of ``tritongpu-pipeline``; they get files of their own (never buildable: the pass had not
finished). Dumps of nested pass managers (the inliner canonicalizes each ``tt.func``) hold a lone
function, not a module: they are listed but marked ``buildable: false``.

The log may come from any Triton release (it is split without importing Triton), so the stage of
each pass is read from the pass sequence itself, not from the installed Triton.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass

from ..common.errors import InputError

# A nested op's name may hold parentheses (the inliner's "@zeros____(0, 0)cconstexpr_64__..." functions);
# 3.8+ options may hold spaces ("canonicalize{cse-between-iterations=false    max-iterations=10 ...}").
_HEADER = re.compile(r"^// -----// IR Dump (Before|After) (\S+?)(?: \(([^)]*)\)|: ([^\s{]+)(?:\{[^\n]*?\})?) "
                     r"\('([^']+)' operation(?:: [^\n]*)?\) //----- //$", re.M)
_INTERNAL = re.compile(r"^// -----// (\w+) internal IR Dump (Before|After): (\w+)[ \t]*$", re.M)
_TTGIR_MODULE = re.compile(r"^\s*module\s+attributes\s*\{[^\n]*ttg\.num-warps", re.M)
_INLINERS = ("inline", "gluon-inline")
# make_llir begins with these passes (mma-lowering only in Triton 3.3-3.4: 3.5 moved it to the end of make_ttgir)
_LLIR_HEAD = ("triton-nvidia-mma-lowering", "tritongpu-combine-tensor-select-and-if", "tritongpu-allocate-warp-groups")


@dataclass(frozen=True)
class DumpEntry:
    file: str
    index: int
    pass_name: str
    pass_arg: str
    position: str  # "before" or "after" the pass
    # the make_* stage that runs the pass: ttir, ttgir, llir-lowering, or gluon (a Gluon kernel's
    # gluon_to_ttgir, which takes the frontend's TTGIR; Gluon has no ttir stage)
    stage: str
    operation: str  # builtin.module or a nested op such as tt.func
    buildable: bool  # a whole module that tmlr-build can take as input
    internal: bool = False  # a pass's own dump from inside it (the 3.8+ software pipeliner's steps)


@dataclass(frozen=True)
class _Dump:
    start: int  # where the header starts in the log
    end: int  # where the header ends
    position: str
    name: str
    arg: str
    operation: str
    internal: bool


def _dumps(text: str) -> list[_Dump]:
    found = [_Dump(m.start(), m.end(), m.group(1).lower(), m.group(2), m.group(3) or m.group(4), m.group(5), False)
             for m in _HEADER.finditer(text)]
    found += [_Dump(m.start(), m.end(), m.group(2).lower(), m.group(1), m.group(3), "builtin.module", True)
              for m in _INTERNAL.finditer(text)]
    return sorted(found, key=lambda d: d.start)


def _llir_start(args: list[str]) -> int:
    """Index of make_llir's first pass: the run of _LLIR_HEAD passes that ends at allocate-warp-groups."""
    if _LLIR_HEAD[-1] not in args:
        return len(args)
    i = args.index(_LLIR_HEAD[-1])
    for head in reversed(_LLIR_HEAD[:-1]):
        if i and args[i - 1] == head:
            i -= 1
    return i


def _stages(dumps: list[_Dump], first_body: str) -> list[str]:
    """The make_* stage of each dump. A Gluon compile's first pass is an inliner run on TTGIR."""
    args = [d.arg for d in dumps]
    llir = _llir_start(args)
    gluon = bool(args) and args[0] in _INLINERS and _TTGIR_MODULE.search(first_body) is not None
    stage, out = "gluon" if gluon else "ttir", []
    for i, d in enumerate(dumps):
        if i == llir:
            stage = "llir-lowering"
        elif d.arg == "convert-triton-to-tritongpu" and stage == "ttir" and not d.internal:
            stage = "ttgir"
        out.append(stage)
    return out


def split_dump(log_path: str, out_dir: str) -> list[DumpEntry]:
    """Write ``out_dir/NN-PassName.mlir`` per dump plus ``index.json``; return the entries."""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{log_path}: cannot read the dump ({e}); produce one with "
                         "MLIR_ENABLE_DUMP=1 MLIR_DUMP_PATH=FILE") from None
    dumps = _dumps(text)
    if not any(not d.internal for d in dumps):
        raise InputError(f"{log_path}: no '// -----// IR Dump Before ...' headers; produce the log with "
                         "MLIR_ENABLE_DUMP=1 MLIR_DUMP_PATH=FILE (or tmlr-build --dump-passes FILE)")
    bodies = [text[d.end:(dumps[i + 1].start if i + 1 < len(dumps) else len(text))].strip("\n") + "\n"
              for i, d in enumerate(dumps)]
    os.makedirs(out_dir, exist_ok=True)
    width = max(2, len(str(len(dumps) - 1)))
    entries = []
    for i, (d, stage, body) in enumerate(zip(dumps, _stages(dumps, bodies[0]), bodies)):
        fname = f"{i:0{width}d}-{d.name}{'.' + d.arg if d.internal else ''}.mlir"
        with open(os.path.join(out_dir, fname), "w", encoding="utf-8") as f:
            f.write(body)
        buildable = d.operation == "builtin.module" and not d.internal
        entries.append(DumpEntry(fname, i, d.name, d.arg, d.position, stage, d.operation, buildable, d.internal))
    with open(os.path.join(out_dir, "index.json"), "w", encoding="utf-8") as f:
        json.dump({"source": os.path.abspath(log_path), "passes": [asdict(e) for e in entries]}, f, indent=1)
    return entries
