"""tmlr inspect / verify / --version on CPU (no GPU here: device checks are skipped or disabled), and a closed
output pipe."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from unittest import mock

import pytest

import fake_driver
import tmlr_runtime as tr
from tmlr_runtime import driver
from tmlr_runtime.launch import compiled
from tmlr_runtime.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADD = os.path.join(ROOT, "examples", "artifacts", "add")


def test_inspect_text(capsys):
    assert main(["inspect", "--no-device", ADD]) == 0
    out = capsys.readouterr().out
    assert "add[grid](x_ptr: *fp32 (16-byte aligned)" in out
    assert "sm_80" in out and "sm_90a" in out and "regs " in out and "sha256" in out


def test_inspect_json(capsys):
    assert main(["inspect", "--json", "--no-device", ADD]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [v["arch"] for v in info["variants"]] == ["sm_80", "sm_90a"]
    assert all(isinstance(v["registers"], int) and v["registers"] > 0 for v in info["variants"])
    assert info["signature"][-1] == {"name": "BLOCK", "kind": "constexpr", "type": None, "divisibility": 1, "value": 1024}


def test_verify_ok_and_failures(tmp_path, capsys):
    assert main(["verify", "--no-device", ADD]) == 0
    bad = tmp_path / "add"
    shutil.copytree(ADD, bad)
    cubin = next(p for p in bad.iterdir() if p.suffix == ".cubin")
    data = bytearray(cubin.read_bytes())
    data[len(data) // 2] ^= 0xFF
    cubin.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["verify", "--no-device", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "sha256" in out


def test_verify_applies_jsonschema_where_installed(monkeypatch, capsys):
    assert main(["verify", "--no-device", ADD]) == 0
    assert "ok       metadata.json validates with jsonschema  - schema/metadata.schema.json" in capsys.readouterr().out
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema raises ImportError
    assert main(["verify", "--json", "--no-device", ADD]) == 0
    rows = {r["check"]: r for r in json.loads(capsys.readouterr().out)}
    row = rows["metadata.json validates with jsonschema"]
    assert (row["verdict"], row["detail"]) == ("skipped", "jsonschema not installed: schema check skipped, fields checked by the reader")
    assert rows["metadata.json follows the schema"]["ok"] is True


def test_verify_reports_what_jsonschema_finds(tmp_path, monkeypatch, capsys):
    # a document the reader accepted but jsonschema would not (here: the reader is told to accept it)
    bad = tmp_path / "add"
    shutil.copytree(ADD, bad)
    meta = json.loads((bad / "metadata.json").read_text())
    meta["variants"][0]["launch"]["num_warps"] = 64
    (bad / "metadata.json").write_text(json.dumps(meta))
    accepted = tr.ArtifactMetadata.read(ADD)  # the reader is given the unchanged document's records
    monkeypatch.setattr("tmlr_runtime.cli.read", lambda directory, stats=None: accepted)
    assert main(["verify", "--no-device", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL     metadata.json validates with jsonschema  - $.variants[0].launch.num_warps: 64 is greater than the maximum of 32" in out


def test_verify_entry_symbol_missing(tmp_path, capsys):
    bad = tmp_path / "add"
    shutil.copytree(ADD, bad)
    meta = json.loads((bad / "metadata.json").read_text())
    meta["variants"][0]["entry"] = "not_there"
    (bad / "metadata.json").write_text(json.dumps(meta))
    assert main(["verify", "--json", "--no-device", str(bad)]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert any(not r["ok"] and "not_there" in r["check"] for r in rows)


def test_errors_are_messages_not_tracebacks(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tmlr inspect: error:") and "Traceback" not in err


@pytest.fixture
def no_gpu(monkeypatch):
    """The driver library is missing, whatever this machine has (and no kernel is cached)."""

    def init():
        raise tr.CudaUnavailableError("the NVIDIA driver library (libcuda) could not be loaded: (test)")

    monkeypatch.setattr(driver, "init", init)
    with fake_driver.fresh_caches():
        yield


def test_verify_without_gpu_says_skipped_not_ok(no_gpu, capsys):
    assert main(["verify", ADD]) == 0  # nothing failed
    lines = capsys.readouterr().out.splitlines()
    device = [line for line in lines if "this device can load and run it" in line]
    assert device == ["skipped  this device can load and run it  - not checked: no GPU here"]
    assert lines[-3:] == ["tmlr verify: 1 passed, 0 failed (of 1 artifact)",
                          "  skipped in 1 of 1: not checked: no GPU here, so loading on a device was not checked (the NVIDIA "
                          "driver library (libcuda) could not be loaded: (test))",
                          "  a skipped check is no failure; --strict makes it one"]
    assert all(line.startswith("ok       ") for line in lines[:-3] if line not in device)
    assert main(["verify", "--json", ADD]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["verdict"], r["ok"]) for r in rows if r["check"] == "this device can load and run it"] == [("skipped", None)]
    assert all(r["verdict"] == "ok" and r["ok"] is True for r in rows[:-1])


def test_verify_no_device_says_what_was_not_checked(capsys):
    assert main(["verify", "--no-device", ADD]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-4] == "skipped  this device can load and run it  - not checked: loading the cubin on a device (--no-device)"
    assert lines[-2] == "  skipped in 1 of 1: not checked: loading the cubin on a device (--no-device)"


def test_verify_of_many_artifacts_without_gpu_says_why_once_in_a_summary(no_gpu, capsys, tmp_path):
    # issue 28: the 300-character reason was repeated per artifact, and nothing summed up
    assert main(["verify", OUT_FOLDER]) == 0
    out = capsys.readouterr().out
    n = len(FOLDER_ARTIFACTS)
    assert out.count("(test)") == 1 and out.count("  - not checked: no GPU here\n") == n
    assert out.endswith(f"tmlr verify: {n} passed, 0 failed (of {n} artifacts)\n"
                        f"  skipped in {n} of {n}: not checked: no GPU here, so loading on a device was not checked (the "
                        "NVIDIA driver library (libcuda) could not be loaded: (test))\n"
                        "  a skipped check is no failure; --strict makes it one\n")
    assert main(["verify", "--strict", OUT_FOLDER]) == 1
    assert capsys.readouterr().out.splitlines()[-3:] == [f"tmlr verify: 0 passed, {n} failed (of {n} artifacts)", mock.ANY,
                                                          "  --strict: a skipped check failed each of them"]
    folder = tmp_path / "out"  # one damaged, one good: counted apart
    shutil.copytree(ADD, folder / "add")
    shutil.copytree(ADD, folder / "bad")
    (folder / "bad" / "add.sm_80.cubin").write_bytes(b"\x7fELF")
    assert main(["verify", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "tmlr verify: 1 passed, 1 failed (of 2 artifacts)\n  skipped in 2 of 2: not checked: no GPU here" in out
    assert main(["verify", "--json", str(folder)]) == 1  # JSON: the rows, each with its whole detail, and no summary
    docs = json.loads(capsys.readouterr().out)
    assert [r["detail"] for r in docs[0]["checks"] if r["ok"] is None] == [
        "not checked: no GPU here, so loading on a device was not checked (the NVIDIA driver library (libcuda) could not be loaded: (test))"]


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    pyproject = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    version = re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1)
    assert capsys.readouterr().out == f"tmlr {version}\n{compiled.describe()}\n" and tr.__version__ == version


def test_version_says_which_launch_path_is_active():
    """The second line of ``tmlr --version``; TMLR_PURE_PYTHON=1 forces the Python path."""
    def version(**env: str) -> str:
        out = subprocess.run([sys.executable, "-m", "tmlr_runtime", "--version"], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONPATH": ROOT, **env})
        return out.stdout.splitlines()[1]

    assert version(TMLR_PURE_PYTHON="1") == "launch path: pure Python (TMLR_PURE_PYTHON is set)"
    built = importlib.util.find_spec("tmlr_runtime.launch._fastlaunch") is not None
    assert version(TMLR_PURE_PYTHON="0").startswith("launch path: compiled (_fastlaunch." if built else "launch path: pure Python (the extension")


@pytest.mark.parametrize("args", [["inspect", "--no-device", ADD], ["inspect", "--json", "--no-device", ADD],
                                  ["verify", "--no-device", ADD], ["--help"]])
def test_closed_pipe_ends_quietly_with_sigpipe_status(args):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write: every write to stdout fails with EPIPE
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    try:
        p = subprocess.run([sys.executable, "-m", "tmlr_runtime", *args], stdout=write, stderr=subprocess.PIPE,
                           text=True, env=env, timeout=60)
    finally:
        os.close(write)
    expected = 141 if args[0] != "--help" else 0  # argparse's help exits by itself (SystemExit) after printing
    assert (p.returncode, p.stderr) == (expected, "")


def test_inspect_shows_tensor_descriptors(capsys):
    desc = os.path.join(ROOT, "tests", "gpu", "artifacts", "desc_scale")
    assert main(["inspect", "--no-device", desc]) == 0
    out = capsys.readouterr().out
    assert "schema v2" in out
    assert ("in_desc: tensordesc<fp16[64, 128]> -> tensormap (box [64, 64], swizzle 128B, data type 6), shape:i32 x2, "
            "strides:i64 x2") in out
    assert main(["inspect", "--json", "--no-device", desc]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["schema_version"] == 2 and info["signature"][0]["descriptor"]["tensormap"]["block_size"] == [64, 64]


# -- issue 19: the -o folder, --strict, a damaged artifact under inspect, tune's refusals ----------------
OUT_FOLDER = os.path.join(ROOT, "examples", "artifacts")  # a folder as tmlr-build -o writes it
AUTOTUNE = os.path.join(ROOT, "examples", "autotune", "artifacts", "matmul")
FOLDER_ARTIFACTS = sorted(n for n in os.listdir(OUT_FOLDER) if os.path.isdir(os.path.join(OUT_FOLDER, n)))  # not its serve.json


def test_inspect_and_verify_of_an_output_folder_take_each_artifact(capsys):
    assert main(["verify", "--no-device", OUT_FOLDER]) == 0
    out = capsys.readouterr().out
    assert f"== {ADD}" in out and f"== {os.path.join(OUT_FOLDER, 'matmul')}" in out
    assert main(["inspect", "--json", "--no-device", OUT_FOLDER]) == 0
    infos = json.loads(capsys.readouterr().out)
    assert [info["name"] for info in infos] == FOLDER_ARTIFACTS


def test_loading_an_output_folder_names_the_artifacts_in_it():
    with pytest.raises(tr.ArtifactError) as e:
        tr.Kernel.load(OUT_FOLDER)
    assert f"holding {len(FOLDER_ARTIFACTS)} artifact(s): {ADD}" in str(e.value)
    assert f"load one of them, e.g. Kernel.load({ADD!r})" in str(e.value)


def test_verify_strict_fails_when_the_device_check_is_skipped(capsys):
    assert main(["verify", "--strict", "--no-device", ADD]) == 1
    captured = capsys.readouterr()
    assert "--strict: 1 check(s)" in captured.err and "this device can load and run it" in captured.err
    assert main(["verify", "--strict", "--no-device", "--json", AUTOTUNE]) == 1  # the family's table row is no skip
    rows = json.loads(capsys.readouterr().out)
    assert [r["check"] for r in rows if r["ok"] is None] == ["this device can load and run it"]


@pytest.mark.parametrize("family", [False, True])
def test_inspect_of_a_damaged_artifact_says_so_and_exits_1(tmp_path, capsys, family):
    bad = tmp_path / "k"
    shutil.copytree(AUTOTUNE if family else ADD, bad)
    cubin = next(p for p in sorted(bad.rglob("*.cubin")))
    data = bytearray(cubin.read_bytes())
    data[-1] ^= 0xFF
    cubin.write_bytes(bytes(data))
    assert main(["inspect", "--no-device", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"DAMAGED   {cubin}: sha256" in out and f"run `tmlr verify {bad}` for every check" in out


def test_tune_refuses_a_missing_cases_file_a_plain_artifact_and_a_folder_before_the_driver(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(driver, "init", lambda: pytest.fail("tune touched the driver"))
    cases = os.path.join(ROOT, "examples", "autotune", "tune_cases.py") + ":cases"
    for argv, message in (
            ([AUTOTUNE, "--cases", "nothere.py:cases"], "nothere.py is not a Python file (check the path)"),
            ([ADD, "--cases", cases], "not a family: nothing to tune"),
            ([os.path.dirname(AUTOTUNE), "--cases", cases], f"the families among them are {AUTOTUNE}: tune each, e.g. tmlr tune {AUTOTUNE}"),
            ([OUT_FOLDER, "--cases", cases], "none of them is a family with @triton.autotune configs, which is what tmlr tune takes")):
        assert main(["tune", *argv]) == 1
        assert message in capsys.readouterr().err


def test_tune_of_an_output_folder_suggests_its_families_not_a_plain_kernel(tmp_path, capsys):
    # issue 28: `tmlr tune out` suggested the first artifact, a plain kernel, which tune refuses in turn
    out = tmp_path / "out"
    out.mkdir()
    for name, target in (("add", ADD), ("matmul", AUTOTUNE), ("zz_broken", tmp_path / "zz")):
        os.symlink(target, out / name)
    (tmp_path / "zz").mkdir()
    (tmp_path / "zz" / "metadata.json").write_text("{not json")
    assert main(["tune", str(out), "--cases", os.path.join(ROOT, "examples", "autotune", "tune_cases.py") + ":cases"]) == 1
    err = capsys.readouterr().err
    assert f"holding 3 artifact(s): {out / 'add'}, {out / 'matmul'}, {out / 'zz_broken'}" in err
    assert err.endswith(f"the families among them are {out / 'matmul'}: tune each, e.g. tmlr tune {out / 'matmul'} --cases ...\n")


# --- PTX (tests/gpu/artifacts/add_ptx: an sm_80 cubin and compute_80 PTX) -----------------------------
ADD_PTX = os.path.join(ROOT, "tests", "gpu", "artifacts", "add_ptx")


@pytest.mark.parametrize("cc, loads, words", [
    ("9.0", "ptx", "PTX compute_80 (add_ptx.compute_80.ptx), compiled by the driver at load: no cubin runs on 9.0"),
    ("12.0", "ptx", "PTX compute_80"),
    ("8.6", "cubin", "cubin sm_80 (add_ptx.sm_80.cubin, compatible: built for 8.0)"),
    ("8.0", "cubin", "cubin sm_80 (add_ptx.sm_80.cubin, exact)"),
    ("7.5", None, "nothing: add_ptx: nothing in the artifact runs on this GPU (compute capability 7.5)"),
])
def test_inspect_says_what_a_gpu_would_load(capsys, cc, loads, words):
    status = 0 if loads else 1  # nothing loads there: the check before a deploy fails
    assert main(["inspect", "--no-device", "--cc", cc, ADD_PTX]) == status
    out = capsys.readouterr().out
    assert f"  on {cc}" in out and words in out
    assert "ptx   add_ptx.compute_80.ptx  " in out
    assert main(["inspect", "--no-device", "--json", "--cc", cc, ADD_PTX]) == status
    info = json.loads(capsys.readouterr().out)
    assert info["on"]["loads"] == loads and info["schema_version"] == 4
    assert info["variants"][0]["ptx"]["arch"] == "compute_80" and info["variants"][0]["ptx"]["file"] == "add_ptx.compute_80.ptx"


def test_inspect_cc_of_a_family_says_it_per_variant(capsys):
    assert main(["inspect", "--no-device", "--json", "--cc", "9.0", AUTOTUNE]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["variants"] and all(v["on"]["loads"] == "cubin" and v["on"]["arch"] == "sm_90a" for v in info["variants"])
    assert info["on"] == {"cc": "9.0", "variants": 24, "loading": 24}
    assert main(["inspect", "--no-device", "--cc", "10.0", AUTOTUNE]) == 1  # no variant loads: the deploy check fails
    captured = capsys.readouterr()
    assert "on 10.0: nothing: " in captured.out
    assert "  on 10.0: 0 of 24 variants load: a call that takes one of the other 24 fails there\n" in captured.out
    assert captured.err.startswith(f"tmlr inspect: --cc: 24 of 24 variants of {AUTOTUNE} load nothing on compute capability 10.0 (v/")


def test_inspect_cc_of_a_family_fails_when_some_variant_loads_nothing(tmp_path, capsys):
    # a call may take any variant: one that loads nothing on the GPU fails those calls there, so the check fails
    family = tmp_path / "matmul"
    shutil.copytree(AUTOTUNE, family)
    index = json.loads((family / "metadata.json").read_text())
    first = family / index["variants"][0]["dir"]
    shutil.copytree(os.path.join(ROOT, "tests", "gpu", "artifacts", "add_ptx"), first, dirs_exist_ok=True)  # an sm_80 + PTX one
    assert main(["inspect", "--no-device", "--json", "--cc", "10.0", str(family)]) == 1
    info = json.loads(capsys.readouterr().out)
    assert info["on"] == {"cc": "10.0", "variants": 24, "loading": 1} and info["problems"] == []
    assert [v["on"]["loads"] for v in info["variants"]][:2] == ["ptx", None]
    assert main(["verify", "--no-device", "--json", "--cc", "10.0", str(family)]) == 1
    rows = json.loads(capsys.readouterr().out)
    on = [r for r in rows if "compute capability 10.0" in r["check"]]
    assert len(on) == 24 and [r["ok"] for r in on] == [True] + [False] * 23
    assert on[0]["check"] == f"{index['variants'][0]['dir']}: a GPU of compute capability 10.0 loads it"
    # (the sub-artifact swapped in has another signature than the index's, which verify says too)
    assert {r["check"] for r in rows if r["ok"] is False} == {r["check"] for r in on[1:]} | {
        "sub-artifacts match the index (signatures, cubin sha256)"}


@pytest.mark.parametrize("cc", ["9", "90", "sm_90", "0.9", "9.x", "9.00", "100.0", "9,0"])
@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_cc_takes_x_y_only(capsys, cc, command):
    # "9" was read as 0.9 (and "90" as 9.0): either could be meant, so X.Y only
    with pytest.raises(SystemExit) as e:
        main([command, "--no-device", "--cc", cc, ADD_PTX])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith(f"tmlr {command}: error: --cc takes a compute capability as X.Y, e.g. 9.0 (H100) or 8.6; {cc!r} is not one\n")


@pytest.mark.parametrize("cc, ok, words", [
    ("9.0", True, "PTX compute_80 (add_ptx.compute_80.ptx), compiled by the driver at load"),
    ("12.0", True, "PTX compute_80"),
    ("7.5", False, "tmlr does not support a GPU of compute capability 7.5"),
])
def test_verify_cc_fails_when_nothing_loads_there(capsys, cc, ok, words):
    assert main(["verify", "--no-device", "--cc", cc, ADD_PTX]) == (0 if ok else 1)
    out = capsys.readouterr().out
    assert f"{'ok     ' if ok else 'FAIL   '}  a GPU of compute capability {cc} loads it  - " in out and words in out
    assert main(["verify", "--no-device", "--cc", "12.0", ADD]) == 1  # sm_80 and sm_90a cubins, no PTX
    out = capsys.readouterr().out
    assert "FAIL     a GPU of compute capability 12.0 loads it  - nothing: add: nothing in the artifact runs on this GPU" in out
    assert "e.g. `tmlr-build ... --arch 89 --ptx`" in out and "--arch 120" not in out


def test_verify_checks_the_ptx_digest(tmp_path, capsys):
    assert main(["verify", "--no-device", ADD_PTX]) == 0
    out = capsys.readouterr().out
    assert "ok       sm_80: ptx compute_80 size and sha256  - add_ptx.compute_80.ptx" in out
    assert "ok       sm_80: entry 'add' in the PTX" in out
    bad = tmp_path / "add_ptx"
    shutil.copytree(ADD_PTX, bad)
    ptx = bad / "add_ptx.compute_80.ptx"
    ptx.write_bytes(ptx.read_bytes().replace(b"add.f32", b"sub.f32"))  # the same size, another kernel
    assert main(["verify", "--no-device", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL     sm_80: ptx compute_80 size and sha256" in out and "does not match metadata.json" in out
    assert main(["inspect", "--no-device", str(bad)]) == 1
    assert f"DAMAGED   {ptx}: sha256" in capsys.readouterr().out
