"""Conformance runner: Triton's own language tests, run once with Triton's launcher and once with tmlr serving every
launch (docs/conformance.md).

    python3 tests/conformance/run.py --triton-tests DIR --json OUT.json [-k EXPR] [--all | --selection small |
                                     --cases FILE] [--files test_core.py,...] [--jobs N] [--timeout S]

DIR holds Triton's python/test/unit/language test files (test_core.py, test_tuple.py, test_annotations.py,
test_random.py) of the installed Triton release, and Triton's python/test/conftest.py (in DIR or above it);
TMLR_TRITON_TESTS=DIR does the same, and without either the runner takes .conformance/triton-tests of this checkout.
tests/conformance/fetch_triton_tests.sh fetches them for a release. The runner never copies them into the project.

Steps: one pytest process collects the cases (with -k, then the selection); the selected cases run with Triton's
launcher, then with tmlr's (conformance_plugin.py), each pass spread over --jobs pytest processes that share one
Triton cache (so the tmlr pass compiles nothing again); a process that dies is started again after the case it died
in. It prints "N/M of the cases that pass with Triton's launcher", the losses grouped by cause and the launches
tmlr served, and writes every case's result to the --json file (conformance_report.py describes the document).
Exit status: 0 when the run completed (whatever the ratio), 2 for bad usage or a setup that cannot run.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import conformance_report as report  # noqa: E402

FILES = ("test_core.py", "test_tuple.py", "test_annotations.py", "test_random.py")
INI = HERE / "triton-tests.ini"  # pytest's defaults for Triton's tests, not this project's pyproject.toml settings
RELEASE_FILE = "TRITON_RELEASE"  # written by fetch_triton_tests.sh: the release the tests are from

# A selection: test function ("file::name") -> the most cases taken from its parameter list, evenly spread over it,
# and the number taken from every function not named. "default" takes the dtypes (bin_op, cast, math), reductions and
# scans, atomics, dot, constexpr and value specialization, and one case of every other test of the four files (475
# cases of Triton 3.6.0's tests as collected without a GPU), sized for a run of about 8 minutes on one H100 with
# --jobs 8 (the results file records each pass's seconds); "small" is the GPU test's
# (tests/conformance/test_conformance_gpu.py); --all runs every collected case.
SELECTIONS: dict[str, tuple[dict[str, int], int]] = {
    "default": ({
        "test_core.py::test_bin_op": 24, "test_core.py::test_bitwise_op": 8,
        "test_core.py::test_shift_op": 6, "test_core.py::test_compare_op": 8, "test_core.py::test_unary_op": 8,
        "test_core.py::test_math_op": 12, "test_core.py::test_abs": 6, "test_core.py::test_cast": 30,
        "test_core.py::test_reduce1d": 16, "test_core.py::test_reduce": 12, "test_core.py::test_scan2d": 6,
        "test_core.py::test_atomic_rmw": 24, "test_core.py::test_atomic_cas": 6,
        "test_core.py::test_tensor_atomic_rmw": 8, "test_core.py::test_tensor_atomic_cas": 6,
        "test_core.py::test_dot": 16, "test_core.py::test_dot3d": 4, "test_core.py::test_scaled_dot": 4,
        "test_core.py::test_constexpr": 10, "test_core.py::test_value_specialization": 11,
        "test_core.py::test_value_specialization_overflow": 4, "test_core.py::test_bin_op_constexpr": 8,
        "test_core.py::test_const": 8, "test_core.py::test_pointer_arguments": 3, "test_core.py::test_masked_load": 8,
        "test_core.py::test_full": 6, "test_core.py::test_where": 6, "test_core.py::test_store_constant": 4,
        "test_tuple.py": 10, "test_annotations.py": 16, "test_random.py": 6,
    }, 1),
    "small": ({
        "test_core.py::test_masked_load": 2, "test_core.py::test_bin_op": 3, "test_core.py::test_cast": 2,
        "test_core.py::test_reduce1d": 2, "test_core.py::test_atomic_rmw": 2, "test_core.py::test_constexpr": 2,
        "test_core.py::test_value_specialization": 2, "test_tuple.py::test_index": 2,
        "test_tuple.py::test_namedtuple": 1, "test_annotations.py::test_int_annotation": 2,
    }, 0),
}


class SetupError(Exception):
    """The run cannot start or a pytest process could not run at all (exit status 2)."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="tests/conformance/run.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--triton-tests", metavar="DIR", help="folder of Triton's language tests (default: $TMLR_TRITON_TESTS, "
                                                         "else .conformance/triton-tests of this checkout)")
    p.add_argument("--json", metavar="OUT", help="results file (default: results.json in the work folder)")
    p.add_argument("-k", metavar="EXPR", help="pytest -k expression applied before the selection")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--selection", choices=sorted(SELECTIONS), default="default", help="cases per test function")
    what.add_argument("--all", action="store_true", help="every collected case (with -k: every case it selects)")
    what.add_argument("--cases", metavar="FILE", help="exactly these node ids, one a line (test_core.py::test_x[...])")
    p.add_argument("--files", default=",".join(FILES), help=f"test files of DIR to run (default {','.join(FILES)})")
    p.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), help="pytest processes per pass")
    p.add_argument("--timeout", type=float, default=1800, help="seconds each pass may take")
    p.add_argument("--work", metavar="DIR", help="folder for logs, events, artifacts and Triton's cache (default: new "
                                                 "temporary folder)")
    p.add_argument("--any-release", action="store_true", help="run tests that say they are from another Triton release")
    return p.parse_args(argv)


