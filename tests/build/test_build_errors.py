"""Every bad input gives a specific error class whose message names the fix, and the command line
turns it into a message and a non-zero exit status, never a traceback."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import tmlr_build
from tmlr_build.common import errors as E
from tmlr_build.cli import main, run
from tmlr_build.common.signature import parse_signature
from tmlr_build.common.triton_check import check_triton_version, release_in_range
from triton_facts import API

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ADD = f"{EXAMPLES}/kernels/vector_add.py:add"
ADD_SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"


@pytest.fixture(scope="module")
def ir90(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The add kernel's IR for sm_90a, with its metadata JSON and sidecar."""
    out = tmp_path_factory.mktemp("ir")
    run([ADD, "--signature", ADD_SIG, "-o", str(out), "--arch", "90", "--stop-after", "ptx", "-q"])
    return out / "add" / "ir" / "sm_90a"


def _fails(argv: list[str], cls: type[Exception], *needles: str) -> str:
    with pytest.raises(cls) as info:
        run(argv + ["-q"])
    message = str(info.value)
    for needle in needles:
        assert needle in message, f"{needle!r} not in: {message}"
    return message


def test_unparseable_ir_reports_the_mlir_diagnostic_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ttir"
    bad.write_text("module {\n  tt.func public @bad(%arg0: !tt.ptr<f16>) {\n    %0 = tt.bogus %arg0 : i32\n"
                   "    tt.return\n  }\n}\n")
    _fails([str(bad), "-o", str(tmp_path / "o"), "--arch", "90"], E.IRParseError, "bad.ttir:3:", "tt.bogus", "Fix the IR")


def test_ptxas_failure_reports_stage_log_and_repro(ir90: Path, tmp_path: Path) -> None:
    for f in ("add.json", "add.tmlr.json"):
        shutil.copy(ir90 / f, tmp_path / f)
    text = (ir90 / "add.ptx").read_text().replace("ret;", "bogus.instruction %r1;\n\tret;", 1)
    (tmp_path / "add.ptx").write_text(text)
    _fails([str(tmp_path / "add.ptx"), "-o", str(tmp_path / "o")], E.PtxasError,
           "ptxas", "ptx -> cubin", "bogus", "Repro", "--gpu-name=sm_90a")


def test_ttgir_made_for_another_arch(ir90: Path, tmp_path: Path) -> None:
    _fails([str(ir90 / "add.ttgir"), "-o", str(tmp_path / "o"), "--arch", "80"], E.ArchMismatchError,
           "cuda:90", "--arch 90", ".ttir")


def test_ttgir_made_for_an_unsupported_arch(ir90: Path, tmp_path: Path) -> None:
    # without --arch the file's own ttg.target is the target, checked like an --arch value
    (tmp_path / "add.ttgir").write_text((ir90 / "add.ttgir").read_text().replace('"cuda:90"', '"cuda:75"'))
    _fails([str(tmp_path / "add.ttgir"), "-o", str(tmp_path / "o"), "--signature", ADD_SIG], E.UnsupportedArchError,
           "--arch 75 is not supported", "80,86,89,90,100")


@pytest.mark.parametrize("ext", ["llir", "ptx"])
def test_llir_and_ptx_need_the_metadata_json(ir90: Path, tmp_path: Path, ext: str) -> None:
    shutil.copy(ir90 / f"add.{ext}", tmp_path / f"add.{ext}")
    _fails([str(tmp_path / f"add.{ext}"), "-o", str(tmp_path / "o"), "--arch", "90", "--signature", ADD_SIG],
           E.MissingMetadataError, "add.json", "--metadata")


def test_metadata_given_explicitly_makes_ptx_build(ir90: Path, tmp_path: Path) -> None:
    shutil.copy(ir90 / "add.ptx", tmp_path / "k.ptx")
    run([str(tmp_path / "k.ptx"), "--metadata", str(ir90 / "add.json"), "--signature", ADD_SIG,
         "--arg-names", "x,y,out,n,BLOCK", "-o", str(tmp_path / "o"), "-q"])
    doc = json.loads((tmp_path / "o" / "add" / "metadata.json").read_text())
    assert [p["name"] for p in doc["signature"]] == ["x", "y", "out", "n", "BLOCK"]


