"""Build the serving-library corpus: real kernel files of fla-core, vLLM and gemlite, as their releases ship them.

    python3 tools/corpus.py build --out .corpus [--arch 90,80] [--lib fla-core] [--kernel NAME] [--results FILE]

Each library is a file of tools/corpus/ (docs/corpus.md): the release to fetch, the Python packages its kernel
modules import beyond torch, numpy and Triton (pinned), and tmlr-build spec entries whose sources are paths inside
the release. The build fetches the release with ``pip download --no-deps`` into the cache (``--cache``, default
.corpus-cache/ of the checkout, git-ignored), unpacks its Python sources, installs the pinned packages into a folder
of the cache (``pip install --no-deps --target``), and runs this checkout's tmlr-build once per kernel and arch
(``--device``: the arch's own GPU, A100 for 80, H100 for 90) with that folder and, unless the installed Triton is
:data:`TRITON`, a Triton of that release on PYTHONPATH. Artifacts go to OUT/sm<arch>/<name>/ (what
tests/gpu/test_corpus_gpu.py launches), the per-kernel build seconds to OUT/results.json (or ``--results``).
Nothing fetched is ever committed: the cache and OUT are git-ignored.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "tools" / "corpus"
# The Triton the corpus builds with: gemlite 0.6.0.post2 requires triton>=3.6.0, and vLLM 0.33.0's triton_utils
# imports triton.experimental.gluon; 3.9.0 is the newest release tmlr-build supports.
TRITON = "3.9.0"
DEVICE = {80: "A100", 90: "H100"}  # --device per arch: each arch's own GPU (tmlr_build/common/devices.py)
ARCHS = (90, 80)


class CorpusError(Exception):
    """A step of the corpus build failed (fetch, unpack, install); the message says which and why."""


@dataclasses.dataclass(frozen=True)
class Library:
    """One file of tools/corpus/: a release and the kernels built from it."""

    name: str  # the file's stem
    package: str
    version: str
    root: str  # the folder inside the unpacked release that holds its packages ("" for a wheel)
    requires: tuple[str, ...]
    kernels: tuple[dict[str, Any], ...]

    def kernels_for(self, arch: int) -> list[dict[str, Any]]:
        """The entries built for ``arch`` (an entry's own "arch" limits it)."""
        return [k for k in self.kernels if arch in k.get("arch", ARCHS)]


def libraries(names: Sequence[str] = ()) -> list[Library]:
    """The libraries of tools/corpus/ (those named, when ``names`` is given), by file name."""
    found = {p.stem: p for p in sorted(SPECS.glob("*.json"))}
    unknown = sorted(set(names) - set(found))
    if unknown:
        raise CorpusError(f"no library {', '.join(unknown)} in {SPECS}: the corpus has {', '.join(found)}")
    out = []
    for name in names or list(found):
        doc = json.loads(found[name].read_text())
        out.append(Library(name, doc["package"], doc["version"], doc.get("root", ""), tuple(doc.get("requires", ())),
                           tuple(doc["kernels"])))
    return out


def _pip(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *args, "-q", "--disable-pip-version-check"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise CorpusError(f"pip {' '.join(args)} failed:\n{(done.stderr or done.stdout).strip()[-2000:]}")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def fetch(lib: Library, cache: Path) -> Path:
    """The release's wheel or sdist, downloaded once into ``cache``/dist."""
    dist = cache / "dist"
    prefix = f"{_normalized(lib.package)}-{lib.version}".lower()

    def downloaded() -> list[Path]:
        return [p for p in dist.glob("*") if _normalized(p.name).startswith(_normalized(prefix)) and
                p.name.endswith((".whl", ".tar.gz", ".zip"))] if dist.is_dir() else []

    if not downloaded():
        dist.mkdir(parents=True, exist_ok=True)
        _pip("download", "--no-deps", f"{lib.package}=={lib.version}", "-d", str(dist))
    found = downloaded()
    if not found:
        raise CorpusError(f"pip download of {lib.package}=={lib.version} wrote no file named {prefix}* in {dist}")
    return found[0]


# what an import of a release's kernel module reads: Python sources and the data files libraries load at import
# (gemlite its configs/*.json); compiled extensions, headers and binaries (600 MiB of vLLM's wheel) stay packed
DATA_SUFFIXES = (".py", ".json", ".yaml", ".yml", ".toml", ".txt", ".cfg")


def _wanted(member: str) -> bool:
    """A file of a release the build may read: :data:`DATA_SUFFIXES`, and the metadata importlib.metadata reads (vLLM
    asks for its own version at import)."""
    parts = member.split("/")
    return member.endswith(DATA_SUFFIXES) or any(p.endswith((".dist-info", ".egg-info")) for p in parts[:-1]) or \
        parts[-1] == "PKG-INFO"


def unpack(archive: Path, dest: Path) -> Path:
    """``archive``'s Python sources and metadata, extracted once into ``dest``."""
    done, what = dest / ".unpacked", f"{archive.name} {' '.join(DATA_SUFFIXES)}"
    if done.is_file() and done.read_text() == what:
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as z:
            for member in z.namelist():
                if _wanted(member):
                    _inside(dest, member)
                    z.extract(member, dest)
    else:
        with tarfile.open(archive) as t:
            members = [m for m in t.getmembers() if m.isfile() and _wanted(m.name) and _inside(dest, m.name)]
            if hasattr(tarfile, "data_filter"):
                t.extractall(dest, members=members, filter="data")
            else:  # Python < 3.10.12 / 3.11.4: the members were checked by _inside
                t.extractall(dest, members=members)
    done.write_text(what)
    return dest


def _inside(dest: Path, member: str) -> bool:
    if os.path.isabs(member) or ".." in Path(member).parts:
        raise CorpusError(f"{member!r} of the release would unpack outside {dest}: refused")
    return True


def install(requirements: Sequence[str], target: Path) -> Path:
    """``requirements`` (pinned, no dependencies resolved) installed once into ``target``."""
    done = target / ".installed"
    wanted = "\n".join(requirements)
    if done.is_file() and done.read_text() == wanted:
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    if requirements:
        _pip("install", "--no-deps", "--target", str(target), *requirements)
    done.write_text(wanted)
    return target


def triton_folder(version: str, cache: Path) -> Path | None:
    """A folder holding Triton ``version`` to put first on PYTHONPATH; None when it is the installed one."""
    try:
        if importlib.metadata.version("triton") == version:
            return None
    except importlib.metadata.PackageNotFoundError:
        pass
    return install([f"triton=={version}"], cache / f"triton-{version}")


def kernel_spec(lib: Library, entry: dict[str, Any], src: Path, first_config: bool) -> dict[str, Any]:
    """The one-kernel tmlr-build spec of ``entry``: its source made absolute; with ``first_config``, an autotuned
    kernel's first config only (a quick check, not the corpus)."""
    kernel = {k: v for k, v in entry.items() if k != "arch"}
    kernel["source"] = str(src / lib.root / entry["source"])
    if first_config and "configs" in kernel:
        kernel["configs"] = [0]
    return {"$comment": f"written by tools/corpus.py for {lib.package} {lib.version}", "kernels": [kernel]}


def build_kernel(lib: Library, entry: dict[str, Any], arch: int, src: Path, paths: Sequence[Path], out: Path,
                 cache: Path, jobs: int, first_config: bool = False) -> dict[str, Any]:
    """Build one kernel for one arch with this checkout's tmlr-build; its result record (seconds: the whole
    tmlr-build run, the library's import in every compile worker included)."""
    spec = cache / "specs" / f"{entry['name']}-sm{arch}.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(json.dumps(kernel_spec(lib, entry, src, first_config), indent=1))
    dest = out / f"sm{arch}"
    cmd = [sys.executable, "-m", "tmlr_build", "--spec", str(spec), "-o", str(dest), "--arch", str(arch),
           "--device", DEVICE[arch], "-j", str(jobs), "--json", "-q"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *map(str, paths), os.environ.get("PYTHONPATH", "")]))
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = {"ok": False, "errors": [(done.stderr or done.stdout).strip()[-2000:]]}
    record: dict[str, Any] = {
        "library": lib.name, "package": f"{lib.package}=={lib.version}", "name": entry["name"],
        "kernel": f"{entry['source']}:{entry['kernel']}", "arch": arch, "device": DEVICE[arch],
        "seconds": round(seconds, 1), "ok": bool(report.get("ok")) and done.returncode == 0}
    record.update(_artifact_facts(dest / entry["name"]))
    if not record["ok"]:
        record["error"] = "; ".join(str(e) for e in report.get("errors", [])) or done.stderr.strip()[-2000:]
    return record


