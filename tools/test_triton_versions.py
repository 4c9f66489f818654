#!/usr/bin/env python3
"""Run the build tests under every Triton release and print a table: release x what builds.

    python3 tools/test_triton_versions.py                      # every venv under $TMLR_VENVS (default /work/venvs)
    python3 tools/test_triton_versions.py --venvs DIR          # DIR/*/bin/python
    python3 tools/test_triton_versions.py --python A/bin/python --python B/bin/python
    python3 tools/test_triton_versions.py --write docs/triton-versions-results.md

Each interpreter needs one supported Triton plus pytest and jsonschema (hypothesis and numpy for some
tests); it runs this checkout (PYTHONPATH), never an installed tmlr. One pytest run per interpreter,
one after the other (the build tests use every core already); its junit XML says which test passed,
and each column of the table is a group of tests (COLUMNS). "not yet": the tests skip because
tmlr-build does not support that combination yet (and says so when asked); "n/a": the release lacks
the feature. Exit status 1 when any test failed.
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import glob
import os
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBSET = ["tests/build"]
# column -> test ids (fnmatch patterns on "file.py::test[param]")
COLUMNS = {
    "Python": ["test_build_stages.py::test_python_path_matches_triton_compile",
               "test_build_artifacts.py::test_every_artifact_validates_and_its_cubins_match"],
    "ttir": ["test_build_stages.py::test_every_stage_gives_the_same_cubin_and_metadata[ttir-*]"],
    "ttgir": ["test_build_stages.py::test_every_stage_gives_the_same_cubin_and_metadata[ttgir-*]",
              "test_build_stages.py::test_bare_ttgir_*", "test_build_stages.py::test_ttgir_loses_*"],
    "llir": ["test_build_stages.py::test_every_stage_gives_the_same_cubin_and_metadata[llir-*]"],
    "ptx": ["test_build_stages.py::test_every_stage_gives_the_same_cubin_and_metadata[ptx-*]"],
    "cubin": ["test_build_errors.py::test_cubin_import_checks_that_metadata_and_cubin_belong_together"],
    "cache entry": ["test_build_stages.py::test_a_triton_cache_entry_imports_as_it_is*", "test_cache_entry.py::*"],
    "--keep-ir / --stop-after": ["test_build_artifacts.py::test_keep_ir_and_stop_after",
                                 "test_build_artifacts.py::test_rebuilding_from_ir_inside_the_artifact_keeps_that_ir"],
    "jit": ["test_build_jit.py::*"],
    "host TensorDescriptor": ["test_build_artifacts.py::test_host_tensor_descriptor_examples",
                              "test_build_triton_api.py::test_jit_specializes_a_host_descriptor_as_triton_does"],
    "split-dump": ["test_split_dump.py::*"],
    "Gluon": ["test_gluon.py::*"],
    "autotune / heuristics": ["test_build_autotune.py::*"],
}
NOT_YET = ("only so far",)  # skip reasons of what tmlr-build does not support yet
MISSING = ("has no host tensor descriptors",)  # skip reasons of what the release lacks


@dataclass
class Run:
    python: str
    version: str
    seconds: float = 0.0
    results: dict[str, tuple[str, str]] = field(default_factory=dict)  # test id -> (outcome, skip reason)
    error: str = ""


def triton_version(python: str) -> str | None:
    proc = subprocess.run([python, "-c", "import triton; print(triton.__version__)"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ""})
    return proc.stdout.strip() if proc.returncode == 0 else None


def interpreters(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(python, Triton version) of each interpreter to test, oldest release first."""
    pythons = args.python or sorted(glob.glob(os.path.join(args.venvs, "*", "bin", "python")))
    found = []
    for python in pythons:
        version = triton_version(python)
        if version is None:
            print(f"skipping {python}: no Triton importable", file=sys.stderr)
            continue
        found.append((python, version))
    return sorted(found, key=lambda pv: tuple(int(x) for x in pv[1].split("+")[0].split(".")[:3]))


