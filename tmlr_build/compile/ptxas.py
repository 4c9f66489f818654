"""PTX -> cubin with Triton's bundled ptxas and Triton's exact flags, keeping the -v report.

Triton's own make_cubin throws the ptxas report away; running ptxas here gives the same bytes
(same binary, same flags) plus the register/spill figures recorded under ``resources``. Which binary
and which flags the installed Triton uses comes from triton_api.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

from tmlr_runtime.abi import Target

from ..common.errors import PtxasError
from . import triton_api
from .source_names import stable_text


@dataclass(frozen=True)
class Assembled:
    cubin: bytes
    log: str
    resources: dict[str, int]


def ptxas_version(capability: int) -> str:
    """``"12.4.99"`` for the bundled CUDA 12.4 ptxas of Triton 3.3.1 (``"13.4.x"`` for 3.9's sm_90 ptxas)."""
    text = triton_api.current().ptxas_version_text(capability)
    m = re.search(r"release [\d.]+, V([\d.]+)", text) or re.search(r"release ([\d.]+)", text)
    return m.group(1) if m else text.strip().splitlines()[-1]


def command(target: Target, options: Any, line_info: bool, src: str, out: str) -> list[str]:
    """Triton's make_cubin command (triton/backends/nvidia/compiler.py) with its environment knobs unset."""
    api = triton_api.current()
    flags = ["-lineinfo"] if line_info else ["-lineinfo", "-suppress-debug-info"]
    fmad = [] if options.enable_fp_fusion else ["--fmad=false"]
    extra = (getattr(options, "ptx_options", None) or "").split()  # the ptx_options compile option (3.4+)
    return [api.ptxas_path(target.capability), *flags, *fmad, "-v", *api.ptxas_flags, *extra,
            f"--gpu-name={target.arch}", src, "-o", out]


def parse_resources(log: str) -> dict[str, int]:
    """Registers, spills, stack frame and static shared memory from a ``ptxas -v`` report."""
    out: dict[str, int] = {}
    patterns = {
        "registers": r"Used (\d+) registers",
        "stack_frame": r"(\d+) bytes stack frame",
        "spill_stores": r"(\d+) bytes spill stores",
        "spill_loads": r"(\d+) bytes spill loads",
        "static_shared": r"(\d+) bytes smem",
    }
    for key, pattern in patterns.items():
        m = re.search(pattern, log)
        if m:
            out[key] = int(m.group(1))
    return out


def assemble(ptx: str, target: Target, options: Any, line_info: bool, label: str,
             ptx_name: str = "kernel.ptx") -> Assembled:
    """Run ptxas on ``ptx``; raises PtxasError with the log and a repro command on failure."""
    with tempfile.TemporaryDirectory(prefix="tmlr-ptxas-") as tmp:
        src, out = os.path.join(tmp, ptx_name), os.path.join(tmp, "kernel.cubin")
        with open(src, "w", encoding="utf-8") as f:
            f.write(stable_text(ptx))
        cmd = command(target, options, line_info, src, out)
        # cwd: with -lineinfo, ptxas embeds the size and mtime of each source file named by a .file
        # directive that it can open; stable_text made every name relative, and relative names
        # resolve against this empty directory, so no file of the build machine is found.
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp)
        if proc.returncode != 0:
            repro = shlex.join(cmd[:-3] + [ptx_name, "-o", "out.cubin"])
            log = proc.stdout.strip().replace(src, ptx_name)
            raise PtxasError(
                f"{label}: ptxas (stage ptx -> cubin, {target.arch}) failed with exit status {proc.returncode}:\n{log}\n"
                f"Repro (get {ptx_name} with --stop-after ptx unless it is your input): {repro}"
            )
        with open(out, "rb") as f:
            cubin = f.read()
    return Assembled(cubin, proc.stdout, parse_resources(proc.stdout))
