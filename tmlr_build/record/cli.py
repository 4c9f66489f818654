"""``tmlr-build record -o SPEC -- CMD ARGS...``: run a command, record every Triton kernel its Python processes
launch into the spec file SPEC (merged with what it holds), then say what was recorded.

The command runs as given, with this package's ``site/`` folder first on its PYTHONPATH and TMLR_RECORD_SPEC
naming the spec: each Python process it starts (workers and subprocesses too) loads ``site/sitecustomize.py``,
which records that process (record/hook.py). So any command works (``python serve.py``, ``torchrun ...``, a shell
script), and this process never imports Triton. Its exit status is the command's.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from typing import Any, Sequence

from ..cli import _Parser
from ..common.errors import BuildError, UsageError
from . import spec_file

SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")


def make_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tmlr-build record",
                description="Run CMD and record every @triton.jit kernel its Python processes launch (signatures, "
                            "constexprs, launch options, autotune configs and the configs Triton chose) into the spec "
                            "file SPEC, for tmlr-build --spec SPEC -o OUT. An existing SPEC is merged into: your own "
                            "entries and keys are kept, the recorder's entries (\"recorded\": true) extended. "
                            "docs/record.md says more.",
                epilog="example:\n  tmlr-build record -o kernels.json -- python serve.py --port 8000\n"
                       "  tmlr-build --spec kernels.json -o artifacts",
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--out", required=True, metavar="SPEC", help="the spec file to write or merge into")
    p.add_argument("--append", action="store_true",
                   help="merge into SPEC (the default: a recording never drops what SPEC holds; accepted for scripts "
                        "that say so)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the command to run")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(list(sys.argv[2:] if argv is None else argv))
    except BuildError as e:
        print(f"tmlr-build record: {e}", file=sys.stderr)
        return 2 if isinstance(e, UsageError) else 1


def _run(argv: list[str]) -> int:
    args = make_parser().parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError("name the command to record after --, e.g. tmlr-build record -o kernels.json -- python "
                         "serve.py")
    path = os.path.abspath(args.out)
    if not os.path.isdir(os.path.dirname(path)):
        raise UsageError(f"{args.out}: its folder {os.path.dirname(path)} does not exist")
    before = spec_file.read(path)  # a file that is no spec stops here, before anything runs
    env = dict(os.environ, TMLR_RECORD_SPEC=path, TMLR_RECORD_QUIET="1",
               PYTHONPATH=os.pathsep.join(filter(None, [SITE, os.environ.get("PYTHONPATH")])))
    status = _run_command(command, env)
    for line in summary(args.out, before, spec_file.read(path)):
        print(f"tmlr-build record: {line}", file=sys.stderr)
    return status


def _run_command(command: list[str], env: dict[str, str]) -> int:
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as e:
        raise UsageError(f"{command[0]}: cannot be run ({e.strerror or e})") from None
    while True:
        try:
            status = child.wait()
            break
        except KeyboardInterrupt:  # Ctrl-C reached the command too: wait for it to stop and write its recording
            continue
    return 128 + signal.Signals(-status).value if status < 0 else status


def summary(shown: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    """What a recording added to the spec ``shown``: entries new and extended, kernels not recorded."""
    old = {json.dumps([e.get("module"), e.get("qualname"), e.get("source"), e.get("name")]): e
           for e in (before or {}).get("kernels", []) if isinstance(e, dict) and e.get("recorded") is True}
    new = [e for e in (after or {}).get("kernels", []) if isinstance(e, dict) and e.get("recorded") is True]
    lines = []
    added = extended = 0
    for e in new:
        was = old.get(json.dumps([e.get("module"), e.get("qualname"), e.get("source"), e.get("name")]))
        added += was is None
        extended += was is not None and was != e
    reports = [r for r in (after or {}).get("not_recorded", []) if r not in (before or {}).get("not_recorded", [])]
    if not new and not reports:
        lines.append(f"{shown}: no @triton.jit launch was recorded. The recorder loads in each Python process "
                     "through PYTHONPATH (a sitecustomize module): a process started with python -I, -E or -S, or "
                     "with PYTHONPATH replaced, is not recorded")
        return lines
    lines.append(f"{shown}: {len(new)} recorded entries ({added} new, {extended} extended); build them with: "
                 f"tmlr-build --spec {shown} -o OUT")
    lines += [f"not recorded: {r.get('kernel')}: {r.get('reason')}" for r in reports if isinstance(r, dict)]
    return lines
