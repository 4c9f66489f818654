"""``tmlr-build``: a thin command line over :func:`tmlr_build.builder.build.build`.

All error reporting happens in :func:`main`: a BuildError becomes its message on stderr and exit
status 1 (2 for usage errors); nothing the user can cause prints a traceback.

The ``tmlr-build`` command (``__main__.py``) starts the compile processes' server before it imports
this module, so that the server's import of Triton runs while this process imports, parses and
plans; what only this process needs later (the spec reader) is imported there, not here.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
from typing import Any, Sequence

from .builder import other_python
from .builder.build import BuildConfig, BuildReport, build
from .builder.sources import KernelRequest, check_name, parse_source
from .common import devices
from .common.arch import comma_separated, parse_arch_list, supported_capabilities
from .common.errors import (BuildError, BuildFailedError, InputError, OptionError, OutputPathError, ShardMismatchError,
                            UsageError)
from .common.jobs import IR_STAGES
from .common.signature import parse_arg_names, parse_constexpr_assignments, parse_constexpr_value
from .common.triton_check import check_triton_version
from .version import __version__


_CAPABILITY = re.compile(r"(sm_?)?\d{2,3}a?,?", re.I)  # a word of an --arch list: 90, sm_90a, 80,


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def _artifact_name(text: str) -> str:
    try:
        return check_name(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def make_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="tmlr-build",
        description="Compile Triton kernels into tmlr artifacts (OUT/<kernel>/metadata.json + one cubin per arch). "
                    "Needs Triton 3.3 to 3.9, no GPU.",
        epilog="examples:\n"
               "  tmlr-build k.py:add --signature '*fp16:16, *fp16:16, *fp16:16, i32, 1024' -o out --arch 80,90\n"
               "  tmlr-build k.py:add --signature ... -o out --arch 80,90 --ptx   (+ compute_80 PTX for newer GPUs)\n"
               "  tmlr-build add.ttgir -o out            (arch and num-warps come from the .ttgir)\n"
               "  tmlr-build add.ptx --metadata add.json -o out\n"
               "  tmlr-build --spec examples/kernels.json -o out --arch 80,90\n"
               "  tmlr-build --spec kernels.json -o shard-2 --arch 80,90 --shard 2/4   (one of 4 CI jobs; then:)\n"
               "  tmlr-build merge shard-1 shard-2 shard-3 shard-4 -o out\n"
               "  tmlr-build --python /venv-triton39/bin/python --spec examples/kernels.json -o out39 --arch 80,90\n"
               "  tmlr-build k.py:add --signature ... -o out --arch 90 --dump-passes d.log   (MLIR pass dump)\n"
               "  tmlr-build --split-dump d.log -o split && tmlr-build split/NN-Pass.mlir -o out --arch 90",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("sources", nargs="*", metavar="SRC",
                   help="file.py:kernel (a file inside a package is imported as its member), package.module:kernel "
                        "(found as python -m finds it), .ttir, .ttgir, .llir, .ptx, .cubin, a Triton cache entry "
                        "directory, or one NN-Pass.mlir file that --split-dump wrote (index.json beside it)")
    p.add_argument("-o", "--out", required=True, help="output directory (receives one folder per kernel)")
    p.add_argument("--split-dump", metavar="FILE", dest="split_dump",
                   help="split an MLIR_ENABLE_DUMP=1 log into OUT/NN-PassName.mlir + OUT/index.json and exit")
    p.add_argument("--spec", metavar="FILE",
                   help='JSON file listing kernels to build: {"arch": [80, 90], "options": {"num_warps": 4}, '
                        '"kernels": [{"source": "k.py", "kernel": "add", "signature": "*fp32:16, i32, 1024"}, ...]}; '
                        'an entry may also give "constexprs", "options", "arch", "name", "metadata", "arg_names". '
                        "Paths are relative to the spec file; --arch replaces its \"arch\", option flags override "
                        "its options. Every key: docs/spec-format.md. Also writes OUT/serve.json (which Python kernel each "
                        "artifact serves: tmlr_runtime.serve(OUT), docs/serving.md)")
    p.add_argument("--device", metavar="GPU",
                   help="the GPU a Python kernel's import is answered as (torch.cuda's and Triton's device queries: "
                        f"name, capability, SMs, shared memory): one of {', '.join(devices.PROFILES)}, for the archs "
                        "it runs; default: each arch's own GPU (" + ", ".join(f"{c}: {k}" for c, k in devices.DEFAULT_FOR.items())
                        + "); replaces a spec's \"device\"")
    p.add_argument("--arch", metavar="CC,CC", help="one word of comma-separated capabilities, e.g. --arch 80,90 (not "
                   f"'80 90'); supported: {','.join(map(str, supported_capabilities()))} (90 -> sm_90a, 100 -> sm_100a); "
                   ".ttgir/.llir/.ptx/.cubin inputs default to their own")
    g = p.add_argument_group("signature (for every SRC)")
    g.add_argument("--signature", metavar="'ENTRY, ...'",
                   help="one entry per parameter, in the kernel's order, separated by commas: a type for a runtime "
                        "parameter, the value alone for a tl.constexpr (1024, not BLOCK=1024), e.g. "
                        "'*fp16:16, i32:16, i32:1, fp32, 1024' (:16 divisible by 16, :1 specialized to 1)")
    g.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                   help="set a constexpr by name, e.g. --constexpr BLOCK=1024, and leave it out of --signature "
                        "(repeatable; for an IR input or cache entry: give back one Triton left out of it)")
    g.add_argument("--arg-names", metavar="A,B,...", help="names of the parameters of an IR input (default: the IR's, "
                                                          "Triton 3.5+, else arg0, ...; with --constexpr: all, in order)")
    g.add_argument("--metadata", metavar="FILE", help="Triton's metadata JSON of the original compile (needed for .llir/.ptx/.cubin "
                                      "unless <stem>.json is beside the input)")
    _variant_arguments(p.add_argument_group("variants (for every SRC; a spec entry has its own keys)"))
    g.add_argument("--name", type=_artifact_name,
                   help="artifact name, when it should differ from the kernel's (letters, digits, _)")
    o = p.add_argument_group("compile options")
    o.add_argument("--num-warps", type=int, metavar="N")
    o.add_argument("--num-stages", type=int, metavar="N")
    o.add_argument("--num-ctas", type=int, metavar="N")
    o.add_argument("--maxnreg", type=int, metavar="N")
    o.add_argument("--no-fp-fusion", action="store_true", help="ptxas --fmad=false")
    o.add_argument("--cooperative", action="store_true", help="launch_cooperative_grid (launch attribute only)")
    o.add_argument("--debug", action="store_true", help="Triton debug mode (device asserts)")
    o.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="any other Triton CUDAOptions field, e.g. --option default_dot_input_precision=ieee")
    _output_arguments(p.add_argument_group("output"))
    p.add_argument("--python", metavar="PATH",
                   help="build with the Triton of another Python interpreter (e.g. a venv's bin/python holding "
                        "triton==3.9.0): the command runs again as PATH -m tmlr_build with this tmlr-build; that "
                        "interpreter needs a supported Triton and jsonschema")
    p.add_argument("--version", action=_VersionAction, help="show tmlr-build's version, the Triton and the ptxas it "
                                                             "builds with, and exit")
    p.add_argument("--json", action="store_true",
                   help="print what was written (or the errors) as one JSON object on stdout, for scripts")
    return p


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text())
        parser.exit()


def version_text() -> str:
    """tmlr-build's version, then the Triton and each ptxas (with the archs it serves) a build would use,
    as a compile worker finds them."""
    from .builder.workers import Task, run_tasks

    lines = [f"tmlr-build {__version__}"]
    try:
        check_triton_version()  # missing or unsupported: the install hint, without starting a worker
        found = run_tasks([Task("tmlr_build.compile.toolchain:describe", (), "tmlr-build --version")], 1)[0]
        if isinstance(found, BuildError):
            raise found
        lines += found
    except BuildError as e:
        lines.append(f"Triton: {e}")
    return "\n".join(lines)


def _variant_arguments(v: argparse._ArgumentGroup) -> None:
    v.add_argument("--types", action="append", default=[], metavar="T=A,B",
                   help="a type variable of the signature, e.g. --types T=fp16,bf16 with '*T:16, ...': one variant per "
                        "type (repeatable for more variables)")
    v.add_argument("--configs", metavar="all|I,J",
                   help="the @triton.autotune configs to build, by index (default: all of them)")
    v.add_argument("--heuristic", action="append", default=[], metavar="NAME=V1,V2",
                   help="values to build for a @triton.heuristics value that is not a plain bool expression")
    v.add_argument("--max-variants", type=int, default=None, metavar="N",
                   help="refuse a kernel that would make more than N variants (types x patterns x configs x "
                        "heuristic values x archs; default 256)")


def _output_arguments(b: argparse._ArgumentGroup) -> None:
    b.add_argument("--keep-ir", action="store_true", help="also write every stage under OUT/<kernel>/ir/<arch>/")
    b.add_argument("--stop-after", choices=IR_STAGES, dest="stop_after",
                   help="write the IR up to this stage (and what rebuilding from it needs), no cubin")
    b.add_argument("--no-line-info", action="store_true", help="strip source line info from the cubin")
    b.add_argument("--ptx", action="store_true",
                   help="also keep each portable target's PTX (sm_80 -> compute_80, not sm_90a), which the driver compiles "
                        "at load on a newer GPU that no cubin runs on")
    b.add_argument("--dump-passes", metavar="FILE", dest="dump_passes",
                   help="write Triton's IR before each MLIR pass to FILE (MLIR_ENABLE_DUMP=1 MLIR_DUMP_PATH=FILE "
                        "in the compile worker only; one SRC, one --arch); split it with --split-dump")
    b.add_argument("-j", "--jobs", type=int, metavar="N", help="parallel compile workers (default: CPU count)")
    b.add_argument("--shard", metavar="I/N", help="compile part I of N of the build (one job of a CI matrix) into the "
                   "shard folder -o; tmlr-build merge SHARD_FOLDER... -o OUT then writes the artifacts a single build "
                   "writes")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress or summary on stderr")


def _option_value(text: str) -> Any:
    """``8`` -> 8, ``true`` -> True, ``1,1,1`` -> [1, 1, 1], ``ieee`` -> "ieee" (JSON also accepted)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    if "," in text:
        return [_option_value(part.strip()) for part in text.split(",")]
    try:
        return parse_constexpr_value(text)
    except BuildError:
        return text.strip()