def tests_dir(given: str | None) -> Path:
    text = given or os.environ.get("TMLR_TRITON_TESTS")
    path = Path(text) if text else ROOT / ".conformance" / "triton-tests"
    if not path.is_dir():
        source = "--triton-tests" if given else "TMLR_TRITON_TESTS" if text else "the default folder"
        raise SetupError(f"{source} {path}: no such folder; give the folder of Triton's python/test/unit/language tests "
                         "(bash tests/conformance/fetch_triton_tests.sh fetches them for the installed release)")
    return path.resolve()


def find_conftest(folder: Path) -> Path:
    """Triton's python/test/conftest.py (the ``device`` fixture): in the folder or up to three folders above it."""
    for parent in [folder, *list(folder.parents)[:3]]:
        if (parent / "conftest.py").is_file():
            return parent / "conftest.py"
    raise SetupError(f"{folder}: no conftest.py in it or above it; Triton's tests need python/test/conftest.py (its "
                     "device fixture): copy it beside the test files")


def releases(folder: Path, any_release: bool) -> tuple[str, str | None]:
    """The installed Triton release and the one the tests say they are from (None: they do not say)."""
    try:
        installed = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        raise SetupError("Triton is not installed: the conformance run compares with Triton's own launcher") from None
    marker = folder / RELEASE_FILE
    lines = [ln.strip() for ln in marker.read_text().splitlines()] if marker.is_file() else []
    theirs = next((ln for ln in lines if ln and not ln.startswith("#")), None)
    if theirs is not None and theirs != installed and not any_release:
        raise SetupError(f"the tests in {folder} are from Triton {theirs} ({RELEASE_FILE}), Triton {installed} is "
                         f"installed: fetch the tests of {installed} (fetch_triton_tests.sh v{installed}) or pass --any-release")
    return installed, theirs


