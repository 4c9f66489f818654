"""Splitting an ``MLIR_ENABLE_DUMP=1`` log into one file per pass (``tmlr-build --split-dump``).

Triton 3.3.1 prints the IR *before* each pass (``// -----// IR Dump Before Name (arg) ('op' ...)``), so
file ``NN-Name.mlir`` holds the output of every pass that ran before ``Name``. Dumps of nested pass
managers (the inliner canonicalizes each ``tt.func``) hold a lone function, not a module: they are
listed but marked ``buildable: false``.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass

from ..common.errors import InputError

# A nested op's name may hold parentheses (the inliner's "@zeros____(0, 0)cconstexpr_64__..." functions).
_HEADER = re.compile(r"^// -----// IR Dump (Before|After) (\S+) \(([^)]*)\) \('([^']+)' operation(?:: .*)?\) //----- //$",
                     re.M)
# The first pass of each later stage in Triton 3.3.1's nvidia backend (compiler.py make_ttgir/make_llir).
_STAGE_STARTS = (("convert-triton-to-tritongpu", "ttgir"), ("triton-nvidia-mma-lowering", "llir-lowering"))


@dataclass(frozen=True)
class DumpEntry:
    file: str
    index: int
    pass_name: str
    pass_arg: str
    position: str  # "before" or "after" the pass
    stage: str  # the make_* stage that runs the pass: ttir, ttgir or llir-lowering
    operation: str  # builtin.module or a nested op such as tt.func
    buildable: bool  # a whole module that tmlr-build can take as input


def split_dump(log_path: str, out_dir: str) -> list[DumpEntry]:
    """Write ``out_dir/NN-PassName.mlir`` per dump plus ``index.json``; return the entries."""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{log_path}: cannot read the dump ({e}); produce one with "
                         "MLIR_ENABLE_DUMP=1 MLIR_DUMP_PATH=FILE") from None
    headers = list(_HEADER.finditer(text))
    if not headers:
        raise InputError(f"{log_path}: no '// -----// IR Dump Before Name (arg) ...' headers; produce the log with "
                         "MLIR_ENABLE_DUMP=1 MLIR_DUMP_PATH=FILE and Triton 3.3.1 (the release whose dumps tmlr-build "
                         "splits and resumes so far; 3.8+ writes another header format)")
    os.makedirs(out_dir, exist_ok=True)
    width = max(2, len(str(len(headers) - 1)))
    stage, entries = "ttir", []
    for i, m in enumerate(headers):
        position, name, arg, op = m.group(1).lower(), m.group(2), m.group(3), m.group(4)
        stage = next((s for start, s in _STAGE_STARTS if start == arg), stage)
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        body = text[m.end():end].strip("\n") + "\n"
        fname = f"{i:0{width}d}-{name}.mlir"
        with open(os.path.join(out_dir, fname), "w", encoding="utf-8") as f:
            f.write(body)
        module = op == "builtin.module"
        entries.append(DumpEntry(fname, i, name, arg, position, stage, op, module))
    with open(os.path.join(out_dir, "index.json"), "w", encoding="utf-8") as f:
        json.dump({"source": os.path.abspath(log_path), "passes": [asdict(e) for e in entries]}, f, indent=1)
    return entries
