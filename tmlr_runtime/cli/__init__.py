"""``tmlr``: look at and check artifacts where they are deployed (no Triton needed); ``tmlr --help`` says how.

An artifact is inspected and verified by ``cli/artifact.py``, a family by ``cli/family.py``; DIR may also be
the folder ``tmlr-build -o`` wrote (each artifact in it). Errors become messages and exit codes in one place,
and a reader that closes the pipe early (``tmlr inspect DIR | head``) ends it with status 141, as SIGPIPE does."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .. import __version__
from ..abi import Target
from ..launch import compiled
from ..errors import TmlrError
from ..artifact.output_folder import artifacts_in
from ..artifact.read import read
from . import family as family_cli
from .artifact import DEVICE_CHECK, SCHEMA_CHECK, CheckResult, inspect_kernel, print_inspect_kernel, verify_kernel

_VERDICT = {True: "ok", False: "FAIL", None: "skipped"}


def inspect_artifact(directory: str, with_device: bool = True, cc: tuple[int, int] | None = None) -> dict[str, Any]:
    """Everything a person wants to know about an artifact or a family, as a JSON-able dict; ``cc``: a compute
    capability (major, minor) to say what a GPU of it loads."""
    found = read(os.path.abspath(directory))
    if found.kind == "family":
        return family_cli.inspect_family(found, cc)
    return inspect_kernel(directory, found, with_device, cc)


def verify_artifact(directory: str, with_device: bool = True) -> list[CheckResult]:
    """``(check, passed, detail)`` for every check of an artifact or a family (see ``verify_kernel``)."""
    try:
        found = read(os.path.abspath(directory))
    except TmlrError as e:
        return [(SCHEMA_CHECK, False, str(e))]
    if found.kind == "family":
        return family_cli.verify_family(directory, with_device, found)
    return verify_kernel(directory, with_device, found)


def _print_inspect(info: dict[str, Any]) -> None:
    (family_cli.print_inspect_family if info["kind"] == "family" else print_inspect_kernel)(info)
    for problem in info["problems"]:
        print(f"  DAMAGED   {problem}")
    if info["problems"]:
        print(f"  run `tmlr verify {info['directory']}` for every check")


def _capability(text: str) -> tuple[int, int]:
    try:
        return Target.device(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


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
    for name, text in (("inspect", "show an artifact (exit 1 when a cubin does not match metadata.json)"),
                       ("verify", "check an artifact without launching it (exit 1 on failure)")):
        p = sub.add_parser(name, help=text)
        p.add_argument("directory", help="an artifact, a family, or the folder tmlr-build -o wrote (each artifact in it)")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--no-device", action="store_true", help="do not touch the GPU even if there is one")
    sub.choices["inspect"].add_argument("--cc", type=_capability, metavar="X.Y",
                                        help="say what a GPU of compute capability X.Y (e.g. 9.0, 10.0) loads: a cubin, or "
                                             "the PTX the driver compiles there")
    sub.choices["verify"].add_argument("--strict", action="store_true",
                                       help="a check that could not be made (no GPU, --no-device, no jsonschema) fails too")
    family_cli.add_tune_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "tune":
            return family_cli.run_tune(args)
        directories = artifacts_in(args.directory) or [args.directory]
        run = _inspect if args.command == "inspect" else _verify
        outcomes = [run(d, args, header=len(directories) > 1) for d in directories]
        if args.json:
            print(json.dumps(outcomes[0][1] if len(directories) == 1 else [doc for _, doc in outcomes], indent=1))
        return max(status for status, _ in outcomes)
    except TmlrError as e:
        print(f"tmlr {args.command}: error: {e}", file=sys.stderr)
        return 1


def _inspect(directory: str, args: argparse.Namespace, header: bool) -> tuple[int, Any]:
    info = inspect_artifact(directory, with_device=not args.no_device, cc=args.cc)
    if not args.json:
        if header:
            print(f"== {directory}")
        _print_inspect(info)
    return (1 if info["problems"] else 0), info


def _verify(directory: str, args: argparse.Namespace, header: bool) -> tuple[int, Any]:
    results = verify_artifact(directory, with_device=not args.no_device)
    if args.no_device:
        results.append((DEVICE_CHECK, None, "not checked: loading the cubin on a device (--no-device)"))
    doc = [{"check": c, "ok": ok, "verdict": _VERDICT[ok], "detail": d} for c, ok, d in results]
    if not args.json:
        if header:
            print(f"== {directory}")
        for check, ok, detail in results:
            print(f"{_VERDICT[ok]:7s}  {check}{'  - ' + detail if detail else ''}")
    # a family without a shipped tuning table is complete: that row informs, it stands for no check left undone
    skipped = [c for c, ok, _ in results if ok is None and c != family_cli.TABLE_FILE]
    if args.strict and skipped:
        print(f"tmlr verify: --strict: {len(skipped)} check(s) of {directory} skipped, which counts as a failure: "
              f"{'; '.join(skipped)}", file=sys.stderr)
    failed = any(ok is False for _, ok, _ in results) or (args.strict and bool(skipped))
    return (1 if failed else 0), (doc if not header else {"directory": directory, "checks": doc})


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