def _artifact_facts(folder: Path) -> dict[str, Any]:
    """What the build wrote: variants (built and failed) and bytes."""
    index = folder / "metadata.json"
    if not index.is_file():
        return {"variants": 0, "failed": 0, "bytes": 0}
    doc = json.loads(index.read_text())
    family = doc.get("kind") == "family"
    return {"variants": len(doc["variants"]) if family else 1, "failed": len(doc.get("failed", [])),
            "bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())}


def build(args: argparse.Namespace) -> int:
    out, cache = Path(args.out).resolve(), Path(args.cache).resolve()
    archs = [int(a) for a in args.arch.split(",")]
    if not set(archs) <= set(DEVICE):
        raise CorpusError(f"--arch {args.arch}: the corpus builds for {', '.join(map(str, sorted(DEVICE)))}")
    libs = libraries(args.lib or ())
    if args.kernel:
        known = {k["name"] for lib in libs for k in lib.kernels}
        if set(args.kernel) - known:
            raise CorpusError(f"no kernel {', '.join(sorted(set(args.kernel) - known))}: the corpus has {', '.join(sorted(known))}")
    triton = triton_folder(args.triton, cache)
    records = []
    load_start = os.getloadavg()
    for lib in libs:
        entries = {arch: [k for k in lib.kernels_for(arch) if not args.kernel or k["name"] in args.kernel] for arch in archs}
        if not any(entries.values()):
            continue
        src = unpack(fetch(lib, cache), cache / "src" / f"{lib.name}-{lib.version}")
        deps = install(lib.requires, cache / "deps" / f"{lib.name}-{lib.version}")
        paths = [p for p in (triton, src / lib.root if lib.root else src, deps) if p is not None]
        for arch in archs:
            for entry in entries[arch]:
                record = build_kernel(lib, entry, arch, src, paths, out, cache, args.jobs, args.first_config)
                records.append(record)
                state = "ok" if record["ok"] else f"FAILED: {record['error'][:300]}"
                print(f"{record['name']} sm_{arch}: {record['variants']} variants, {record['seconds']} s, {state}", flush=True)
    results = Path(args.results) if args.results else out / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(_results_doc(args, records, load_start), indent=1) + "\n")
    print(f"results: {results}")
    return 0 if records and all(r["ok"] for r in records) else 1