def run_tests(python: str, version: str, extra: list[str]) -> Run:
    run = Run(python, version)
    with tempfile.TemporaryDirectory(prefix="tmlr-versions-") as tmp:
        xml = os.path.join(tmp, "junit.xml")
        files = sorted(f for pattern in SUBSET for f in glob.glob(str(ROOT / pattern)))
        cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", *extra, *files]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        run.seconds = time.monotonic() - t0
        if not os.path.exists(xml):
            run.error = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["pytest did not run"]
            run.error = run.error[0]
            return run
        run.results = read_junit(xml)
    return run


def read_junit(path: str) -> dict[str, tuple[str, str]]:
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        file = case.get("classname", "").rsplit(".", 1)[-1] + ".py"
        outcome, reason = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped" and outcome == "passed":
                outcome, reason = "skipped", child.get("message", "")
        out[f"{file}::{case.get('name')}"] = (outcome, reason)
    return out


def _matches(test_id: str, pattern: str) -> bool:
    # test ids hold "[params]", which fnmatch would read as character sets
    return fnmatch.fnmatchcase(test_id.replace("[", "(").replace("]", ")"), pattern.replace("[", "(").replace("]", ")"))


def cell(run: Run, patterns: list[str]) -> str:
    """pass (N tests) / FAIL (failed/N) / not yet / n/a / skipped for one column of one release."""
    if run.error:
        return "error"
    hits = [v for k, v in run.results.items() if any(_matches(k, p) for p in patterns)]
    outcomes = [o for o, _ in hits]
    reasons = " ".join(r for o, r in hits if o == "skipped")
    if not hits:
        return "no test"
    if "failed" in outcomes:
        return f"FAIL ({outcomes.count('failed')}/{len(hits)})"
    if any(w in reasons for w in NOT_YET):
        return "not yet"
    if "passed" not in outcomes:
        return "n/a" if any(w in reasons for w in MISSING) else "skipped"
    return f"pass ({outcomes.count('passed')})"


def failures(runs: list[Run]) -> str:
    lines = [f"- {run.version}: {test}" for run in runs for test, (o, _) in sorted(run.results.items()) if o == "failed"]
    return "\n".join(["", "Failed:", *lines]) if lines else ""


def table(runs: list[Run]) -> str:
    head = ["Triton", *COLUMNS, "all build tests", "time"]
    rows = [head, ["---"] * len(head)]
    for run in runs:
        counts = [o for o, _ in run.results.values()]
        total = (f"{counts.count('passed')} passed, {counts.count('failed')} failed, {counts.count('skipped')} skipped"
                 if not run.error else run.error)
        rows.append([run.version, *(cell(run, p) for p in COLUMNS.values()), total, f"{run.seconds:.0f} s"])
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--venvs", default=os.environ.get("TMLR_VENVS", "/work/venvs"),
                   help="folder of venvs, each with one Triton: VENVS/*/bin/python (default $TMLR_VENVS or /work/venvs)")
    p.add_argument("--python", action="append", help="an interpreter to test (repeatable; replaces --venvs)")
    p.add_argument("--write", metavar="FILE", help="also write the table, date and command to FILE (markdown)")
    p.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    args = p.parse_args(argv)
    runs = []
    for python, version in interpreters(args):
        print(f"Triton {version} ({python}) ...", file=sys.stderr, flush=True)
        runs.append(run_tests(python, version, args.pytest_args))
        print(f"  {runs[-1].seconds:.0f} s", file=sys.stderr, flush=True)
    if not runs:
        print("no interpreter with Triton found; pass --venvs DIR or --python PATH", file=sys.stderr)
        return 2
    text = table(runs) + failures(runs)
    print(text)
    if args.write:
        command = "python3 tools/test_triton_versions.py " + shlex.join(argv if argv is not None else sys.argv[1:])
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        Path(args.write).write_text(f"# Build tests per Triton release\n\n{stamp}, `{command.strip()}`, on "
                                    f"{os.cpu_count()} cores.\n\n{text}\n")
    failed = any(run.error or any(o == "failed" for o, _ in run.results.values()) for run in runs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