def select(nodeids: list[str], caps: dict[str, int], default_cap: int) -> list[str]:
    """At most the cap of each test function's cases, evenly spread over its parameter list, in collection order. A
    cap is looked up by ``file::function``, then by ``file``."""
    by_function: dict[str, list[str]] = {}
    for nodeid in nodeids:
        by_function.setdefault(nodeid.split("[", 1)[0], []).append(nodeid)
    chosen = set()
    for function, ids in by_function.items():
        cap = caps.get(function, caps.get(function.split("::", 1)[0], default_cap))
        chosen.update(ids if len(ids) <= cap else [ids[i * len(ids) // cap] for i in range(cap)])
    return [n for n in nodeids if n in chosen]


class Runner:
    """The pytest processes of one run over one folder of tests."""

    def __init__(self, folder: Path, files: list[str], work: Path, timeout: float) -> None:
        self.folder, self.files, self.work, self.timeout = folder, files, work, timeout

    def command(self, *extra: str) -> list[str]:
        return [sys.executable, "-m", "pytest", "-c", str(INI), "--rootdir", str(self.folder), "-p", "conformance_plugin",
                "--continue-on-collection-errors", *extra, *[str(self.folder / f) for f in self.files]]

    def env(self, mode: str, events: Path, cases: Path | None) -> dict[str, str]:
        env = dict(os.environ, TMLR_CONFORMANCE_MODE=mode, TMLR_CONFORMANCE_EVENTS=str(events),
                   TMLR_CONFORMANCE_WORK=str(self.work / "tmlr"), TRITON_CACHE_DIR=str(self.work / "triton-cache"),
                   PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
        env.pop("TMLR_CONFORMANCE_CASES", None)
        if cases is not None:
            env["TMLR_CONFORMANCE_CASES"] = str(cases)
        return env

    def pytest(self, name: str, mode: str, cases: list[str] | None, extra: list[str], deadline: float) -> tuple[list[dict], str]:
        """Run one pytest process; its events and how it ended."""
        events, log = self.work / f"{name}.jsonl", self.work / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        case_file = None
        if cases is not None:
            case_file = self.work / f"{name}.cases"
            case_file.write_text("".join(c + "\n" for c in cases))
        with open(log, "a") as out:
            proc = subprocess.Popen(self.command(*extra), env=self.env(mode, events, case_file), stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                status = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                ended = f"exit status {status}" if status >= 0 else f"signal {signal.Signals(-status).name}"
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                status, ended = None, "killed at the pass's --timeout"
        text = events.read_text(encoding="utf-8").splitlines() if events.exists() else []
        if status in (2, 3, 4) and not any(e.get("event") == "start" for e in report.read_events(text)):
            tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-15:])
            raise SetupError(f"pytest ({mode}) ended with {ended} before running any case; the end of {log}:\n{tail}")
        return report.read_events(text), ended if status not in (0, 1, 5) else ""

    def collect(self, k: str | None) -> tuple[list[str], list[dict]]:
        events, _ = self.pytest("collect", "collect", None, ["--collect-only", "-q", *(["-k", k] if k else [])],
                                time.monotonic() + self.timeout)
        collected = [c for e in events if e.get("event") == "collected" for c in e["cases"]]
        return collected, [e for e in events if e.get("event") == "collect_error"]

    def shard(self, mode: str, index: int, cases: list[str], deadline: float) -> tuple[dict[str, dict], list[dict]]:
        """Run ``cases`` in one process after the other; after a process dies, the rest run in a new one."""
        name, remaining, records, sessions = f"{mode}-{index}", list(cases), {}, []
        while remaining:
            events, ended = self.pytest(name, mode, remaining, ["-q", "--tb=short", "-rN"], deadline)
            sessions += [e for e in events if e.get("event") == "session"]
            records.update(report.cases_of(events, remaining, ended or "it finished"))
            stuck = [c for c in remaining if records[c]["outcome"] == "crashed"]
            remaining = [c for c in remaining if records[c]["outcome"] == "not run"]
            if not ended or not stuck or time.monotonic() >= deadline:
                break  # finished (what is left was not collected), or killed at the deadline
        return records, sessions

    def run_pass(self, mode: str, cases: list[str], jobs: int) -> tuple[dict[str, dict], list[dict]]:
        deadline = time.monotonic() + self.timeout
        shards = [cases[i::jobs] for i in range(jobs) if cases[i::jobs]]  # round robin: each family spread out
        records: dict[str, dict] = {}
        sessions: list[dict] = []
        with concurrent.futures.ThreadPoolExecutor(len(shards) or 1) as pool:
            for got, seen in pool.map(lambda s: self.shard(mode, s[0], s[1], deadline), enumerate(shards)):
                records.update(got)
                sessions += seen
        return {c: records[c] for c in cases}, sessions


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except SetupError as e:
        print(f"conformance: error: {e}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    folder = tests_dir(args.triton_tests)
    files = [f.strip() for f in args.files.split(",") if f.strip()]
    missing = [f for f in files if not (folder / f).is_file()]
    if missing:
        raise SetupError(f"{folder} lacks {', '.join(missing)} (the test files of Triton's python/test/unit/language)")
    conftest = find_conftest(folder)
    installed, theirs = releases(folder, args.any_release)
    if args.jobs < 1:
        raise SetupError(f"--jobs {args.jobs}: give at least 1")
    work = Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="tmlr-conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    said = f"Triton {theirs}'s, says its {RELEASE_FILE}" if theirs else f"release unknown: no {RELEASE_FILE} file"
    print(f"conformance: Triton {installed} installed; tests {folder} ({said}); work folder {work}", flush=True)
    runner = Runner(folder, files, work, args.timeout)
    t0 = time.monotonic()
    collected, collect_errors = runner.collect(args.k)
    if args.cases:
        wanted = [ln.strip() for ln in Path(args.cases).read_text().splitlines() if ln.strip()]
        absent = [c for c in wanted if c not in set(collected)]
        if absent:
            raise SetupError(f"{args.cases}: {len(absent)} node id(s) not collected, e.g. {absent[0]}")
        cases, selection = wanted, f"cases {args.cases}"
    elif args.all:
        cases, selection = collected, "all"
    else:
        cases, selection = select(collected, *SELECTIONS[args.selection]), args.selection
    print(f"conformance: {len(collected)} cases collected, {len(cases)} selected ({selection}); "
          f"{len(collect_errors)} collection error(s)", flush=True)
    timings: dict[str, float] = {"collect": round(time.monotonic() - t0, 1)}
    passes: dict[str, dict[str, dict]] = {}
    sessions: list[dict] = []
    for mode in ("triton", "tmlr"):
        t0 = time.monotonic()
        passes[mode], seen = runner.run_pass(mode, cases, args.jobs)
        sessions += seen
        timings[mode] = round(time.monotonic() - t0, 1)
        print(f"conformance: {mode} pass done in {timings[mode]:.0f} s", flush=True)
    env = next((s for s in sessions if s.get("device")), sessions[0] if sessions else {})
    meta = {"triton_version": installed, "torch_version": env.get("torch_version"), "device": env.get("device"),
            "tests": {"dir": str(folder), "release": theirs, "files": files, "conftest": str(conftest)},
            "selection": {"name": selection, "k": args.k, "collected": len(collected), "selected": len(cases)},
            "collection_errors": [{"where": e["where"], "error": e["error"]} for e in collect_errors],
            "jobs": args.jobs, "seconds": timings, "work": str(work)}
    doc = report.summarize(passes["triton"], passes["tmlr"], meta)
    out = Path(args.json) if args.json else work / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print("\n".join(report.summary_lines(doc)))
    print(f"conformance: results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