def _explicit_options(args: argparse.Namespace) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"--option {item!r}: write KEY=VALUE, e.g. --option num_stages=2")
        options[key.strip()] = _option_value(value)
    flags = {"num_warps": args.num_warps, "num_stages": args.num_stages, "num_ctas": args.num_ctas,
             "maxnreg": args.maxnreg}
    options.update({k: v for k, v in flags.items() if v is not None})
    if args.no_fp_fusion:
        options["enable_fp_fusion"] = False
    if args.cooperative:
        options["launch_cooperative_grid"] = True
    if args.debug:
        options["debug"] = True
    return options


def requests_from_args(args: argparse.Namespace) -> tuple[list[KernelRequest], Any]:
    """Kernel requests from the command line (and the spec file), plus the archs to build."""
    if not args.sources and not args.spec:
        raise UsageError("nothing to build: name SRC files or a --spec file (see tmlr-build --help)")
    given = _given(args)
    archs = parse_arch_list(args.arch) if args.arch else None
    device = devices.profile(args.device).key if args.device else None
    requests: list[KernelRequest] = []
    if args.spec:
        from .builder.spec import load_spec

        spec_requests, spec_archs = load_spec(args.spec)
        archs = archs or spec_archs
        requests += [KernelRequest(**{**vars(r), "options": {**r.options, **given["options"]},
                                      "default_options": r.default_options - set(given["options"]), "ptx": r.ptx or args.ptx,
                                      "device": device or r.device})
                     for r in spec_requests]
    for text in args.sources:
        requests.append(KernelRequest(**parse_source(text)._asdict(), **given, **_given_variants(args), ptx=args.ptx,
                                      metadata_path=os.path.abspath(args.metadata) if args.metadata else None,
                                      device=device))
    return requests, archs