def test_ptx_without_any_types_asks_for_a_signature(ir90: Path, tmp_path: Path) -> None:
    shutil.copy(ir90 / "add.ptx", tmp_path / "add.ptx")
    shutil.copy(ir90 / "add.json", tmp_path / "add.json")
    _fails([str(tmp_path / "add.ptx"), "-o", str(tmp_path / "o")], E.SignatureError, "--signature", "add.tmlr.json")


def test_kernel_not_found_lists_the_kernels(tmp_path: Path) -> None:
    _fails([f"{EXAMPLES}/kernels/launch_latency.py:nope", "-o", str(tmp_path), "--arch", "80"],
           E.KernelNotFoundError, "'nope'", "add4, nop, nop_args")


def test_python_source_needs_a_kernel_name(tmp_path: Path) -> None:
    _fails([f"{EXAMPLES}/kernels/vector_add.py", "-o", str(tmp_path), "--arch", "80"], E.InputError,
           "vector_add.py:<kernel_name>")


@pytest.mark.parametrize("signature", ["*fp32:16, *fp32:16, i32, 1024", "*fp32, *fp32, *fp32, i32, 1024, 7"])
def test_signature_of_the_wrong_length_names_the_parameters(tmp_path: Path, signature: str) -> None:
    _fails([ADD, "--signature", signature, "-o", str(tmp_path), "--arch", "80"], E.SignatureError,
           "x_ptr, y_ptr, out_ptr, n, BLOCK", "one entry per parameter")


def test_unknown_type_lists_the_known_ones(tmp_path: Path) -> None:
    _fails([ADD, "--signature", "*fp32:16, *fp32:16, *fp32:16, int32:16, 1024", "-o", str(tmp_path), "--arch", "80"],
           E.SignatureError, "unknown type 'int32'", "i32")
    with pytest.raises(E.SignatureError, match="neither a known type"):
        parse_signature("*fp32, float")


def test_constexpr_given_a_type_or_runtime_given_a_string(tmp_path: Path) -> None:
    _fails([ADD, "--signature", "*fp32, *fp32, *fp32, i32, i32", "-o", str(tmp_path), "--arch", "80"],
           E.SignatureError, "BLOCK is a tl.constexpr")


def test_constexpr_by_name(tmp_path: Path) -> None:
    run([ADD, "--signature", "*fp32:16, *fp32:16, *fp32:16, i32", "--constexpr", "BLOCK=256", "-o", str(tmp_path),
         "--arch", "80", "-q"])
    doc = json.loads((tmp_path / "add" / "metadata.json").read_text())
    assert doc["signature"][-1] == {"name": "BLOCK", "kind": "constexpr", "value": 256}
    _fails([ADD, "--signature", "*fp32, *fp32, *fp32, i32", "--constexpr", "BLOK=256", "-o", str(tmp_path), "--arch", "80"],
           E.SignatureError, "BLOK", "x_ptr, y_ptr, out_ptr, n, BLOCK")