def _results_doc(args: argparse.Namespace, records: list[dict[str, Any]], load_start: tuple[float, ...]) -> dict[str, Any]:
    try:  # an unpacked source archive has no git: the results then name no commit
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ""
    return {
        "command": "python3 tools/corpus.py " + " ".join(sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "checkout": commit, "triton": args.triton,
        "machine": {"cpus": os.cpu_count(), "jobs": args.jobs, "loadavg_at_start": [round(x, 2) for x in load_start],
                    "loadavg_at_end": [round(x, 2) for x in os.getloadavg()]},
        "seconds_measure": "one tmlr-build run per kernel and arch, wall clock: every compile worker imports the library",
        "kernels": records,
        "total_seconds": round(sum(r["seconds"] for r in records), 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/corpus.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="fetch, unpack and build the corpus")
    b.add_argument("--out", default=str(ROOT / ".corpus"), help="artifacts go to OUT/sm<arch>/<name>/ (default .corpus)")
    b.add_argument("--cache", default=str(ROOT / ".corpus-cache"), help="downloads, sources, packages (default .corpus-cache)")
    b.add_argument("--arch", default="90", help="comma-separated: 90, 80 (default 90: what the GPU test launches)")
    b.add_argument("--lib", action="append", help="a library (file of tools/corpus/) to build; repeatable; default all")
    b.add_argument("--kernel", action="append", help="a kernel (its artifact name) to build; repeatable; default all")
    b.add_argument("--triton", default=TRITON, help=f"the Triton release to build with (default {TRITON})")
    b.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="tmlr-build -j (default: the CPUs)")
    b.add_argument("--first-config", action="store_true", help="build only config 0 of autotuned kernels (a quick check)")
    b.add_argument("--results", help="where the per-kernel results go (default OUT/results.json)")
    args = parser.parse_args(argv)
    try:
        return build(args)
    except CorpusError as e:
        print(f"tools/corpus.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
