"""``python -m tmlr_runtime.serving ARTIFACTS [options] -- SCRIPT [ARGS...]`` (or ``-- -m MODULE [ARGS...]``): run the
program unchanged, as ``python SCRIPT ARGS`` would, after ``tmlr_runtime.serve(ARTIFACTS, ...)``."""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from typing import Sequence

from ..errors import TmlrError
from . import serve


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tmlr_runtime.serving", description=__doc__)
    p.add_argument("artifacts", help="the folder tmlr-build --spec SPEC -o ARTIFACTS wrote")
    p.add_argument("--fallback", action="store_true", help="let Triton's JIT compile a launch no artifact serves "
                   "(with a warning and a line in the pending spec) instead of raising UnservedKernelError")
    p.add_argument("--pending-spec", metavar="FILE", help="where --fallback lists such launches (default ARTIFACTS/pending.jsonl)")
    p.add_argument("--stand-in-triton", metavar="PREFIX", nargs="*", help="without Triton, let the served kernels' modules "
                   "(and those under each PREFIX) import a stand-in for it")
    p.epilog = "then, after --, the program: a script (-- app.py ARGS) or a module (-- -m package.app ARGS)"
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args, program = p.parse_args(argv[:split]), argv[split + 1:]
    if not program or program == ["-m"]:
        p.error("name the program to run after --: a script (-- app.py ARGS) or a module (-- -m package.app ARGS)")
    stand_in = False if args.stand_in_triton is None else (args.stand_in_triton or True)
    try:
        serve(args.artifacts, mode="fallback" if args.fallback else "strict", pending_spec=args.pending_spec,
              stand_in_triton=stand_in)
    except TmlrError as e:
        print(f"python -m tmlr_runtime.serving: error: {e}", file=sys.stderr)
        return 1
    if program[0] == "-m":
        sys.argv = program[1:]
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = program
        sys.path[0] = os.path.dirname(os.path.abspath(program[0]))  # as `python SCRIPT` puts it first
        runpy.run_path(program[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