@pytest.mark.parametrize("arch", ["75", "87", "sm_120", "ninety"])
def test_unsupported_arch(tmp_path: Path, arch: str) -> None:
    _fails([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", arch], E.UnsupportedArchError, "80,86,89,90,100")


def test_ir_without_arch_asks_for_one(ir90: Path, tmp_path: Path) -> None:
    shutil.copy(ir90 / "add.ttir", tmp_path / "add.ttir")
    _fails([str(tmp_path / "add.ttir"), "-o", str(tmp_path / "o")], E.UsageError, "--arch")


def test_other_triton_version(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    supported = "3.3, 3.4, 3.5, 3.6, 3.7, 3.8, 3.9 only (tested: 3.3.1, 3.4.0, 3.5.1, 3.6.0, 3.7.1, 3.8.0, 3.9.0)"
    for version in ("3.2.0", "3.10.0", "4.0.0", "nightly"):
        with pytest.raises(E.TritonVersionError, match="triton==3.3.1") as info:
            check_triton_version(version)
        assert supported in str(info.value) and "--python" in str(info.value)
    for version in ("3.3.1", "3.4.0", "3.5.1", "3.6.0", "3.7.1", "3.8.0", "3.9.0", "3.9.1", "3.6.0+git1234"):
        assert check_triton_version(version) == version
    monkeypatch.setattr("tmlr_build.common.triton_check.installed_triton_version", lambda: "3.10.0")
    _fails([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "80"], E.TritonVersionError, "3.10.0", "3.3, 3.4")
    monkeypatch.setattr("tmlr_build.common.triton_check.installed_triton_version", lambda: None)
    _fails([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "80"], E.TritonVersionError, "pip install")


def test_output_path_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("")
    _fails([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "out"), "--arch", "80"], E.OutputPathError,
           "not a directory")
    (tmp_path / "o2").mkdir()
    (tmp_path / "o2" / "add").write_text("")
    _fails([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "o2"), "--arch", "80"], E.OutputPathError, "remove it")


@pytest.mark.parametrize("how, signame", [("os.kill(os.getpid(), signal.SIGSEGV)", "SIGSEGV"), ("os.abort()", "SIGABRT")])
def test_compiler_crash_is_reported_with_the_signal_and_last_output(tmp_path: Path, how: str, signame: str) -> None:
    # The worker executes the kernel file; one that kills its process stands in for a Triton crash.
    (tmp_path / "crash.py").write_text(f"import os, signal, sys\nsys.stderr.write('LLVM ERROR: boom\\n')\n"
                                       f"sys.stderr.flush()\n{how}\n")
    _fails([f"{tmp_path}/crash.py:k", "-o", str(tmp_path / "o"), "--arch", "80"], E.CompilerCrashError,
           signame, "crash.py", "Last compiler output:\nLLVM ERROR: boom")
    assert os.listdir(tmp_path / "o") == []


def test_clusters_need_sm90(tmp_path: Path) -> None:
    _fails([f"{EXAMPLES}/kernels/cluster_add.py:cluster_add", "--signature", ADD_SIG, "--num-ctas", "2",
            "-o", str(tmp_path), "--arch", "80,90"], E.OptionError, "needs capability 90", "--arch 90")


def test_kernel_file_that_fails_to_import(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import triton\n\nraise ValueError('nope')\n")
    _fails([f"{tmp_path}/broken.py:k", "-o", str(tmp_path / "o"), "--arch", "80"], E.InputError, "broken.py:3", "nope")


def test_triton_frontend_error_names_the_source_line(tmp_path: Path) -> None:
    (tmp_path / "typo.py").write_text("import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x):\n"
                                      "    tl.store(x, tl.undefined_thing(1))\n")
    _fails([f"{tmp_path}/typo.py:k", "--signature", "*fp32", "-o", str(tmp_path / "o"), "--arch", "80"],
           E.CompileError, "undefined_thing")


def test_a_scalar_typed_as_a_pointer_gives_tritons_reason_first_and_names_the_signature(tmp_path: Path) -> None:
    message = _fails([ADD, "--signature", "*fp32:16, *fp32:16, *fp32:16, *i32, 1024", "-o", str(tmp_path), "--arch", "80"],
                     E.CompileError, "Fix the kernel or its --signature", "pointer type for a scalar")
    first, rest = message.split("\n", 1)
    assert "invalid operands of type pointer<int32>" in first and "mask = offs < n" in rest
    assert message.index("invalid operands") < message.index("^")  # the reason, then the excerpt and its caret


def test_cubin_content_is_checked_before_any_flag_and_a_real_cubin_defaults_to_its_own_arch(tmp_path: Path) -> None:
    (tmp_path / "rand.cubin").write_bytes(os.urandom(4000))
    for extra in ([], ["--arch", "90"], ["--metadata", str(tmp_path / "none.json")]):
        _fails([str(tmp_path / "rand.cubin"), "-o", str(tmp_path / "o"), *extra], E.InputKindError, "not a cubin",
               "pass the .cubin Triton wrote")
    (tmp_path / "k.ptx.cubin").write_text(".version 8.4\n.target sm_90a\n")
    _fails([str(tmp_path / "k.ptx.cubin"), "-o", str(tmp_path / "o")], E.InputKindError, "rename it to k.ptx.ptx")
    run([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "ref"), "--arch", "90", "-q"])  # the installed Triton's
    shutil.copy(tmp_path / "ref" / "add" / "add.sm_90a.cubin", tmp_path / "k.cubin")
    _fails([str(tmp_path / "k.cubin"), "-o", str(tmp_path / "o")], E.MissingMetadataError, "keep k.json beside it")
    meta = {"name": "add", "num_warps": 4, "num_ctas": 1, "cluster_dims": [1, 1, 1], "shared": 0, "tmem_size": 0,
            "global_scratch_size": 0, "global_scratch_align": 1}  # no "target": the cubin's ELF header says sm_90a
    (tmp_path / "k.json").write_text(json.dumps(meta))
    run([str(tmp_path / "k.cubin"), "--signature", ADD_SIG, "-o", str(tmp_path / "o"), "-q"])
    variants = json.loads((tmp_path / "o" / "add" / "metadata.json").read_text())["variants"]
    assert [v["target"]["arch"] for v in variants] == ["sm_90a"]


def test_missing_and_unknown_inputs(tmp_path: Path) -> None:
    _fails([str(tmp_path / "nope.ttir"), "-o", str(tmp_path)], E.InputError, "no such file")
    (tmp_path / "k.cu").write_text("")
    _fails([str(tmp_path / "k.cu"), "-o", str(tmp_path)], E.InputError, ".ttgir")


def test_stop_after_a_stage_before_the_input(ir90: Path, tmp_path: Path) -> None:
    _fails([str(ir90 / "add.ptx"), "-o", str(tmp_path), "--stop-after", "ttgir"], E.UsageError, "already a .ptx")


def test_ttgir_option_contradiction(ir90: Path, tmp_path: Path) -> None:
    _fails([str(ir90 / "add.ttgir"), "-o", str(tmp_path), "--num-warps", "8"], E.OptionError, "ttg.num-warps = 4")


def test_unknown_option(tmp_path: Path) -> None:
    _fails([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "80", "--option", "num_wraps=8"],
           E.OptionError, "num_wraps", "num_warps")


@pytest.mark.parametrize("doc, needle", [
    ("{", "not valid JSON"),
    ('{"kernels": {}}', '"kernels" list'),
    ('{"kernels": [{"source": "kernels/vector_add.py", "kernal": "add"}]}', "kernal"),
    ('{"kernels": [{"source": "kernels/nope.py", "kernel": "add"}]}', "no such file"),
    ('{"arch": [70], "kernels": []}', "80,86,89,90,100"),
])
def test_bad_spec_file(tmp_path: Path, doc: str, needle: str) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(doc)
    _fails(["--spec", str(spec), "-o", str(tmp_path / "o")], E.SpecError, needle)


def test_several_failures_are_all_reported(tmp_path: Path) -> None:
    with pytest.raises(tmlr_build.BuildFailedError) as info:
        run([f"{EXAMPLES}/kernels/launch_latency.py:a", f"{EXAMPLES}/kernels/launch_latency.py:b",
             "-o", str(tmp_path), "--arch", "80", "-q"])
    assert len(info.value.errors) == 2
    assert all(isinstance(e, E.KernelNotFoundError) for e in info.value.errors)


@pytest.mark.parametrize("argv, status, needle", [
    (["--bogus-flag", "-o", "x"], 2, "unrecognized arguments"),
    ([ADD, "--signature", ADD_SIG, "-o", "{tmp}", "--arch", "70"], 2, "--arch 70 is not supported"),
    ([f"{EXAMPLES}/kernels/vector_add.py:nope", "-o", "{tmp}", "--arch", "80"], 1, "no @triton.jit kernel"),
    (["-o", "{tmp}"], 2, "nothing to build"),
    ([ADD, "-o", "{tmp}", "--arch", "80"], 2, "--signature is missing"),  # a usage error, as a missing --arch is
    ([ADD, "--signature", ADD_SIG, "-o", "{tmp}"], 2, "pass --arch"),
])
def test_main_prints_a_message_and_exits_non_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   argv: list[str], status: int, needle: str) -> None:
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == status
    err = capsys.readouterr().err
    assert err.startswith("tmlr-build: error: ") and needle in err
    assert "Traceback" not in err


