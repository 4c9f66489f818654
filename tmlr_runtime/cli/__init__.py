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
from .artifact import DEVICE_CHECK, NO_GPU, SCHEMA_CHECK, CheckResult, inspect_kernel, print_inspect_kernel, verify_kernel

_VERDICT = {True: "ok", False: "FAIL", None: "skipped"}


def inspect_artifact(directory: str, with_device: bool = True, cc: tuple[int, int] | None = None) -> dict[str, Any]:
    """Everything a person wants to know about an artifact or a family, as a JSON-able dict; ``cc``: a compute
    capability (major, minor) to say what a GPU of it loads."""
    found = read(os.path.abspath(directory))
    if found.kind == "family":
        return family_cli.inspect_family(found, cc)
    return inspect_kernel(directory, found, with_device, cc)


def verify_artifact(directory: str, with_device: bool = True, cc: tuple[int, int] | None = None) -> list[CheckResult]:
    """``(check, passed, detail)`` for every check of an artifact or a family (see ``verify_kernel``); ``cc``: a
    compute capability that something must load on (each variant of a family)."""
    try:
        found = read(os.path.abspath(directory))
    except TmlrError as e:
        return [(SCHEMA_CHECK, False, str(e))]
    if found.kind == "family":
        return family_cli.verify_family(directory, with_device, found, cc)
    return verify_kernel(directory, with_device, found, cc)


def _print_inspect(info: dict[str, Any]) -> None:
    (family_cli.print_inspect_family if info["kind"] == "family" else print_inspect_kernel)(info)
    for problem in info["problems"]:
        print(f"  DAMAGED   {problem}")
    if info["problems"]:
        print(f"  run `tmlr verify {info['directory']}` for every check")


def _capability(parser: argparse.ArgumentParser, text: str | None) -> tuple[int, int] | None:
    """``--cc X.Y``; anything else is a usage error (exit 2): ``9`` or ``90`` could mean 9.0 or 0.9."""
    try:
        return None if text is None else Target.device(text)
    except ValueError:
        parser.error(f"--cc takes a compute capability as X.Y, e.g. 9.0 (H100) or 8.6; {text!r} is not one")


def _nothing_loads(info: dict[str, Any]) -> str | None:
    """What of ``inspect --cc``'s answer fails the deploy check (nothing loads; in a family, on some variant), or None."""
    if info["kind"] == "kernel":
        return None if info["on"]["loads"] else f"nothing of {info['directory']} loads on compute capability {info['on']['cc']}"
    on = info["on"]
    failing = [v["dir"] for v in info["variants"] if not v["on"]["loads"]]
    return None if not failing else (f"{len(failing)} of {on['variants']} variants of {info['directory']} load nothing on compute "
                                     f"capability {on['cc']} ({', '.join(failing[:4])}{', …' if len(failing) > 4 else ''})")


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
    for name, text, cc in (
            ("inspect", "show an artifact (exit 1 when a cubin does not match metadata.json, or nothing loads on --cc)",
             "say what a GPU of compute capability X.Y (e.g. 9.0, 12.0) loads: a cubin, or the PTX the driver compiles "
             "there; exit 1 when nothing does (for a family: for any variant)"),
            ("verify", "check an artifact without launching it (exit 1 on failure)",
             "check too that a GPU of compute capability X.Y (e.g. 9.0, 12.0) loads it (every variant of a family)")):
        p = sub.add_parser(name, help=text)
        p.add_argument("directory", help="an artifact, a family, or the folder tmlr-build -o wrote (each artifact in it)")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--no-device", action="store_true", help="do not touch the GPU even if there is one")
        p.add_argument("--cc", metavar="X.Y", help=cc)
    sub.choices["verify"].add_argument("--strict", action="store_true",
                                       help="a check that could not be made (no GPU, --no-device, no jsonschema) fails too")
    family_cli.add_tune_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "tune":
            return family_cli.run_tune(args)
        args.cc = _capability(sub.choices[args.command], args.cc)
        directories = artifacts_in(args.directory) or [args.directory]
        run = _inspect if args.command == "inspect" else _verify
        outcomes = [run(d, args, header=len(directories) > 1) for d in directories]
        if args.json:
            print(json.dumps(outcomes[0][1] if len(directories) == 1 else [doc for _, doc in outcomes], indent=1))
        elif args.command == "verify":
            print(_summary(outcomes, args.strict))
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
    failing = None if args.cc is None else _nothing_loads(info)
    if failing:
        print(f"tmlr inspect: --cc: {failing}", file=sys.stderr)
    return (1 if info["problems"] or failing else 0), info


def _verify(directory: str, args: argparse.Namespace, header: bool) -> tuple[int, Any]:
    results = verify_artifact(directory, with_device=not args.no_device, cc=args.cc)
    if args.no_device:
        results.append((DEVICE_CHECK, None, "not checked: loading the cubin on a device (--no-device)"))
    doc = [{"check": c, "ok": ok, "verdict": _VERDICT[ok], "detail": d} for c, ok, d in results]
    if not args.json:
        if header:
            print(f"== {directory}")
        for check, ok, detail in results:  # why there is no GPU: once, in the summary
            detail = NO_GPU if detail.startswith(NO_GPU) else detail
            print(f"{_VERDICT[ok]:7s}  {check}{'  - ' + detail if detail else ''}")
    # a family without a shipped tuning table is complete: that row informs, it stands for no check left undone
    skipped = [c for c, ok, _ in results if ok is None and c != family_cli.TABLE_FILE]
    if args.strict and skipped:
        print(f"tmlr verify: --strict: {len(skipped)} check(s) of {directory} skipped, which counts as a failure: "
              f"{'; '.join(skipped)}", file=sys.stderr)
    failed = any(ok is False for _, ok, _ in results) or (args.strict and bool(skipped))
    return (1 if failed else 0), (doc if not header else {"directory": directory, "checks": doc})


def _summary(outcomes: list[tuple[int, Any]], strict: bool) -> str:
    """``tmlr verify``'s last lines: how many artifacts passed and failed, and each reason a check was skipped (no GPU,
    with why) once, with the artifacts it held for."""
    checks = [doc["checks"] if isinstance(doc, dict) else doc for _, doc in outcomes]
    skipped: dict[str, int] = {}
    for rows in checks:
        for detail in {r["detail"] for r in rows if r["ok"] is None and r["check"] != family_cli.TABLE_FILE}:
            skipped[detail] = skipped.get(detail, 0) + 1
    n, failed = len(outcomes), sum(status for status, _ in outcomes)
    lines = [f"tmlr verify: {n - failed} passed, {failed} failed (of {n} artifact{'s' if n != 1 else ''})"]
    lines += [f"  skipped in {count} of {n}: {detail}" for detail, count in skipped.items()]
    if skipped:
        lines.append("  --strict: a skipped check failed each of them" if strict else
                     "  a skipped check is no failure; --strict makes it one")
    return "\n".join(lines)


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
