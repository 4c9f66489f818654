"""A build never loses data (issue 19): a rebuild keeps every file it did not write, a tuning table follows
the cubin bytes it was measured on (kept, re-stamped or set aside, never dropped), every check that needs no
compile runs for the whole request first, and a build that fails part way says what it wrote and what not."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from tmlr_build.cli import main, run
from tmlr_build.common import errors as E
from tmlr_runtime.cli.family import verify_family
from tmlr_runtime.family.tuning import cache_path, choices, entry, read_entries, write_entries

ROOT = Path(__file__).resolve().parents[2]
SPLIT_K = f"{ROOT}/tests/data/autotune/split_k.py:accumulate"
ADD = f"{ROOT}/examples/kernels/vector_add.py:add"
ADD_SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"
DEVICE = "NVIDIA H200"


def build_family(out: Path, configs: str = "0") -> Path:
    """split_k's accumulate: 1 config x MASKED True/False = 2 variants (seconds on a CPU)."""
    run([SPLIT_K, "--signature", "*fp32:16, *fp32:16, i32", "--heuristic", "LIMIT=0", "--configs", configs, "-o",
         str(out), "--arch", "90", "-q"])
    return out / "accumulate"


def index_sha(family: Path) -> str:
    return hashlib.sha256((family / "metadata.json").read_bytes()).hexdigest()


def write_table(family: Path, sha: str) -> bytes:
    """A tuning table as `tmlr tune` writes it, keyed by the index sha256 ``sha``."""
    write_entries(str(family / "tuning.json"), "accumulate", [entry(DEVICE, sha, [4096, "fp32", "fp32"], 0, [0.01])], 1)
    return (family / "tuning.json").read_bytes()


def edit_index(family: Path, change) -> None:
    doc = json.loads((family / "metadata.json").read_text())
    change(doc)
    (family / "metadata.json").write_text(json.dumps(doc, indent=2) + "\n")


def test_a_rebuild_keeps_the_users_files_and_the_table_of_the_same_bytes(tmp_path: Path) -> None:
    family = build_family(tmp_path)
    index = json.loads((family / "metadata.json").read_text())
    for v in index["variants"]:  # the index records each variant's cubin bytes
        sub = json.loads((family / v["dir"] / "metadata.json").read_text())
        assert v["cubin_sha256"] == {"sm_90a": sub["variants"][0]["cubin"]["sha256"]}
    table = write_table(family, index_sha(family))
    (family / "README.txt").write_text("measured on the lab's H200\n")
    (family / "notes").mkdir()
    (family / "notes" / "run.log").write_text("log\n")
    report, _ = run([SPLIT_K, "--signature", "*fp32:16, *fp32:16, i32", "--heuristic", "LIMIT=0", "--configs", "0",
                     "-o", str(tmp_path), "--arch", "90", "-q"])
    assert (family / "tuning.json").read_bytes() == table
    assert (family / "README.txt").read_text() == "measured on the lab's H200\n"
    assert (family / "notes" / "run.log").read_text() == "log\n"
    assert report.notes == [] and not any("tuning" in w for w in report.warnings)


def test_a_table_of_an_index_without_digests_is_restamped_when_the_cubins_are_unchanged(tmp_path: Path) -> None:
    family = build_family(tmp_path)
    new_sha = index_sha(family)
    edit_index(family, lambda d: [v.pop("cubin_sha256") for v in d["variants"]])  # as written before issue 19
    old_sha = index_sha(family)
    table = write_table(family, old_sha)
    checks = {name: ok for name, ok, _ in verify_family(str(family), with_device=False)}
    assert checks["index records each variant's cubin sha256"] is None and False not in checks.values()
    report, _ = run([SPLIT_K, "--signature", "*fp32:16, *fp32:16, i32", "--heuristic", "LIMIT=0", "--configs", "0",
                     "-o", str(tmp_path), "--arch", "90", "-q"])
    assert index_sha(family) == new_sha
    assert (family / "tuning.json").read_bytes() == table.replace(old_sha.encode(), new_sha.encode())
    assert choices(read_entries(str(family / "tuning.json"), 1), DEVICE, new_sha) == {(4096, "fp32", "fp32"): 0}
    assert report.notes == [f"accumulate: kept tuning.json: its configs, variants and cubins are unchanged; 1 entries "
                            f"now name the new index sha256 {new_sha[:12]}"]
    assert [c for c in verify_family(str(family), with_device=False) if c[1] is False] == []


