"""The skip reasons a GPU run may show, and the check tests/gpu_all.sh applies to its log.

On one H200, ``pytest -m gpu`` skips exactly two kinds of test: those for an sm_80 GPU (stage
examples and cases built for sm_80 only) and those that need two GPUs. Their reasons start with the
phrases below. Any other skip in a GPU run is a test that did not run for a reason nobody accepted
(a package missing, a device query that failed, Triton's test files not given to the conformance test, ...),
and gpu_all.sh fails naming it::

    python3 tests/skip_reasons.py LOG     # LOG: pytest output with -rs; exit 1 listing every other skip

``GPU_ALL_ALLOW_SKIPS`` adds prefixes (separated by ``|``), e.g. ``needs an sm_90 GPU`` on an A100.
"""
from __future__ import annotations

import os
import re
import sys

NEEDS_TWO_GPUS = "needs two GPUs"
NEEDS_SM80 = "needs an sm_80 GPU"
NEEDS_SM90 = "needs an sm_90 GPU"  # not allowed on the H200: there these tests must run
# the conformance test (tests/conformance/test_conformance_gpu.py) without Triton's own test files: not allowed, so a
# GPU run without them fails; carry them (TMLR_TRITON_TESTS=DIR, or .conformance/triton-tests) or allow it by name
NEEDS_TRITON_TESTS = "needs Triton's language tests"
# the serving-library corpus (tests/gpu/test_corpus_gpu.py) without its artifacts: not allowed, so a GPU run without
# them fails; carry them (TMLR_CORPUS=DIR, or .corpus of the checkout: python3 tools/corpus.py build) or allow it by name
NEEDS_CORPUS = "needs the serving-library corpus"
# CPU tests of the compiled ELF walk (launch/_fastlaunch.c's elf_walk, artifact/elf.py's _walk) on the pure-Python path
NO_COMPILED_WALK = "no compiled ELF walk here (TMLR_PURE_PYTHON is set or the extension is not built)"

ALLOWED: tuple[str, ...] = (NEEDS_SM80, NEEDS_TWO_GPUS)

# pytest -rs: "SKIPPED [3] tests/test_x.py:12: reason" (no ":line" for a module-level skip)
_SKIPPED = re.compile(r"^SKIPPED \[\d+\] \S+?: (.*)$")


def unexpected_skips(log: str, allowed: tuple[str, ...] = ALLOWED) -> list[str]:
    """The ``SKIPPED`` summary lines of ``log`` whose reason starts with none of ``allowed``."""
    out = []
    for line in log.splitlines():
        m = _SKIPPED.match(line)
        if m and not m.group(1).startswith(allowed):
            out.append(line)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 tests/skip_reasons.py PYTEST_LOG", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8", errors="replace") as f:
        log = f.read()
    extra = tuple(p for p in os.environ.get("GPU_ALL_ALLOW_SKIPS", "").split("|") if p)
    bad = unexpected_skips(log, ALLOWED + extra)
    for line in bad:
        print(f"unexpected skip: {line}")
    if bad:
        allowed = "; ".join(repr(p) for p in ALLOWED + extra)
        print(f"{len(bad)} skip line(s) with a reason that is not allowed (allowed: {allowed})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
