"""A build in N independent jobs (``--shard I/N``) and the merge of their folders (``tmlr-build merge``).

Every shard plans the whole build (the same checks, the same compile jobs in the same order) and compiles
the jobs at positions I-1, I-1+N, I-1+2N, ... (round robin, so that a family's variants spread evenly over
the shards). It writes no artifact: its -o folder holds ``tmlr-shard.json`` (the header) and
``jobs/<position>/`` (each compile's outcome, shard_outcome.py). The header records what every shard of one
build shares: the command line (less -o, -j, -q, --json, --shard), the sha256 of the spec and of every input
it names, Triton's and each ptxas's version, tmlr-build's, and the list of compiles.

The merge checks that the folders are the N shards of one build, then runs that build again from the
recorded command line, taking each compile's outcome from its shard instead of compiling it. So it writes
what a single build writes, through the same functions: artifacts, family indexes, what a rebuild keeps
(user files, edited IR, tuning tables) and whatever else a build writes into -o.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..common.errors import BuildError, OutputPathError, ShardError, ShardMismatchError, ShardMissingError, UsageError
from ..common.jobs import Job, JobResult
from ..version import __version__
from .artifact import write_directory
from .shard_outcome import outcome_files, read_outcome
from .sources import KernelRequest

SHARD_FILE = "tmlr-shard.json"
JOBS_DIR = "jobs"
FORMAT = 1
# what the header leaves out of the command line: where the output goes and how it is shown, not what is built
NOT_RECORDED = frozenset({"out", "jobs", "quiet", "json", "shard", "python", "split_dump"})
# what two shards of one build share, in the order a mismatch is looked for (the first one found is reported)
_SHARED = ("count", "tmlr_version", "triton_version", "ptxas", "args", "inputs", "jobs")


@dataclass(frozen=True)
class ShardOrder:
    """``--shard I/N``: compile the I-th of N parts (1-based) of the build whose command line is ``args``."""

    index: int
    count: int
    args: dict[str, Any]


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> (2, 4); UsageError for anything else."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise UsageError(f"--shard {text}: write I/N with 1 <= I <= N, e.g. --shard 2/4 for the second of 4 jobs "
                         "(each job of a CI matrix runs one I; tmlr-build merge then joins their folders)")
    return int(m.group(1)), int(m.group(2))


def recorded_args(args: dict[str, Any]) -> dict[str, Any]:
    """The parsed command line as a shard header records it (JSON: lists, not tuples)."""
    return json.loads(json.dumps({k: v for k, v in sorted(args.items()) if k not in NOT_RECORDED}))


def positions(total: int, index: int, count: int) -> range:
    """The positions in the build's job list that shard ``index`` of ``count`` compiles."""
    return range(index - 1, total, count)


def build_record(args: dict[str, Any], requests: Sequence[KernelRequest], triton_version: str,
                 jobs: Sequence[Job], count: int) -> dict[str, Any]:
    """What every shard of one build shares (less the ptxas versions, which a compile worker finds)."""
    return {"count": count, "tmlr_version": __version__, "triton_version": triton_version, "args": args,
            "inputs": input_digests(args.get("spec"), requests), "jobs": [job.label for job in jobs]}


def input_digests(spec: str | None, requests: Sequence[KernelRequest]) -> dict[str, str]:
    """The sha256 of the spec file and of each request's source (a folder: its files) and metadata JSON."""
    found = {} if spec is None else {os.path.basename(spec): _digest(spec)}
    for i, req in enumerate(requests):
        for path in filter(None, (req.source, req.metadata_path)):
            found[f"{os.path.basename(path)} (input {i + 1})"] = _digest(path)
    return found


def _digest(path: str) -> str:
    h = hashlib.sha256()
    if os.path.isdir(path):
        for here, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                h.update(os.path.relpath(os.path.join(here, name), path).encode() + b"\0")
                h.update(_digest(os.path.join(here, name)).encode())
        return h.hexdigest()
    try:
        with open(path, "rb") as f:
            h.update(f.read())
    except OSError as e:
        raise ShardError(f"{path}: cannot read it ({e.strerror}) to record its sha256 in the shard header") from None
    return h.hexdigest()


# --- a shard build ------------------------------------------------------------------------------

def prepare_shard_output(out: str) -> str:
    """The absolute shard folder; refuse one that holds something other than a shard (nothing is lost)."""
    out = os.path.abspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputPathError(f"{out}: exists and is not a directory; -o of a --shard build names the folder that "
                              "receives the shard - pick another path")
    if os.path.isdir(out) and os.listdir(out) and not os.path.isfile(os.path.join(out, SHARD_FILE)):
        raise OutputPathError(f"{out}: holds files, and no {SHARD_FILE}: a --shard build writes a shard folder, not "
                              "artifacts; give it an empty or new folder (or an earlier shard's), and the artifacts "
                              "folder to tmlr-build merge -o")
    try:
        os.makedirs(os.path.dirname(out), exist_ok=True)
    except OSError as e:
        raise OutputPathError(f"{out}: cannot create the folder it goes in: {e.strerror}") from None
    return out


def write_shard(out: str, order: ShardOrder, record: dict[str, Any], mine: Sequence[int],
                outcomes: Sequence[JobResult | BuildError]) -> str:
    """Write the shard folder ``out`` (atomically, replacing an earlier shard there); returns its path."""
    header = {"format": FORMAT, "shard": order.index, **record}
    files = {SHARD_FILE: (json.dumps(header, indent=1, sort_keys=True) + "\n").encode()}
    for position, outcome in zip(mine, outcomes):
        files.update((f"{JOBS_DIR}/{position}/{rel}", data) for rel, data in outcome_files(outcome).items())
    return write_directory(os.path.dirname(out), os.path.basename(out), files, drop=[SHARD_FILE, JOBS_DIR])


