"""What tests/sanitize.sh reads from a compute-sanitizer log: the errors it reports, less two known false reports.

The first known false report: initcheck's ``Uninitialized __global__ memory read`` in the kernels
that build TMA descriptors on the device (``tma_scale``; the ``fp8_matmul`` stage example). Triton
writes those descriptors into the kernel's global scratch with
``tensormap.cp_fenceproxy``, which initcheck does not model as a write, so the TMA unit's reads of
the descriptors look uninitialized; the results are right (tests/gpu/test_runtime_gpu.py and
examples/stages/run_fp8_matmul.py check them against torch). Only reports of that kind, in that kernel, under initcheck are discounted; any other
report, any other kernel or tool, stays an error.

The second: ``CUDA_ERROR_INVALID_VALUE`` on ``cuGetProcAddress_v2`` (memcheck reports failed API
calls). cuda-bindings resolves each driver entry point it knows by name when it is first used, and
asks for some that an older driver does not have; the driver answers "invalid value" and the
bindings mark the function unavailable. tmlr_runtime never calls cuGetProcAddress itself, and every
driver call it makes is checked and raised as a DriverError. Where the log says some errors were not printed,
nothing is discounted (what was not printed cannot be shown to be the known report).

    python3 tests/sanitizer_log.py TOOL LOG
        line 1: "<errors> <known>": errors in the ERROR SUMMARY lines (all processes), and how many of
                them are the known report; then up to 3 headings of the other reports, one a line
"""
from __future__ import annotations

import re
import sys

KNOWN_TOOL = "initcheck"
KNOWN_KIND = "Uninitialized __global__ memory read"
KNOWN_KERNELS = ("tma_scale", "fp8_matmul")

_PREFIX = r"^[^=]*=+ "  # a report may share its first line with a program's output (pytest's dots)
_SUMMARY = re.compile(_PREFIX + r"ERROR SUMMARY: (\d+) errors?\s*$")
_NOT_PRINTED = re.compile(r"errors? (were|was) not printed")
_HEADING = re.compile(_PREFIX + r"(\S.*?)\s*$")  # a report's first line; its details are indented
# the report's location: "at tma_scale+0x1f0 in file.py:12", "at tma_scale+0x1f0", or the older
# "at 0x1f0 in file.py:12:tma_scale" / "at 0x1f0 in tma_scale"
_AT = re.compile(_PREFIX + r"\s+at (?:(?P<fn>[^\s+]+)\+0x[0-9a-fA-F]+|0x[0-9a-fA-F]+ in (?P<where>\S+))")
_PROC_ADDRESS = re.compile(r"Program hit CUDA_ERROR_INVALID_VALUE \(error 1\) .* on CUDA API call to cuGetProcAddress(_v2)?\.$")
_NOT_REPORTS = ("ERROR SUMMARY", "COMPUTE-SANITIZER", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application")


def _kernel(at: re.Match[str]) -> str:
    if at.group("fn"):
        return at.group("fn")
    return at.group("where").rsplit(":", 1)[-1]


def read(tool: str, log: str) -> tuple[int, int, list[str]]:
    """``(errors, known, others)``: the summed ERROR SUMMARY counts, how many of those errors are the
    known report, and the headings of the other reports."""
    lines = log.splitlines()
    errors = sum(int(m.group(1)) for m in map(_SUMMARY.match, lines) if m)
    known, others = 0, []
    for i, line in enumerate(lines):
        m = _HEADING.match(line)
        if not m or m.group(1).startswith(_NOT_REPORTS):
            continue
        if _PROC_ADDRESS.match(m.group(1)):
            known += 1
            continue
        at = _AT.match(lines[i + 1]) if i + 1 < len(lines) else None
        if at is None:  # not a report (a heading is always followed by its location)
            continue
        if tool == KNOWN_TOOL and m.group(1).startswith(KNOWN_KIND) and _kernel(at) in KNOWN_KERNELS:
            known += 1
        else:
            others.append(m.group(1))
    if any(_NOT_PRINTED.search(line) for line in lines):
        known = 0
    return errors, min(known, errors), others


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 tests/sanitizer_log.py TOOL LOG", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8", errors="replace") as f:
        errors, known, others = read(argv[0], f.read())
    print(errors, known)
    for heading in others[:3]:
        print(heading)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
