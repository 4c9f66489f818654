"""tmlr-build --split-dump: splitting an MLIR dump of the installed Triton and building from the split files.

Runs under every supported release (3.3-3.9): the dump headers changed in 3.8, the pipeliner writes
its own dumps into the log from 3.8, make_llir's first pass moved in 3.5; see docs/debug-loop.md.
Gluon kernels' dumps: tests/build/test_gluon.py.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tmlr_build.compile import ptxas
from tmlr_build.common.arch import Target, parse_arch_list
from tmlr_build.cli import main
from tmlr_build.passdump.dump_resume import build_from_dump
from tmlr_build.passdump.split_dump import split_dump
from tmlr_build.common.errors import InputError, TritonReleaseMismatchError
from triton_facts import API, committed_triton_only

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_COMPILE = f"""
import sys; sys.path.insert(0, {os.path.join(ROOT, 'examples', 'kernels')!r})
import triton
from triton.backends.compiler import GPUTarget
from matmul import matmul
sig = {{n: "*fp16" for n in ("a_ptr", "b_ptr", "c_ptr")}}
sig.update({{n: "i32" for n in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}})
sig.update({{n: "constexpr" for n in ("BM", "BN", "BK")}})
src = triton.compiler.ASTSource(fn=matmul, signature=sig, constexprs={{"BM": 64, "BN": 64, "BK": 32}},
                                attrs={{(i,): [["tt.divisibility", 16]] for i in range(9)}})
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={{"num_warps": 4, "num_stages": 2}})
open(sys.argv[1], "w").write(k.asm["ptx"])
"""


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, bytes]:
    d = tmp_path_factory.mktemp("dump")
    env = {**os.environ, "MLIR_ENABLE_DUMP": "1", "MLIR_DUMP_PATH": str(d / "d.log"),
           "TRITON_CACHE_DIR": str(d / "cache")}
    subprocess.run([sys.executable, "-c", _COMPILE, str(d / "ref.ptx")], env=env, check=True)
    assert main(["--split-dump", str(d / "d.log"), "-o", str(d / "split"), "-q"]) == 0
    # Triton's own PTX through tmlr's ptxas step: the same bytes as Triton's cubin but for the
    # source file names, which tmlr makes machine-independent (tmlr_build/compile/source_names.py)
    options = SimpleNamespace(enable_fp_fusion=True)  # what assemble reads of Triton's CUDAOptions
    reference = ptxas.assemble((d / "ref.ptx").read_text(), Target.from_capability(90), options, True, "ref").cubin
    return str(d / "split"), reference


def test_index_records_stage_and_position(dump: tuple[str, bytes]) -> None:
    split, _ = dump
    with open(os.path.join(split, "index.json")) as f:
        passes = json.load(f)["passes"]
    # Triton dumps before each pass; from 3.8 the pipeliner adds its steps' output ("after")
    assert all(p["position"] == "before" for p in passes if not p["internal"])
    stages = [p["stage"] for p in passes]
    assert stages == sorted(stages, key=["ttir", "ttgir", "llir-lowering"].index)
    first_ttgir = next(p for p in passes if p["stage"] == "ttgir")
    assert first_ttgir["pass_arg"] == "convert-triton-to-tritongpu"
    first_llir = next(p for p in passes if p["stage"] == "llir-lowering")
    # mma-lowering starts make_llir in 3.3-3.4; 3.5 moved it to the end of make_ttgir
    assert first_llir["pass_arg"] == ("triton-nvidia-mma-lowering" if API.release in ("3.3", "3.4")
                                      else "tritongpu-combine-tensor-select-and-if")
    assert [p["pass_arg"] for p in passes if p["internal"]] == (["LowerLoops", "ExpandLoops"]
                                                                 if API.release in ("3.8", "3.9") else [])
    assert not all(p["buildable"] for p in passes)  # the inliner's per-function canonicalize dumps
    for p in passes:
        with open(os.path.join(split, p["file"])) as f:
            assert "// -----// IR Dump" not in f.read()  # one dump per file, even for "@zeros____(0, 0)..." headers


def _passes(split: str) -> list[dict]:
    with open(os.path.join(split, "index.json")) as f:
        return json.load(f)["passes"]


def test_every_resumable_file_builds(dump: tuple[str, bytes], tmp_path) -> None:
    split, reference = dump
    same, differ, refused = [], [], []
    for p in _passes(split):
        path = os.path.join(split, p["file"])
        try:
            build_from_dump(path, str(tmp_path / p["file"]), parse_arch_list("90"),
                            {"num_warps": 4, "num_stages": 2}, name="matmul")
        except InputError:
            refused.append(p["file"])
            continue
        cubin = (tmp_path / p["file"] / "matmul" / "matmul.sm_90a.cubin").read_bytes()
        (same if cubin == reference else differ).append(p["file"])
    # Every file whose remaining passes are re-run (ttgir stage, finished TTIR/TTGIR) is byte-identical.
    for p in _passes(split):
        if (p["stage"] == "ttgir" and not p["internal"]) or (p["stage"] == "llir-lowering" and p["file"] not in refused):
            assert p["file"] in same, p["file"]
    assert all(p["file"] in refused for p in _passes(split) if p["internal"])
    pre_llvm = next(p["file"] for p in _passes(split) if p["pass_arg"] == "convert-scf-to-cf")
    assert pre_llvm in same  # still TTGIR: resumed, not refused
    # Mid-TTIR files re-run all of make_ttir (not only the rest): a valid cubin, other bytes.
    assert all(_entry_stage(split, f) == "ttir" for f in differ), differ
    assert all(_entry_stage(split, f) in ("ttir", "llir-lowering") or _internal(split, f) for f in refused), refused


def _entry_stage(split: str, file: str) -> str:
    return next(p["stage"] for p in _passes(split) if p["file"] == file)


def _internal(split: str, file: str) -> bool:
    return next(p["internal"] for p in _passes(split) if p["file"] == file)


@pytest.mark.gpu
def test_resumed_matmul_runs(dump: tuple[str, bytes], tmp_path) -> None:
    import torch
    import tmlr_runtime as tr

    split, _ = dump
    mid = next(p["file"] for p in _passes(split) if p["pass_arg"] == "tritongpu-pipeline")  # mid-ttgir
    build_from_dump(os.path.join(split, mid), str(tmp_path / "out"), parse_arch_list("90"),
                    {"num_warps": 4, "num_stages": 2}, name="matmul")
    k = tr.Kernel.load(str(tmp_path / "out" / "matmul"))
    M = N = K = 256
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    k[(M // 64, N // 64)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=1e-1, rtol=1e-2)


# ---- the command line: tmlr-build DIR/NN-Pass.mlir, --dump-passes ----

_MATMUL_SIG = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32"


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tmlr_build", *argv], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})})


def _file(split: str, pass_arg: str, nth: int = 0) -> str:
    return os.path.join(split, [p["file"] for p in _passes(split) if p["pass_arg"] == pass_arg][nth])


@pytest.mark.parametrize("pass_arg", ["tritongpu-pipeline", "convert-triton-to-tritongpu", "convert-scf-to-cf"])
def test_cli_builds_a_split_dump_file(dump: tuple[str, bytes], tmp_path, pass_arg: str) -> None:
    # mid-ttgir (only the remaining passes run), the finished TTIR, the last file that is still TTGIR
    split, reference = dump
    leak = tmp_path / "leak.log"  # an exported dump setting reaches neither the compile nor make_ttgir's child
    done = _cli(_file(split, pass_arg), "-o", str(tmp_path), "--arch", "90", "--num-warps", "4", "--num-stages", "2",
                env={"MLIR_ENABLE_DUMP": "1", "MLIR_DUMP_PATH": str(leak)})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "matmul" / "matmul.sm_90a.cubin").read_bytes() == reference
    assert not leak.exists()


def test_cli_refuses_dump_files_it_cannot_resume(dump: tuple[str, bytes], tmp_path) -> None:
    split, _ = dump
    per_function = next(p["file"] for p in _passes(split) if not p["buildable"])
    for path, needle in [(_file(split, "inline"), "before the inliner"),
                         (os.path.join(split, per_function), "not a module"),
                         (_file(split, "convert-triton-gpu-to-llvm"), "LLVM dialect")]:
        done = _cli(path, "-o", str(tmp_path), "--arch", "90")
        assert done.returncode == 1 and needle in done.stderr, done.stderr
        assert done.stderr.startswith("tmlr-build: error: ") and "Traceback" not in done.stderr


def test_cli_mlir_without_index_or_with_other_inputs(dump: tuple[str, bytes], tmp_path) -> None:
    split, _ = dump
    lone = tmp_path / "k.mlir"
    shutil.copy(_file(split, "tritongpu-pipeline"), lone)
    done = _cli(str(lone), "-o", str(tmp_path / "o"))
    assert done.returncode == 1 and "no index.json" in done.stderr and "--split-dump" in done.stderr, done.stderr
    done = _cli(_file(split, "tritongpu-pipeline"), _file(split, "cse"), "-o", str(tmp_path / "o"))
    assert done.returncode == 2 and "only SRC" in done.stderr, done.stderr


def test_cli_edited_dump_file_that_does_not_parse(dump: tuple[str, bytes], tmp_path) -> None:
    split, _ = dump
    edited = tmp_path / "split"
    edited.mkdir()
    shutil.copy(os.path.join(split, "index.json"), edited)
    mid = _file(split, "tritongpu-pipeline")
    with open(mid) as f:
        (edited / os.path.basename(mid)).write_text(f.read().replace("ttng.warp_group_dot ", "ttng.bogus_dot ", 1))
    done = _cli(str(edited / os.path.basename(mid)), "-o", str(tmp_path / "o"), "--num-stages", "2")
    assert done.returncode == 1 and "'ttng.bogus_dot' is unknown" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_dump_passes_writes_the_log_in_the_worker(dump: tuple[str, bytes], tmp_path) -> None:
    split, _ = dump
    log = tmp_path / "logs" / "d.log"
    args = ("examples/kernels/matmul.py:matmul", "--signature", _MATMUL_SIG, "--num-warps", "4", "--num-stages", "2",
            "--arch", "90")
    done = _cli(*args, "-o", str(tmp_path / "o"), "--dump-passes", str(log))
    assert done.returncode == 0, done.stderr
    plain = _cli(*args, "-o", str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.stderr
    # the dump changes nothing: the same bytes as the same build without it
    cubin = "matmul/matmul.sm_90a.cubin"
    assert (tmp_path / "o" / cubin).read_bytes() == (tmp_path / "plain" / cubin).read_bytes()
    assert main(["--split-dump", str(log), "-o", str(tmp_path / "split"), "-q"]) == 0
    ours = [(p["pass_arg"], p["stage"]) for p in _passes(str(tmp_path / "split"))]
    assert ours == [(p["pass_arg"], p["stage"]) for p in _passes(split)]  # the same passes as triton.compile's


def test_dump_passes_needs_one_compile(tmp_path) -> None:
    done = _cli("examples/kernels/matmul.py:matmul", "--signature", _MATMUL_SIG, "-o", str(tmp_path),
                "--arch", "80,90", "--dump-passes", str(tmp_path / "d.log"))
    assert done.returncode == 2 and "one SRC and one --arch" in done.stderr, done.stderr


_MODULE = 'module attributes {"ttg.num-warps" = 4 : i32} {\n}\n'  # TTGIR (TTIR has no ttg.* attributes)
_OLD = "// -----// IR Dump Before {name} ({arg}) ('{op}' operation{at}) //----- //\n"
_NEW = "// -----// IR Dump Before {name}: {arg}{opts} ('{op}' operation{at}) //----- //\n"
_LOG = [("Inliner", "inline", "", "builtin.module", ""), ("Canonicalizer", "canonicalize", "{max-iterations=10 top-down=true}",
         "tt.func", ": @zeros____(0, 0)cconstexpr_64_"), ("ConvertTritonToTritonGPU", "convert-triton-to-tritongpu",
         "{num-ctas=1 num-warps=4 target=cuda:90}", "builtin.module", ""), ("TritonGPUPipeline", "tritongpu-pipeline",
         "{num-stages=2}", "builtin.module", ""), ("MMALowering", "triton-nvidia-mma-lowering", "", "builtin.module", ""),
        ("CombineTensorSelectAndIf", "tritongpu-combine-tensor-select-and-if", "", "builtin.module", ""),
        ("AllocateWarpGroups", "tritongpu-allocate-warp-groups", "", "builtin.module", "")]


@pytest.mark.parametrize("form", ["3.3-3.7", "3.8+"])
def test_split_reads_both_header_forms_and_finds_the_stages(tmp_path, form: str) -> None:
    # Without a Triton of that form: the log is split from its text alone
    text = ""
    for i, (name, arg, opts, op, at) in enumerate(_LOG):
        header = _OLD.format(name=name, arg=arg, op=op, at=at) if form == "3.3-3.7" else _NEW.format(
            name=name + "Pass", arg=arg, opts=opts, op=op, at=at)
        text += header + ("module {\n}\n" if i < 2 else _MODULE) + "\n"  # TTIR before convert-triton-to-tritongpu
        if arg == "tritongpu-pipeline" and form == "3.8+":  # the pipeliner's own dumps, inside its entry
            text += "// -----// SoftwarePipeliner internal IR Dump After: LowerLoops\n" + _MODULE + "\n"
    (tmp_path / "d.log").write_text("// unrelated line\n" + text)
    entries = split_dump(str(tmp_path / "d.log"), str(tmp_path / "split"))
    got = [(e.pass_arg, e.stage, e.buildable, e.internal) for e in entries]
    internal = [("LowerLoops", "ttgir", False, True)] if form == "3.8+" else []
    assert got == [("inline", "ttir", True, False), ("canonicalize", "ttir", False, False),
                   ("convert-triton-to-tritongpu", "ttgir", True, False), ("tritongpu-pipeline", "ttgir", True, False),
                   *internal, ("triton-nvidia-mma-lowering", "llir-lowering", True, False),
                   ("tritongpu-combine-tensor-select-and-if", "llir-lowering", True, False),
                   ("tritongpu-allocate-warp-groups", "llir-lowering", True, False)]
    pipeline = next(e.file for e in entries if e.pass_arg == "tritongpu-pipeline")
    assert (tmp_path / "split" / pipeline).read_text() == _MODULE  # cut before the pipeliner's own dump
    assert all(e.position == ("after" if e.internal else "before") for e in entries)


@pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION is unset")  # 3.9's parse_options, in this process
def test_every_dumped_ttgir_pass_is_one_the_resume_sees(dump: tuple[str, bytes]) -> None:
    # Resuming counts make_ttgir's add_* calls, so it must see every one: each top-level pass of the
    # dump is matched in order by a recorded call (3.4+'s nvgpu-warp-specialization comes from
    # nvidia.passes.hopper); only the canonicalize pipelines nested inside a pass are left over.
    from tmlr_build.compile.resume_ttgir import stage_calls

    split, _ = dump
    ttgir = [p for p in _passes(split) if p["stage"] == "ttgir" and not p["internal"]]
    flat = [name for call in stage_calls(os.path.join(split, ttgir[1]["file"]), "ttgir", 2) for name in call]
    j, left = 0, []
    for p in ttgir:
        if j < len(flat) and flat[j] == p["pass_arg"]:
            j += 1
        else:
            left.append(p["pass_arg"])
    assert j == len(flat) and set(left) == {"canonicalize"}, (flat[j:], left)
    assert ("nvgpu-warp-specialization" in flat) == (API.release != "3.3")


def test_dump_of_another_pipeline_is_refused(dump: tuple[str, bytes], tmp_path) -> None:
    # A dump whose make_ttgir ran other passes (another Triton release, other options): which of the
    # installed Triton's passes already ran cannot be told, so resuming mid-ttgir is refused.
    split, _ = dump
    other = tmp_path / "split"
    other.mkdir()
    passes = _passes(split)
    mid = next(p for p in passes if p["pass_arg"] == "tritongpu-pipeline")
    shutil.copy(os.path.join(split, mid["file"]), other)
    pipeline = [p for p in passes if p["stage"] == "ttgir" and p["pass_arg"] == "tritongpu-coalesce"]
    for p in pipeline:
        p["pass_arg"] = "tritongpu-some-other-pass"
    (other / "index.json").write_text(json.dumps({"passes": passes}))
    with pytest.raises(TritonReleaseMismatchError, match=r"other passes than the installed Triton .*tritongpu-coalesce"):
        build_from_dump(str(other / mid["file"]), str(tmp_path / "out"), parse_arch_list("90"),
                        {"num_warps": 4, "num_stages": 2}, name="matmul")
