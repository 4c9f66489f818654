"""A build in N independent jobs (``--shard I/N``) merged by ``tmlr-build merge`` writes the bytes of one build
(issue 30): simulated on one machine with 4 shards of a spec whose family's variants land in every shard;
a parallel build writes the bytes of one compile at a time; bad merges are refused with typed errors; a merge
into an existing output keeps what a rebuild keeps (builder/shards.py)."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from tmlr_build.builder import server
from tmlr_build.builder.shards import SHARD_FILE, parse_shard
from tmlr_build.cli import run
from tmlr_build.common import errors as E
from tmlr_build.common.triton_check import installed_triton_version

TRITON = installed_triton_version()  # the shards record it; CI runs this file under 3.3.1 and 3.9.0
ANOTHER_TRITON = "3.8.0" if TRITON == "3.9.0" else "3.9.0"

ROOT = Path(__file__).resolve().parents[2]
N = 4
# split_k's accumulate: 2 configs x MASKED True/False x 2 patterns of out_ptr = 8 variants; and a plain add: 9 compiles
SPEC = {"arch": [80], "kernels": [
    {"source": "split_k.py", "kernel": "accumulate", "signature": "*fp32:16, *fp32:16?, i32",
     "heuristics": {"LIMIT": [0]}},
    {"source": "vector_add.py", "kernel": "add", "signature": "*fp32:16, *fp32:16, *fp32:16, i32, 256"}]}
BUILD = ["--spec", "spec.json", "--keep-ir", "-q"]  # as each job of a CI matrix runs it, in its checkout


@contextlib.contextmanager
def inside(folder: Path) -> Iterator[None]:
    """Run in ``folder``, as a CI job runs in its checkout (the spec is named relative to it)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def write_spec(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "tests/data/autotune/split_k.py", folder)
    shutil.copy(ROOT / "examples/kernels/vector_add.py", folder)
    (folder / "spec.json").write_text(json.dumps(SPEC))
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The spec built once whole (-j2), and as 4 shards (each -j1) merged: every compile of this file."""
    top = tmp_path_factory.mktemp("shards")
    checkout = write_spec(top / "checkout")
    # started here, not inside the checkout: Python 3.11's forkserver imports from its working directory ('' on
    # its sys.path), which must be this tmlr_build's checkout, not the simulated CI checkout
    server.start()
    with inside(checkout):
        run([*BUILD, "-o", str(top / "whole"), "-j", "2"])
        for i in range(1, N + 1):
            run([*BUILD, "-o", str(top / f"shard-{i}"), "-j", "1", "--shard", f"{i}/{N}"])
        run(["merge", *(str(top / f"shard-{i}") for i in (3, 1, 4, 2)), "-o", str(top / "merged"), "-q"])
    return {"top": top, "checkout": checkout, "whole": top / "whole", "merged": top / "merged",
            **{f"shard-{i}": top / f"shard-{i}" for i in range(1, N + 1)}}


def shard_dirs(built: dict[str, Path]) -> list[str]:
    return [str(built[f"shard-{i}"]) for i in range(1, N + 1)]


def test_four_shards_merge_into_the_bytes_of_one_parallel_build(built: dict[str, Path]) -> None:
    whole, merged = tree(built["whole"]), tree(built["merged"])
    assert sorted(whole) == sorted(merged)
    assert [rel for rel in whole if whole[rel] != merged[rel]] == []
    assert len([rel for rel in whole if rel.endswith(".cubin")]) == 9
    assert any(rel.startswith("accumulate/v/") and "/ir/sm_80/SHA256SUMS" in rel for rel in whole)
    # round robin over the 9 compiles: 3, 2, 2, 2; the family's variants in every shard, built one at a time (-j1)
    held = {i: sorted(int(p) for p in os.listdir(built[f"shard-{i}"] / "jobs")) for i in range(1, N + 1)}
    assert held == {1: [0, 4, 8], 2: [1, 5], 3: [2, 6], 4: [3, 7]}
    header = json.loads((built["shard-2"] / SHARD_FILE).read_text())
    assert (header["shard"], header["count"], header["triton_version"]) == (2, N, TRITON)
    assert header["args"]["spec"] == "spec.json" and "out" not in header["args"] and "jobs" not in header["args"]
    assert set(header["inputs"]) == {"spec.json", "split_k.py (input 1)", "vector_add.py (input 2)"}
    assert header["ptxas"]["80"] and len(header["jobs"]) == 9


def test_a_build_one_compile_at_a_time_writes_the_bytes_of_a_parallel_one(built: dict[str, Path]) -> None:
    out = built["top"] / "serial"
    with inside(built["checkout"]):
        run([*BUILD, "-o", str(out), "-j", "1"])
    assert tree(out) == tree(built["whole"])


def test_a_merge_into_an_earlier_output_keeps_what_a_rebuild_keeps(built: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(built["whole"], out)
    family = out / "accumulate"
    vid = sorted(os.listdir(family / "v"))[0]
    edited = family / "v" / vid / "ir/sm_80/accumulate.ttgir"
    edited.write_text(edited.read_text() + "// my change\n")
    (family / "notes.txt").write_text("mine")
    (family / "tuning.json").write_text('{"measured": "on the GPU"}')
    with inside(built["checkout"]):
        report, _ = run(["merge", *shard_dirs(built), "-o", str(out), "-q"])
    after, whole = tree(out), tree(built["whole"])
    kept = [rel for rel in after if rel.startswith("accumulate/edited-")]
    assert kept and all(rel.split("/", 2)[2].startswith(f"v/{vid}/ir/sm_80/") for rel in kept)
    assert any(after[rel].endswith(b"// my change\n") for rel in kept)
    assert after["accumulate/notes.txt"] == b"mine" and after["accumulate/tuning.json"] == b'{"measured": "on the GPU"}'
    assert {rel: data for rel, data in after.items() if rel in whole} == whole  # the rest as the build writes it
    assert report.kept and report.kept[0]["files"] == {f"v/{vid}/ir/sm_80/accumulate.ttgir": "edited"}


def test_a_missing_shard_or_compile_is_refused(built: dict[str, Path], tmp_path: Path) -> None:
    dirs = shard_dirs(built)
    with inside(built["checkout"]), pytest.raises(E.ShardMissingError, match="has 3 of 4 shards: shard 3/4 missing"):
        run(["merge", *dirs[:2], dirs[3], "-o", str(tmp_path / "out")])
    with pytest.raises(E.ShardMissingError, match=r"not a shard folder \(no tmlr-shard.json in it\)"):
        run(["merge", *dirs, str(built["whole"]), "-o", str(tmp_path / "out")])
    shutil.copytree(dirs[0], tmp_path / "again")
    with pytest.raises(E.ShardError, match="are both shard 1/4; name each shard folder once"):
        run(["merge", *dirs, str(tmp_path / "again"), "-o", str(tmp_path / "out")])
    partial = tmp_path / "shard-2"
    shutil.copytree(dirs[1], partial)
    shutil.rmtree(partial / "jobs/5")
    with inside(built["checkout"]), pytest.raises(E.ShardMissingError,
                                                  match=r"shard 2/4 lacks the compile of split_k.py:accumulate c"):
        run(["merge", dirs[0], str(partial), *dirs[2:], "-o", str(tmp_path / "out")])
    assert not (tmp_path / "out" / "accumulate").exists()  # nothing written


@pytest.mark.parametrize("field, value, said", [
    ("triton_version", "3.4.0", f"triton version {TRITON} and 3.4.0"),
    ("ptxas", {"80": "12.8.93"}, "the ptxas versions differ for capability: 80"),
    ("count", 5, "one is a shard of 4, the other of 5"),
    ("args", "keep_ir", "the command line differs in: --keep-ir (True and False)"),
    ("inputs", "split_k.py (input 1)", "these inputs have other bytes (sha256): split_k.py (input 1)"),
])
def test_shards_of_different_builds_are_refused(built: dict[str, Path], tmp_path: Path, field: str, value: object,
                                                said: str) -> None:
    dirs = shard_dirs(built)
    other = tmp_path / "shard-4"
    shutil.copytree(dirs[3], other)
    header = json.loads((other / SHARD_FILE).read_text())
    if field in ("args", "inputs"):
        header[field][value] = False if field == "args" else "0" * 64
    else:
        header[field] = value
    (other / SHARD_FILE).write_text(json.dumps(header))
    with inside(built["checkout"]), pytest.raises(E.ShardMismatchError, match=re.escape(said)) as caught:
        run(["merge", *dirs[:3], str(other), "-o", str(tmp_path / "out")])
    assert caught.value.field == field and "are shards of different builds" in str(caught.value)


def test_a_merge_refuses_inputs_changed_since_the_shards_or_another_triton(built: dict[str, Path],
                                                                           tmp_path: Path) -> None:
    checkout = write_spec(tmp_path / "checkout")
    (checkout / "split_k.py").write_text((checkout / "split_k.py").read_text() + "\n# edited after the shards\n")
    with inside(checkout), pytest.raises(E.ShardMismatchError, match="these inputs have other bytes .*: split_k.py"):
        run(["merge", *shard_dirs(built), "-o", str(tmp_path / "out")])
    renamed = [tmp_path / f"s{i}" for i in range(1, N + 1)]
    for src, dest in zip(shard_dirs(built), renamed):
        shutil.copytree(src, dest)
        header = json.loads((dest / SHARD_FILE).read_text())
        (dest / SHARD_FILE).write_text(json.dumps({**header, "triton_version": ANOTHER_TRITON}))
    with inside(built["checkout"]), pytest.raises(E.ShardMismatchError, match=f"triton version {ANOTHER_TRITON} and {TRITON}"):
        run(["merge", *map(str, renamed), "-o", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


def test_a_failed_compile_of_a_shard_is_reported_by_the_merge_as_by_one_build(built: dict[str, Path],
                                                                              tmp_path: Path) -> None:
    dirs = shard_dirs(built)
    failed = tmp_path / "shard-1"
    shutil.copytree(dirs[0], failed)
    shutil.rmtree(failed / "jobs/8")  # the add kernel's compile, as a shard records a failure
    (failed / "jobs/8").mkdir()
    (failed / "jobs/8/error.json").write_text(json.dumps({"type": "PtxasError", "message": "add: ptxas said no"}))
    with inside(built["checkout"]), pytest.raises(E.PtxasError, match="add: ptxas said no") as caught:
        run(["merge", str(failed), *dirs[1:], "-o", str(tmp_path / "out"), "-q"])
    report = caught.value.report  # type: ignore[attr-defined]
    assert report.written == [str(tmp_path / "out" / "accumulate")] and report.not_written == ["add"]
    assert tree(tmp_path / "out" / "accumulate") == tree(built["whole"] / "accumulate")


@pytest.mark.parametrize("text", ["0/4", "5/4", "2", "a/b", "1/0", "-1/2"])
def test_bad_shard_numbers_are_usage_errors(text: str) -> None:
    with pytest.raises(E.UsageError, match=f"--shard {text}: write I/N with 1 <= I <= N"):
        parse_shard(text)


def test_a_shard_never_writes_over_artifacts_or_into_a_merge(built: dict[str, Path], tmp_path: Path) -> None:
    with inside(built["checkout"]):
        with pytest.raises(E.OutputPathError, match="holds files, and no tmlr-shard.json"):
            run([*BUILD, "-o", str(built["whole"]), "--shard", "1/4"])
        with pytest.raises(E.OutputPathError, match="a shard folder; merge into another folder"):
            run(["merge", *shard_dirs(built), "-o", shard_dirs(built)[0]])
        with pytest.raises(E.UsageError, match="--shard with --dump-passes"):
            run([*BUILD, "-o", str(tmp_path / "s"), "--shard", "1/4", "--dump-passes", str(tmp_path / "d.log")])
    assert sorted(os.listdir(built["whole"])) == ["accumulate", "add", "serve.json"]


def test_a_shard_whose_compile_fails_writes_its_folder_and_the_merge_fails_as_one_build(tmp_path: Path) -> None:
    bad = [str(ROOT / "examples/kernels/vector_add.py:add"), "--signature", "*fp32:16, *fp32:16, *fp32:16, i32, 1000",
           "--arch", "80", "-q"]  # a BLOCK that is no power of 2: tl.arange refuses it
    with pytest.raises(E.CompileError) as whole:
        run([*bad, "-o", str(tmp_path / "whole")])
    with pytest.raises(E.CompileError) as shard:
        run([*bad, "-o", str(tmp_path / "shard"), "--shard", "1/1"])
    assert str(shard.value) == str(whole.value)
    assert shard.value.report.written == [str(tmp_path / "shard")]  # type: ignore[attr-defined]
    assert json.loads((tmp_path / "shard/jobs/0/error.json").read_text())["type"] == type(whole.value).__name__
    with pytest.raises(E.CompileError) as merged:
        run(["merge", str(tmp_path / "shard"), "-o", str(tmp_path / "out")])
    assert (type(merged.value), str(merged.value)) == (type(whole.value), str(whole.value))
    assert merged.value.report.not_written == whole.value.report.not_written == ["add"]  # type: ignore[attr-defined]
    assert os.listdir(tmp_path / "out") == os.listdir(tmp_path / "whole") == []
