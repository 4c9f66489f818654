"""``tmlr``: look at and check artifacts where they are deployed (no Triton needed).

    tmlr inspect DIR [--json] [--no-device]   the call signature, variants, launch data, resources, provenance
    tmlr verify DIR [--json] [--no-device]    fields (and the schema file itself, with jsonschema installed), hashes,
                                              entry symbols, and with a GPU that this device can load it; exit 1 on a failure
    tmlr tune DIR --cases FILE.py:func        a family: benchmark its autotune configs here, write DIR/tuning.json

An artifact directory is inspected and verified by ``cli/artifact.py``, a family directory (index of
schema v3) by ``cli/family.py``.

Errors become messages and exit codes in one place. A reader that closes the pipe early
(``tmlr inspect DIR | head``) ends it with status 141, as SIGPIPE ends other commands, and no traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .. import __version__
from ..launch import compiled
from ..errors import TmlrError
from ..artifact.read import read
from . import family as family_cli
from .artifact import DEVICE_CHECK, SCHEMA_CHECK, CheckResult, inspect_kernel, print_inspect_kernel, verify_kernel

_VERDICT = {True: "ok", False: "FAIL", None: "skipped"}


def inspect_artifact(directory: str, with_device: bool = True) -> dict[str, Any]:
    """Everything a person wants to know about an artifact or a family, as a JSON-able dict."""
    found = read(directory)
    if found.kind == "family":
        return family_cli.inspect_family(found)
    return inspect_kernel(directory, found, with_device)


def verify_artifact(directory: str, with_device: bool = True) -> list[CheckResult]:
    """``(check, passed, detail)`` for every check of an artifact or a family (see ``verify_kernel``)."""
    try:
        found = read(directory)
    except TmlrError as e:
        return [(SCHEMA_CHECK, False, str(e))]
    if found.kind == "family":
        return family_cli.verify_family(directory, with_device, found)
    return verify_kernel(directory, with_device, found)


class _Version(argparse.Action):
    """``--version``: two lines, as written (argparse's own action rewraps them into one)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"tmlr {__version__}\n{compiled.describe()}")
        parser.exit()


def _run(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="tmlr", description="Inspect and verify tmlr artifacts.")
    parser.add_argument("--version", action=_Version, help="show the version and which launch path is active, and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("inspect", "show an artifact"), ("verify", "check an artifact without launching it (exit 1 on failure)")):
        p = sub.add_parser(name, help=text)
        p.add_argument("directory")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--no-device", action="store_true", help="do not touch the GPU even if there is one")
    family_cli.add_tune_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "tune":
            return family_cli.run_tune(args)
        if args.command == "inspect":
            info = inspect_artifact(args.directory, with_device=not args.no_device)
            if args.json:
                print(json.dumps(info, indent=1))
            else:
                (family_cli.print_inspect_family if info.get("schema_version") == 3 else print_inspect_kernel)(info)
            return 0
        results = verify_artifact(args.directory, with_device=not args.no_device)
        if args.no_device:
            results.append((DEVICE_CHECK, None, "not checked: loading the cubin on a device (--no-device)"))
        if args.json:
            print(json.dumps([{"check": c, "ok": ok, "verdict": _VERDICT[ok], "detail": d} for c, ok, d in results], indent=1))
        else:
            for check, ok, detail in results:
                print(f"{_VERDICT[ok]:7s}  {check}{'  - ' + detail if detail else ''}")
        return 1 if any(ok is False for _, ok, _ in results) else 0
    except TmlrError as e:
        print(f"tmlr {args.command}: error: {e}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """The ``tmlr`` command; returns the exit status."""
    try:
        status = _run(argv)
        sys.stdout.flush()  # a closed pipe must show here, not at interpreter exit
        return status
    except BrokenPipeError:
        # The reader stopped (``tmlr inspect DIR | head``): no traceback. Later writes, the
        # interpreter's own flush at exit included, go to /dev/null; the status is a shell's for a
        # command ended by SIGPIPE (128 + 13), as `cat` would give.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