@pytest.mark.parametrize("change", ["cubin", "configs"])
def test_a_table_of_other_bytes_is_kept_aside_and_the_build_says_so(tmp_path: Path, change: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    family = build_family(tmp_path)
    if change == "cubin":  # as if another Triton had built the old family: its index records other bytes
        edit_index(family, lambda d: d["variants"][0].update(cubin_sha256={"sm_90a": "0" * 64}))
    old_sha = index_sha(family)
    table = write_table(family, old_sha)
    argv = [SPLIT_K, "--signature", "*fp32:16, *fp32:16, i32", "--heuristic", "LIMIT=0", "--configs",
            "1" if change == "configs" else "0", "-o", str(tmp_path), "--arch", "90"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    aside = family / f"tuning.stale-{old_sha[:12]}.json"
    assert aside.read_bytes() == table and not (family / "tuning.json").exists()
    why = "1 of 2 variants have other cubin bytes" if change == "cubin" else "the family's configs, heuristics or variants"
    assert f"tmlr-build: warning: accumulate: tuning.json was measured on another build ({why}" in err
    assert f"kept as {aside.name} and not used" in err


def test_a_single_artifact_rebuild_keeps_user_files_and_replaces_only_its_own(tmp_path: Path) -> None:
    run([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "80,90", "-q"])
    add = tmp_path / "add"
    (add / "README.txt").write_text("notes\n")
    run([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "90", "-q"])
    assert sorted(p.name for p in add.iterdir()) == ["README.txt", "add.sm_90a.cubin", "metadata.json"]


def spec(tmp_path: Path, doc: dict) -> str:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_spec_default_yields_to_the_autotune_config(tmp_path: Path) -> None:
    path = spec(tmp_path, {"arch": [90], "options": {"num_warps": 2}, "kernels": [
        {"source": SPLIT_K, "signature": "*fp32:16, *fp32:16, i32", "heuristics": {"LIMIT": [0]}, "configs": [1]},
        {"source": ADD, "signature": ADD_SIG}]})
    run(["--spec", path, "-o", str(tmp_path / "out"), "-q"])
    index = json.loads((tmp_path / "out" / "accumulate" / "metadata.json").read_text())
    warps = {json.loads((tmp_path / "out" / "accumulate" / v["dir"] / "metadata.json").read_text())["variants"][0]
             ["launch"]["num_warps"] for v in index["variants"]}
    assert warps == {8}  # config 1's, not the spec's default
    add = json.loads((tmp_path / "out" / "add" / "metadata.json").read_text())
    assert add["variants"][0]["launch"]["num_warps"] == 2  # a kernel without configs takes the default


def test_every_entry_is_checked_before_anything_compiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, {"arch": [90], "kernels": [
        {"source": ADD, "signature": ADD_SIG},
        {"source": SPLIT_K, "signature": "*fp32:16, *fp32:16, i32", "heuristics": {"LIMIT": [0]},
         "options": {"num_warps": 4}},
        {"source": SPLIT_K, "signature": "*fp32:16, *fp32:16, i32", "name": "acc2"},  # LIMIT has no values
        {"source": ADD, "signature": ADD_SIG, "name": "add_wraps", "options": {"num_wraps": 8}}]})
    out = tmp_path / "out"
    with pytest.raises(E.BuildFailedError) as info:
        run(["--spec", path, "-o", str(out), "-q"])
    # every entry is checked, the first refusal did not stop the others
    assert [str(e).split(":")[0] for e in info.value.errors] == ["vector_add.py", "accumulate", "accumulate"]
    assert "cannot set Triton option(s) num_wraps" in str(info.value.errors[0])
    assert "heuristic LIMIT" in str(info.value.errors[2])
    assert [type(e) for e in info.value.errors] == [E.OptionError, E.OptionError, E.SpecError]
    assert info.value.report.not_written == ["accumulate", "acc2", "add", "add_wraps"]
    assert list(out.iterdir()) == []
    assert main(["--spec", path, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "[1/" not in err  # no compile progress: nothing was compiled
    assert "tmlr-build: not written: " in err and "nothing was written" in err


def test_a_build_that_fails_part_way_says_what_it_wrote_and_what_not(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, {"arch": [90], "kernels": [
        {"source": ADD, "signature": ADD_SIG},
        {"source": ADD, "signature": ADD_SIG.replace("1024", "1000"), "name": "add_1000"}]})  # arange needs 2**k
    out = tmp_path / "out"
    assert main(["--spec", path, "-o", str(out), "-q"]) == 1
    err = capsys.readouterr().err
    assert f"tmlr-build: wrote {out / 'add'}" in err
    assert "tmlr-build: not written: add_1000 (1 written;" in err
    assert sorted(p.name for p in out.iterdir()) == ["add", "serve.json"]  # the index lists what was written
    assert [e["artifact"] for e in json.loads((out / "serve.json").read_text())["kernels"]] == ["add"]


@pytest.mark.skipif(not os.environ.get("TMLR_TEST_OTHER_PYTHON"), reason="TMLR_TEST_OTHER_PYTHON not set")
def test_a_family_rebuilt_by_another_triton_does_not_reuse_the_table(tmp_path: Path,
                                                                    capfd: pytest.CaptureFixture[str]) -> None:
    # the case: same configs and signatures, other cubins - the old index and cache path were the same
    family = build_family(tmp_path)
    first = index_sha(family)
    write_table(family, first)
    argv = [SPLIT_K, "--signature", "*fp32:16, *fp32:16, i32", "--heuristic", "LIMIT=0", "--configs", "0", "-o",
            str(tmp_path), "--arch", "90"]
    assert main(["--python", os.environ["TMLR_TEST_OTHER_PYTHON"], *argv]) == 0
    assert index_sha(family) != first and cache_path(index_sha(family)) != cache_path(first)
    assert "2 of 2 variants have other cubin bytes" in capfd.readouterr().err  # printed by the other interpreter
    assert (family / f"tuning.stale-{first[:12]}.json").exists() and not (family / "tuning.json").exists()


# --- the IR a user edits in place (issue 28): a rebuild replaces ir/ and v/ but keeps what tmlr-build did not write


@pytest.fixture(scope="module")
def kept_ir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """add for sm_90a with --keep-ir, built once; each test works on a copy of it."""
    out = tmp_path_factory.mktemp("kept_ir")
    run([ADD, "--signature", ADD_SIG, "-o", str(out), "--arch", "90", "--keep-ir", "-q"])
    return out / "add"


def copy_of(artifact: Path, tmp_path: Path) -> Path:
    shutil.copytree(artifact, tmp_path / "out" / artifact.name)
    return tmp_path / "out" / artifact.name


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def edited_folders(artifact: Path) -> list[Path]:
    return sorted(artifact.glob("edited-*"))


def test_each_ir_folder_records_what_tmlr_build_wrote_there(kept_ir: Path) -> None:
    folder = kept_ir / "ir" / "sm_90a"
    lines = (folder / "SHA256SUMS").read_text().splitlines()  # sha256sum -c reads it
    assert lines == [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}"
                     for p in sorted(folder.iterdir()) if p.name != "SHA256SUMS"]
    assert len(lines) == 6


def test_an_unedited_ir_tree_is_replaced_silently(kept_ir: Path, tmp_path: Path) -> None:
    add = copy_of(kept_ir, tmp_path)
    report, _ = run([ADD, "--signature", ADD_SIG, "-o", str(add.parent), "--arch", "90", "-q"])
    assert sorted(p.name for p in add.iterdir()) == ["add.sm_90a.cubin", "metadata.json"]
    assert report.notes == [] and report.kept == []


def test_an_edited_ir_file_survives_a_rebuild_and_is_reported(kept_ir: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    add = copy_of(kept_ir, tmp_path)
    ptx = add / "ir" / "sm_90a" / "add.ptx"
    ptx.write_text(ptx.read_text() + "// edited by hand\n")
    before = tree(add / "ir" / "sm_90a")
    assert main([ADD, "--signature", ADD_SIG, "-o", str(add.parent), "--arch", "90", "--json"]) == 0
    out, err = capsys.readouterr()
    [aside] = edited_folders(add)
    assert sorted(p.name for p in add.iterdir()) == ["add.sm_90a.cubin", aside.name, "metadata.json"]
    assert tree(aside) == {f"ir/sm_90a/{rel}": data for rel, data in before.items()}  # with the files beside it
    assert (f"tmlr-build: add: kept 1 file under ir/ that tmlr-build did not write as it is, with the files "
            f"beside it, in {aside}/ at the same paths: ir/sm_90a/add.ptx (edited)") in err
    assert json.loads(out)["kept"] == [{"artifact": str(add), "folder": str(aside),
                                        "files": {"ir/sm_90a/add.ptx": "edited"}}]
    # the kept folder builds as the IR folder did (arch, metadata and signature from the files beside the PTX)
    run([str(aside / "ir" / "sm_90a" / "add.ptx"), "-o", str(tmp_path / "again"), "-q"])
    assert (tmp_path / "again" / "add" / "add.sm_90a.cubin").is_file()
    # a later rebuild keeps the kept folder as any file of the user's, and has nothing more to keep
    report, _ = run([ADD, "--signature", ADD_SIG, "-o", str(add.parent), "--arch", "90", "--keep-ir", "-q"])
    assert edited_folders(add) == [aside] and report.kept == []


def test_a_users_extra_file_in_ir_is_kept(kept_ir: Path, tmp_path: Path) -> None:
    add = copy_of(kept_ir, tmp_path)
    (add / "ir" / "notes.txt").write_text("why this kernel is slow\n")
    (add / "ir" / "sm_90a" / "add.mine.ptx").write_text("// my variant\n")
    report, _ = run([ADD, "--signature", ADD_SIG, "-o", str(add.parent), "--arch", "90", "--keep-ir", "-q"])
    [aside] = edited_folders(add)
    assert report.kept[0]["files"] == {"ir/notes.txt": "not recorded", "ir/sm_90a/add.mine.ptx": "not recorded"}
    assert (aside / "ir" / "notes.txt").read_text() == "why this kernel is slow\n"
    assert (aside / "ir" / "sm_90a" / "add.mine.ptx").read_text() == "// my variant\n"
    assert sorted(p.name for p in (add / "ir").iterdir()) == ["sm_90a"]  # the new IR, as tmlr-build wrote it
    assert not (add / "ir" / "sm_90a" / "add.mine.ptx").exists()


def test_ir_without_a_record_is_kept(kept_ir: Path, tmp_path: Path) -> None:
    # IR an older tmlr-build wrote (no SHA256SUMS): nothing says it is unedited, so it is kept
    add = copy_of(kept_ir, tmp_path)
    (add / "ir" / "sm_90a" / "SHA256SUMS").unlink()
    report, _ = run([ADD, "--signature", ADD_SIG, "-o", str(add.parent), "--arch", "90", "-q"])
    assert set(report.kept[0]["files"].values()) == {"not recorded"} and len(report.kept[0]["files"]) == 6
    assert "and 2 more" in report.notes[0]


@pytest.mark.parametrize("keep_ir", [False, True])
def test_building_from_the_edited_ir_into_the_same_out_keeps_the_input(kept_ir: Path, tmp_path: Path,
                                                                        keep_ir: bool) -> None:
    # docs/debug-loop.md's loop: edit OUT/add/ir/sm_90a/add.ttgir and build it into the same OUT, again and again
    add = copy_of(kept_ir, tmp_path)
    ttgir = add / "ir" / "sm_90a" / "add.ttgir"
    edited = ttgir.read_text() + "// edited by hand\n"
    ttgir.write_text(edited)
    argv = [str(ttgir), "-o", str(add.parent), "-q", *(["--keep-ir"] if keep_ir else [])]
    for _ in range(2):
        report, _ = run(argv)
        assert ttgir.read_text() == edited and report.kept == [] and edited_folders(add) == []
        assert (add / "add.sm_90a.cubin").read_bytes() == (kept_ir / "add.sm_90a.cubin").read_bytes()
    if keep_ir:  # the folder is the new build's: it records the edited input as written, and a hand-edited sibling
        assert "add.ttir" not in os.listdir(ttgir.parent)  # (the TTIR is not what this build started from)
        assert "add.ttgir" not in (ttgir.parent / "SHA256SUMS").read_text()  # the input stays the user's
        ptx = ttgir.parent / "add.ptx"
        ptx.write_text(ptx.read_text() + "// edited too\n")
        report, _ = run(argv)
        assert report.kept[0]["files"] == {"ir/sm_90a/add.ptx": "edited"} and ttgir.read_text() == edited
    # building from the .py again keeps the edited TTGIR aside, with the files it needs beside it
    report, _ = run([ADD, "--signature", ADD_SIG, "-o", str(add.parent), "--arch", "90", "-q"])
    assert "ir/sm_90a/add.ttgir" in report.kept[-1]["files"] and not (add / "ir").exists()
    assert (Path(report.kept[-1]["folder"]) / "ir" / "sm_90a" / "add.ttgir").read_text() == edited


def test_a_family_variants_edited_ir_is_kept(tmp_path: Path) -> None:
    argv = [SPLIT_K, "--signature", "*fp32:16, *fp32:16, i32", "--heuristic", "LIMIT=0", "--configs", "0", "-o",
            str(tmp_path), "--arch", "90", "-q"]
    run([*argv, "--keep-ir"])
    family = tmp_path / "accumulate"
    vid = json.loads((family / "metadata.json").read_text())["variants"][0]["dir"]
    ttgir = family / vid / "ir" / "sm_90a" / "accumulate.ttgir"
    edited = ttgir.read_text() + "// edited by hand\n"
    ttgir.write_text(edited)
    (family / vid / "notes.txt").write_text("mine\n")
    report, _ = run(argv)
    [aside] = edited_folders(family)
    assert report.kept[0]["files"] == {f"{vid}/ir/sm_90a/accumulate.ttgir": "edited", f"{vid}/notes.txt": "not recorded"}
    assert (aside / vid / "ir" / "sm_90a" / "accumulate.ttgir").read_text() == edited
    assert (aside / vid / "notes.txt").read_text() == "mine\n"
    assert not (family / vid / "ir").exists() and not (family / vid / "notes.txt").exists()
    assert "accumulate: kept 2 files under v/ " in report.notes[0]