def test_a_bare_run_shows_the_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: tmlr-build [-h] -o OUT") and "tmlr-build: error: nothing to build" in err


def test_version_names_the_triton_and_each_ptxas_a_build_would_use(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"tmlr-build {tmlr_build.__version__}"
    assert lines[1].startswith(f"Triton {check_triton_version()} (")
    ptxas = [line for line in lines if line.startswith("ptxas ")]
    assert ptxas and "for --arch" in ptxas[0]
    assert sorted(int(a) for line in ptxas for a in line.rsplit("for --arch ", 1)[1].rstrip(")").split(",")) \
        == [80, 86, 89, 90, 100]


def test_version_without_triton_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from tmlr_build.cli import version_text

    monkeypatch.setattr("tmlr_build.common.triton_check.installed_triton_version", lambda: None)
    line = version_text().splitlines()[1]
    assert line.startswith("Triton: Triton is not installed; tmlr-build needs one of 3.3,"), line
    assert "pip install 'triton>=3.3.1,<3.10'" in line, line


def test_json_reports_what_was_written_or_each_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "80", "-q", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["exit_status"] == 0 and doc["written"] == [str(tmp_path / "add")]
    assert doc["warnings"] == [] and doc["stopped_after"] is None
    assert main([f"{EXAMPLES}/kernels/vector_add.py:nope", "-o", str(tmp_path), "--arch", "80", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert (doc["ok"], doc["exit_status"], doc["errors"][0]["type"]) == (False, 1, "KernelNotFoundError")


def test_all_errors_are_tmlr_errors() -> None:
    import tmlr_runtime

    assert {n for n in tmlr_build.__all__ if n.endswith("Error")} == set(E.ERROR_CLASSES)  # every one exported
    for cls in E.ERROR_CLASSES.values():
        assert issubclass(cls, tmlr_runtime.TmlrError)
        assert str(cls("why")) == "why"  # built from the message alone (pickled back from workers too)


@pytest.mark.parametrize("option", ["arch=sm80", "extern_libs=1", "supported_fp8_dtypes=1"])
def test_options_derived_from_the_arch_cannot_be_set(tmp_path: Path, option: str) -> None:
    _fails([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "80", "--option", option],
           E.OptionError, "follow from --arch")


def test_bad_option_value_is_a_clear_error(tmp_path: Path) -> None:
    _fails([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "80", "--num-warps", "3"],
           E.OptionError, "num_warps must be a power of 2")
    _fails([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "80", "--jobs", "0"], E.UsageError, "--jobs")


def test_string_and_tuple_options(tmp_path: Path) -> None:
    run([ADD, "--signature", ADD_SIG, "-o", str(tmp_path), "--arch", "80", "--option", "default_dot_input_precision=ieee",
         "--option", "allowed_dot_input_precisions=tf32,ieee", "--maxnreg", "128", "--no-fp-fusion", "-q"])
    options = json.loads((tmp_path / "add" / "metadata.json").read_text())["variants"][0]["provenance"]["options"]
    assert options["default_dot_input_precision"] == "ieee" and options["allowed_dot_input_precisions"] == ["tf32", "ieee"]
    assert options["maxnreg"] == 128 and options["enable_fp_fusion"] is False


def test_cubin_import_checks_that_metadata_and_cubin_belong_together(tmp_path: Path) -> None:
    run([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "ref"), "--arch", "90", "-q"])  # the installed Triton's
    shutil.copy(tmp_path / "ref" / "add" / "add.sm_90a.cubin", tmp_path / "k.cubin")
    registers = json.loads((tmp_path / "ref" / "add" / "metadata.json").read_text())["variants"][0]["resources"]
    meta = {"name": "matmul", "target": {"backend": "cuda", "arch": 90, "warp_size": 32}, "num_warps": 4,
            "num_ctas": 1, "cluster_dims": [1, 1, 1], "shared": 0, "tmem_size": 0, "global_scratch_size": 0,
            "global_scratch_align": 1}
    (tmp_path / "k.json").write_text(json.dumps(meta))
    _fails([str(tmp_path / "k.cubin"), "--signature", ADD_SIG, "-o", str(tmp_path / "o")], E.InputError,
           "has no kernel 'matmul'", "add")
    (tmp_path / "k.json").write_text(json.dumps(dict(meta, name="add")))
    run([str(tmp_path / "k.cubin"), "--signature", ADD_SIG, "-o", str(tmp_path / "o"), "-q"])
    doc = json.loads((tmp_path / "o" / "add" / "metadata.json").read_text())
    assert doc["variants"][0]["resources"] == {"registers": registers["registers"]}
    # the parameter sizes ptxas recorded must be the ones the artifact describes (here n is no i64)
    _fails([str(tmp_path / "k.cubin"), "--signature", "*fp32:16, *fp32:16, *fp32:16, i64, 1024", "-o",
            str(tmp_path / "o2")], E.CompileError, "bytes, but the artifact would describe", "[8, 8, 8, 8, 8")
    (tmp_path / "k.cubin").write_bytes(b"not an elf")
    _fails([str(tmp_path / "k.cubin"), "--signature", ADD_SIG, "-o", str(tmp_path / "o")], E.InputError, "not a cubin")


def test_signature_for_an_ir_file_must_match_its_function(ir90: Path, tmp_path: Path) -> None:
    named = release_in_range(API.version, ">=3.5")  # the IR records the kernel's parameter names
    _fails([str(ir90 / "add.ttgir"), "--signature", "*fp16:16, *fp32:16, *fp32:16, i32, 1024", "-o", str(tmp_path)],
           E.SignatureError, f"{'x_ptr' if named else 'arg0'} is *fp16:16 in the signature but *fp32:16 in the IR")
    _fails([str(ir90 / "add.ttgir"), "--signature", "*fp32:16, *fp32:16, i32, 1024", "-o", str(tmp_path)],
           E.SignatureError, "3 runtime parameters", "4")
    renamed = [str(ir90 / "add.ttgir"), "--signature", ADD_SIG, "--arg-names", "a,b,c,n,BLOCK", "-o", str(tmp_path)]
    if named:  # names the IR records are the kernel's: another is a mistake (e.g. a constexpr misplaced)
        _fails(renamed, E.RecordMismatchError, "runtime parameter 0 is 'a' in --arg-names but 'x_ptr' in the IR")
        return
    run(renamed + ["-q"])
    doc = json.loads((tmp_path / "add" / "metadata.json").read_text())
    assert [p["name"] for p in doc["signature"]] == ["a", "b", "c", "n", "BLOCK"]


# On PYTHONPATH: makes multiprocessing's forkserver (tmlr-build's compile server) wait 3 s before it
# imports Triton, so that a Ctrl-C lands while tmlr-build waits for its first worker.
_SLOW_SERVER = ("import time\n"
                "if b'multiprocessing.forkserver' in open('/proc/self/cmdline', 'rb').read():\n"
                "    time.sleep(3)\n")


@pytest.mark.parametrize("sigint", ["default", "ignored"])
@pytest.mark.parametrize("when", ["server-importing", "compile-running"])
def test_interrupt_leaves_no_worker_or_work_directory(tmp_path: Path, when: str, sigint: str) -> None:
    # "ignored": started with SIGINT ignored, as a script's background job is (or under a runner that
    # does so); Python then raises no KeyboardInterrupt unless the program asks for it.
    import signal
    import subprocess
    import sys
    import time

    started = tmp_path / "worker.pid"
    (tmp_path / "slow.py").write_text(f"import os, time\nopen({str(started)!r}, 'w').write(str(os.getpid()))\n"
                                      "time.sleep(60)\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    if when == "server-importing":
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "sitecustomize.py").write_text(_SLOW_SERVER)
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    disposition = signal.SIG_IGN if sigint == "ignored" else signal.SIG_DFL  # whatever pytest runs with
    proc = subprocess.Popen([sys.executable, "-m", "tmlr_build", f"{tmp_path}/slow.py:k", "-o", str(tmp_path / "o"),
                             "--arch", "80"], env=env, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2],
                            preexec_fn=lambda: signal.signal(signal.SIGINT, disposition))
    deadline = time.monotonic() + 30
    if when == "server-importing":  # tmlr-build has made the first job's work directory: it waits for the worker
        while not any(p.name.startswith("tmlr-build-") for p in scratch.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.02)
    else:  # the worker runs the kernel file's sleep
        while not (started.is_file() and started.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    assert not any(p.name.startswith("tmlr-build-") for p in scratch.iterdir())
    if when == "server-importing":
        assert not started.exists()
    else:  # killed and reaped before tmlr-build exits
        assert not os.path.exists(f"/proc/{started.read_text()}")


@pytest.mark.parametrize("name", ["add.v2", "out/add", "../add", "2add", "add-1", ""])
def test_bad_artifact_name_is_refused_when_parsing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  name: str) -> None:
    # It names the artifact folder, its cubin files and metadata.json's "name" (schema: an identifier).
    assert main([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "o"), "--arch", "80", "--name", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tmlr-build: error: argument --name:") and "ASCII letters, digits and '_'" in err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("entry", [{"kernel": "add", "name": "add.v2"}, {"kernel": "add/x"}])
def test_bad_name_in_a_spec_is_a_spec_error(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                            entry: dict[str, str]) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kernels": [{"source": f"{EXAMPLES}/kernels/vector_add.py", **entry}]}))
    _fails(["--spec", str(spec), "-o", str(tmp_path / "o"), "--arch", "80"], E.SpecError, "kernels[0]",
           "ASCII letters, digits and '_'")
    assert main(["--spec", str(spec), "-o", str(tmp_path / "o"), "--arch", "80"]) == 2
    _fails([f"{EXAMPLES}/kernels/vector_add.py:a.b", "-o", str(tmp_path / "o"), "--arch", "80"], E.UsageError,
           "kernel 'a.b'", "e.g. 'a_b'")


@pytest.mark.parametrize("stage", ["llir", "ptx"])
def test_lowered_ir_of_another_triton_release_is_refused(ir90: Path, tmp_path: Path, stage: str) -> None:
    # a .llir/.ptx/.cubin has its release's parameter list (hidden pointers) built in
    from tmlr_build.common.triton_check import TESTED
    from triton_facts import API

    other = next(v for v in TESTED if not API.same_release(v))
    for ext in (stage, "json", "tmlr.json"):
        shutil.copy(ir90 / f"add.{ext}", tmp_path / f"add.{ext}")
    meta = json.loads((tmp_path / "add.json").read_text())
    (tmp_path / "add.json").write_text(json.dumps(dict(meta, triton_version=other)))
    _fails([str(tmp_path / f"add.{stage}"), "-o", str(tmp_path / "o")], E.TritonReleaseMismatchError,
           f"was made by Triton {other}", "--python")