def _given(args: argparse.Namespace) -> dict[str, Any]:
    """What the command line says about every SRC: KernelRequest fields."""
    return {"name": args.name, "signature": args.signature, "constexprs": parse_constexpr_assignments(args.constexpr),
            "arg_names": tuple(parse_arg_names(args.arg_names)) if args.arg_names else None,
            "options": _explicit_options(args)}


def _given_variants(args: argparse.Namespace) -> dict[str, Any]:
    """What the command line says about the variants of every SRC: KernelRequest fields."""
    configs: Any = None
    if args.configs is not None:
        text = args.configs.strip()
        try:
            configs = "all" if text == "all" else [int(part) for part in text.split(",")]
        except ValueError:
            raise UsageError(f"--configs {args.configs!r}: write all, or config indices like 0,2") from None
    return {"types": _name_lists(args.types, "--types", lambda w: w.strip()) or None, "configs": configs,
            "heuristics": _name_lists(args.heuristic, "--heuristic", parse_constexpr_value) or None}


def _name_lists(items: Sequence[str], flag: str, convert: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not name.strip().isidentifier() or not values.strip():
            raise UsageError(f"{flag} {item!r}: write NAME=V1,V2, e.g. --types T=fp16,bf16")
        out[name.strip()] = [convert(v) for v in values.split(",")]
    return out


def _check_arch_words(argv: Sequence[str]) -> None:
    """``--arch 80 90``: argparse would take 90 for a SRC, or refuse it as an unknown argument, without
    saying that --arch is one comma-separated word."""
    for i, word in enumerate(argv[:-2]):
        if word == "--arch":
            more = list(itertools.takewhile(lambda w: _CAPABILITY.fullmatch(w) and not os.path.exists(w), argv[i + 2:]))
            if more:
                raise comma_separated([argv[i + 1], *more])


def run(argv: Sequence[str] | None = None) -> tuple[BuildReport, bool]:
    """Parse ``argv`` and build (or merge shards); raises BuildError subclasses. Returns the report and --quiet."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["merge"]:
        return _merge(argv[1:])
    _check_arch_words(argv)
    args = make_parser().parse_args(argv)
    return run_args(args), args.quiet


def _merge_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tmlr-build merge", description="Write the artifacts of a --shard I/N build from its N shard "
                "folders: the bytes a single build writes. Run it where the shards ran (the shards record the command "
                "line, which names the spec and sources as given), with the same Triton.")
    p.add_argument("shards", nargs="+", metavar="SHARD_FOLDER", help="the -o folders of the N --shard builds")
    p.add_argument("-o", "--out", required=True, help="output directory (receives one folder per kernel)")
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="parallel workers while planning (default: CPU count)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress or summary on stderr")
    p.add_argument("--json", action="store_true", help="print what was written (or the errors) as one JSON object")
    return p


def _merge(argv: Sequence[str]) -> tuple[BuildReport, bool]:
    """``tmlr-build merge SHARD... -o OUT``: the build the shards record, each compile's outcome read from them."""
    from .builder import shards

    given = _merge_parser().parse_args(argv)
    found = shards.read_shards(given.shards)
    if os.path.isfile(os.path.join(given.out, shards.SHARD_FILE)):
        raise OutputPathError(f"{given.out}: a shard folder; merge into another folder (-o receives the artifacts)")
    defaults = vars(make_parser().parse_args(["-o", given.out]))
    if set(found.args) != set(defaults) - shards.NOT_RECORDED:
        raise ShardMismatchError(f"{found.dirs[0]}: its command line was recorded by another tmlr-build; build the "
                                 "shards and merge with one tmlr-build", "args")
    args = argparse.Namespace(**{**defaults, **found.args, "out": given.out, "jobs": given.jobs, "quiet": given.quiet,
                                 "json": given.json})
    return run_args(args, merge=found), given.quiet


def run_args(args: argparse.Namespace, merge: Any = None) -> BuildReport:
    """Build what the parsed command line ``args`` asks (``merge``: a ShardSet whose outcomes it takes)."""
    if args.python:
        raise UsageError("--python runs the whole tmlr-build command in another interpreter: give it to the command "
                         "(or tmlr_build.cli.main), or call run() in that interpreter")
    if args.split_dump:
        from .passdump.split_dump import split_dump

        if args.shard:
            raise UsageError("--shard with --split-dump: splitting a log compiles nothing; drop --shard")
        entries = split_dump(args.split_dump, args.out)
        return BuildReport(written=[os.path.join(args.out, e.file) for e in entries])
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give at least 1 worker")
    if args.max_variants is not None and args.max_variants < 1:
        raise UsageError(f"--max-variants {args.max_variants}: give at least 1")
    config = dict(stop_after=args.stop_after, keep_ir=args.keep_ir, line_info=not args.no_line_info,
                  max_workers=args.jobs, progress=not args.quiet, dump_passes=args.dump_passes,
                  shard=_shard_order(args), merge=merge)
    if any(os.path.splitext(text)[1] == ".mlir" for text in args.sources):
        if args.shard:
            raise UsageError("--shard: a .mlir pass-dump file is one compile; build it without --shard")
        return _build_split_dump_file(args, config)
    requests, archs = requests_from_args(args)
    if args.max_variants is not None:
        config["max_variants"] = args.max_variants
    return build(requests, BuildConfig(out=args.out, archs=archs, serve_index=bool(args.spec), **config))


def _shard_order(args: argparse.Namespace) -> Any:
    """``--shard I/N`` as a ShardOrder that records the command line, or None."""
    if args.shard is None:
        return None
    from .builder import shards

    index, count = shards.parse_shard(args.shard)
    if args.dump_passes:
        raise UsageError("--shard with --dump-passes: the pass dump is of one compile; build it without --shard")
    return shards.ShardOrder(index, count, shards.recorded_args(vars(args)))


def _build_split_dump_file(args: argparse.Namespace, config: dict[str, Any]) -> BuildReport:
    """``tmlr-build DIR/NN-Pass.mlir``: resume the pipeline from one file that --split-dump wrote."""
    from .passdump.dump_resume import build_from_dump

    if len(args.sources) != 1 or args.spec:
        raise UsageError("a .mlir pass-dump file is built on its own: name it as the only SRC, without --spec")
    path = os.path.abspath(args.sources[0])
    if not os.path.isfile(path):
        raise InputError(f"{args.sources[0]}: no such file")
    if not os.path.isfile(os.path.join(os.path.dirname(path), "index.json")):
        raise InputError(f"{args.sources[0]}: no index.json beside it: tmlr-build takes a .mlir only as a file that "
                         "--split-dump wrote; run tmlr-build --split-dump LOG -o DIR first and pass DIR/NN-Pass.mlir "
                         "(or rename plain TTIR/TTGIR to .ttir/.ttgir)")
    if args.metadata:
        raise UsageError("--metadata: a .mlir pass-dump file is TTIR/TTGIR; it takes no Triton metadata JSON")
    given = _given(args)
    return build_from_dump(path, args.out, parse_arch_list(args.arch) if args.arch else None, given.pop("options"),
                           given.pop("name"), **given, ptx=args.ptx, **config)


def _summary(report: BuildReport) -> list[str]:
    """The device profiles the Python kernels' imports were answered as, then what became of each kernel, one line
    per name: written (for which targets, and why not for others) or skipped; spec entries skipped under the name
    of a written kernel are said on its line."""
    skipped: dict[str, list[str]] = {}
    for name, why in report.skipped:
        skipped.setdefault(name, []).append(why)
    lines = list(report.devices)  # what the Python kernels' imports were answered as, first: it shaped the rest
    for path in report.written:
        if report.stopped_after is None:
            others = [f"another entry of this name skipped: {why}" for why in skipped.pop(os.path.basename(path), [])]
            facts = "; ".join(report.built.get(path, []) + others)
            lines.append(f"wrote {path}" + (f" ({facts})" if facts else ""))
            continue
        ir_dir = os.path.join(path, "ir")
        for arch in sorted(os.listdir(ir_dir)) if os.path.isdir(ir_dir) else []:
            last = os.path.join(ir_dir, arch, f"{os.path.basename(path)}.{report.stopped_after}")
            lines.append(f"stopped after {report.stopped_after}: IR in {os.path.dirname(last)} (no cubin, no "
                         f"metadata.json; continue with tmlr-build {last} -o OUT)")
    for name, whys in skipped.items():  # two entries of one name: say which reason is whose
        whys = whys if len(whys) == 1 else [f"{'another' if n else 'an'} entry: {why}" for n, why in enumerate(whys)]
        lines.append(f"skipped {name} ({'; '.join(whys)})")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run tmlr-build; returns the exit status (0 ok, 1 build failed, 2 bad usage)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:  # a bare tmlr-build: what to type, as argparse shows it, not only the first missing flag
        print(make_parser().format_usage().rstrip() + "\ntmlr-build: error: nothing to build: name SRC files or a --spec "
              "file, and -o OUT (tmlr-build --help lists every option)", file=sys.stderr)
        return 2
    as_json = "--json" in args  # known before parsing, so that a usage error is JSON too
    try:
        python, rest = other_python.split_python(args)
        if python is not None:
            return other_python.run(python, rest)
        report, quiet = run(args)
    except BuildError as e:
        errors = e.errors if isinstance(e, BuildFailedError) else [e]
        for err in errors:
            print(f"tmlr-build: error: {err}", file=sys.stderr)
        report = getattr(e, "report", None)
        _print_partial(report)
        status = 2 if all(isinstance(err, UsageError) for err in errors) else 1
        if as_json:
            done = {} if report is None else {"written": report.written, "not_written": report.not_written,
                                              "kept": report.kept}
            _print_json(status, errors=[{"type": type(err).__name__, "message": str(err)} for err in errors], **done)
        return status
    except KeyboardInterrupt:
        print("tmlr-build: interrupted", file=sys.stderr)
        return 130
    if not quiet:
        for line in _summary(report):
            print(f"tmlr-build: {line}", file=sys.stderr)
        for note in report.notes:
            print(f"tmlr-build: {note}", file=sys.stderr)
        for warning in report.warnings:
            print(f"tmlr-build: warning: {warning}", file=sys.stderr)
    if as_json:
        _print_json(0, written=report.written, stopped_after=report.stopped_after, summary=_summary(report),
                    devices=report.devices,
                    skipped=[{"name": name, "why": why} for name, why in report.skipped], notes=report.notes,
                    warnings=report.warnings, kept=report.kept)
    return 0


def _print_partial(report: BuildReport | None) -> None:
    """After a failure: what the build wrote and what it did not (nothing is ever half written)."""
    if report is None:
        return
    for line in [*_summary(report), *report.notes, *(f"warning: {w}" for w in report.warnings)]:
        print(f"tmlr-build: {line}", file=sys.stderr)
    if report.not_written:
        what = "nothing was written" if not report.written else f"{len(report.written)} written"
        print(f"tmlr-build: not written: {', '.join(report.not_written)} ({what}; each artifact already in -o is "
              "unchanged)", file=sys.stderr)


def _print_json(status: int, **fields: Any) -> None:
    """``--json``: one object on stdout; ``ok`` and ``exit_status`` first, then the report or the errors."""
    print(json.dumps({"ok": status == 0, "exit_status": status, **fields}, indent=1))
