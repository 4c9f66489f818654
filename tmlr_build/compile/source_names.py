"""Source file names in IR and PTX that do not depend on the machine that built them.

With line info on, Triton writes each function's ``co_filename`` into the IR locations, LLVM
carries it into the PTX ``.file`` directives, and ptxas records the name plus the size and
modification time of every such file it can open. Triton's own helpers (``tl.sum`` lives in
``triton/language/standard.py``) and helpers from installed packages have absolute names, so
the same build gave other bytes on a machine whose Triton sits elsewhere or was unpacked at
another time. Naming such a file by its import path (``triton/language/standard.py``) keeps
the line info readable and, being relative, it is never found from ptxas's empty working
directory, so no timestamp enters the cubin.
"""
from __future__ import annotations

import os
import re

_INSTALL_DIRS = ("site-packages", "dist-packages")

# An absolute path as each text names a source file: MLIR locations, LLVM's DIFile directory,
# PTX .file directives (optionally followed by a timestamp and size, which are dropped too).
_MLIR_LOC = re.compile(r'loc\("(/[^"]*)"')
_LLVM_DIFILE = re.compile(r'!DIFile\(filename: "([^"]*)", directory: "(/[^"]*)"')
_PTX_FILE = re.compile(r'^(\s*\.file\s+\d+\s+)"(/[^"]*)"(?:\s*,\s*\d+\s*,\s*\d+)?', re.MULTILINE)


def stable_name(path: str) -> str:
    """The import-path name of an absolute source file name; other names are returned as they are.

    ``/x/lib/python3.11/site-packages/triton/language/standard.py`` -> ``triton/language/standard.py``;
    a file in a package elsewhere -> its path from the package root's parent (``pkg/ops/norm.py``);
    any other file -> its base name.
    """
    if not os.path.isabs(path):
        return path
    parts = path.split("/")
    installed = [i for i, part in enumerate(parts) if part in _INSTALL_DIRS]
    if installed and installed[-1] < len(parts) - 1:
        return "/".join(parts[installed[-1] + 1:])
    directory, name = os.path.split(os.path.normpath(path))
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        name = f"{package}/{name}"
    return name


def stable_text(text: str) -> str:
    """``text`` (TTIR, TTGIR, LLVM IR or PTX) with every absolute source file name made stable."""
    text = _MLIR_LOC.sub(lambda m: f'loc("{stable_name(m[1])}"', text)
    text = _LLVM_DIFILE.sub(_difile, text)
    return _PTX_FILE.sub(lambda m: f'{m[1]}"{stable_name(m[2])}"', text)


def _difile(m: re.Match[str]) -> str:
    directory = os.path.dirname(stable_name(os.path.join(m[2], m[1])))
    return f'!DIFile(filename: "{m[1]}", directory: "{directory}"'