# --- the merge ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ShardSet:
    """The N shard folders of one build, by index (``dirs[0]`` is shard 1), and the record they share."""

    dirs: tuple[str, ...]
    record: dict[str, Any]

    @property
    def args(self) -> dict[str, Any]:
        return self.record["args"]

    def check(self, record: dict[str, Any]) -> None:
        """Refuse a merge whose own plan (``record``, made here from the recorded command line) differs."""
        for key in _SHARED:
            if key in record and record[key] != self.record[key]:
                raise ShardMismatchError(f"the shards ({self.dirs[0]}, ...) and this merge differ: "
                                         f"{_difference(key, self.record[key], record[key])}; {_AGAIN}", key)

    def outcomes(self, jobs: Sequence[Job]) -> list[JobResult | BuildError]:
        """Each job's outcome, read from the shard that compiled it."""
        count = len(self.dirs)
        return [read_outcome(self._folder(p, count, job), job.label) for p, job in enumerate(jobs)]

    def _folder(self, position: int, count: int, job: Job) -> str:
        folder = os.path.join(self.dirs[position % count], JOBS_DIR, str(position))
        if not os.path.isdir(folder):
            raise ShardMissingError(f"{self.dirs[position % count]}: shard {position % count + 1}/{count} lacks the "
                                    f"compile of {job.label} ({JOBS_DIR}/{position}/); build this shard again (the "
                                    "same command with its --shard I/N) and merge again")
        return folder


# what to do about a mismatch
_AGAIN = ("merge the N shards of one build (one command line but for --shard I/N, the same inputs, Triton and ptxas), "
          "in the folder the shards ran in (the command line names the spec and sources as given); or build the shards "
          "again")


def read_shards(dirs: Sequence[str]) -> ShardSet:
    """The shard folders ``dirs`` (any order) as one ShardSet; refuse missing, repeated or mismatched shards."""
    if not dirs:
        raise UsageError("tmlr-build merge: name the shard folders, e.g. tmlr-build merge shard-1 shard-2 -o OUT")
    headers = {os.path.abspath(d): _header(os.path.abspath(d)) for d in dirs}
    first_dir, first = next(iter(headers.items()))
    by_index: dict[int, str] = {}
    for folder, header in headers.items():
        for key in _SHARED:
            if header[key] != first[key]:
                raise ShardMismatchError(f"{first_dir} and {folder} are shards of different builds: "
                                         f"{_difference(key, first[key], header[key])}; {_AGAIN}", key)
        if header["shard"] in by_index:
            raise ShardError(f"{folder} and {by_index[header['shard']]} are both shard {header['shard']}/"
                             f"{header['count']}; name each shard folder once")
        by_index[header["shard"]] = folder
    count = first["count"]
    missing = [i for i in range(1, count + 1) if i not in by_index]
    if missing:
        raise ShardMissingError(f"the merge has {len(by_index)} of {count} shards: shard "
                                f"{', '.join(f'{i}/{count}' for i in missing)} missing; add its folder (each shard "
                                f"folder's {SHARD_FILE} says which it is), or build it with --shard "
                                f"{missing[0]}/{count}")
    return ShardSet(tuple(by_index[i] for i in range(1, count + 1)), {k: first[k] for k in _SHARED})


def _header(folder: str) -> dict[str, Any]:
    path = os.path.join(folder, SHARD_FILE)
    if not os.path.isfile(path):
        what = "no such folder" if not os.path.isdir(folder) else f"no {SHARD_FILE} in it"
        raise ShardMissingError(f"{folder}: not a shard folder ({what}); name the -o folders of tmlr-build --shard I/N")
    try:
        with open(path, encoding="utf-8") as f:
            header = json.load(f)
    except (OSError, ValueError) as e:
        raise ShardError(f"{path}: cannot read the shard header ({e}); build this shard again") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ShardMismatchError(f"{path}: a shard header of another tmlr-build (format {header.get('format')!r} "
                                 f"where this one reads {FORMAT}); build the shards and merge with one tmlr-build",
                                 "format")
    if not all(k in header for k in ("shard", *_SHARED)) or not 1 <= header["shard"] <= header["count"]:
        raise ShardError(f"{path}: the shard header lacks a field or names no shard of 1..N; build this shard again")
    return header


def _difference(key: str, first: Any, other: Any) -> str:
    """What differs between two values of the shared record's ``key``, in words."""
    if key == "count":
        return f"one is a shard of {first}, the other of {other} (--shard I/N with another N)"
    if key in ("args", "inputs", "ptxas"):
        names = sorted(n for n in set(first) | set(other) if first.get(n) != other.get(n))
        what = {"args": "the command line differs in", "inputs": "these inputs have other bytes (sha256)",
                "ptxas": "the ptxas versions differ for capability"}[key]
        shown = ", ".join(n if key == "inputs" else f"{_flag(n) if key == 'args' else n} ({first.get(n)!r} and "
                          f"{other.get(n)!r})" for n in names)
        return f"{what}: {shown}"
    if key == "jobs":
        if len(first) != len(other):
            return f"they plan {len(first)} and {len(other)} compiles"
        a, b = next((a, b) for a, b in zip(first, other) if a != b)
        return f"they plan other compiles ({a} and {b})"
    return f"{key.replace('_', ' ')} {first} and {other}"


def _flag(dest: str) -> str:
    """The command-line flag of a recorded argument: ``keep_ir`` -> ``--keep-ir``."""
    return "SRC" if dest == "sources" else "--" + dest.replace("_", "-")
